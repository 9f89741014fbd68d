// Host side of the paged MQA-logits kernel (deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh,
// which states the arithmetic and the schedule). Torch-free: the torch layer (csrc/apis/paged_attention.cpp)
// validates, allocates the logits and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>

#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

// What selects a compiled kernel (everything else is a runtime argument).
struct PagedMqaConfig {
    int num_heads = 64;      // 32 or 64
    int next_n = 1;          // queries per batch: 1, 2 or 4 (the shared tile reads next_n * H columns as 4 pseudo-queries)
    bool lens_2d = false;    // context_lens [B, next_n] (per row) instead of [B]
    bool clean = false;      // write -inf outside each row's context
    bool bf16_logits = false;
    int block_kv = 64;       // kv rows per cache block: 64, or 32 (two blocks gathered into each 64-row tile)

    uint32_t key() const;
    bool operator==(const PagedMqaConfig& o) const { return key() == o.key(); }
};

struct PagedMqaConfigHash {
    size_t operator()(const PagedMqaConfig& c) const { return std::hash<uint32_t>()(c.key()); }
};

inline constexpr int kPagedMqaBlockKv = 64;   // kv rows per tile (a schedule unit); a cache block holds 64 or 32
inline constexpr int kPagedMqaSmallBlockKv = 32;
inline constexpr int kPagedMqaHeadDim = 128;  // FP8 bytes per q / kv row
inline constexpr int kPagedMqaStages = 8;     // kv pages in flight per SM (8 KB each)

// Math warpgroups of a config: two (taking pages in turns, one's QGMMAs overlapping the other's reduction) where
// their accumulators fit beside each other (N = next_n * H <= 128), else one. Threads: 128 per warpgroup + a TMA warp.
inline int paged_mqa_math_warpgroups(const PagedMqaConfig& c) { return c.next_n * c.num_heads <= 128 ? 2 : 1; }
inline int paged_mqa_threads(const PagedMqaConfig& c) { return 128 * paged_mqa_math_warpgroups(c) + 32; }

struct PagedMqaArgs {
    PagedMqaConfig config;
    const void* q = nullptr;             // e4m3 [B * next_n * H, 128] contiguous rows
    const void* kv_cache = nullptr;      // num_pages blocks of page_stride bytes: block_kv x 128 e4m3, then block_kv fp32
    int64_t page_stride = 0;
    int num_pages = 0;
    const float* weights = nullptr;      // [B * next_n, H] contiguous
    const int* context_lens = nullptr;   // [B] or [B, next_n] contiguous
    const int* block_table = nullptr;    // [B, table_width], row stride table_stride
    int table_width = 0, table_stride = 0;
    const int* schedule = nullptr;       // [num_sms + 1, 2]
    int schedule_sms = 0;                // the grid: schedule rows - 1
    void* logits = nullptr;              // [B * next_n, max_context_len], row stride logits_stride
    int64_t logits_stride = 0;
    int batch = 0, max_context_len = 0;
    int device = 0;
    CUstream stream = nullptr;
};

// Dynamic shared memory of a config (the generated source static_asserts the device layout agrees).
int paged_mqa_smem_bytes(const PagedMqaConfig& config);

// The generated translation unit for one config (name, symbol, code).
jit::KernelSource paged_mqa_logits_source(const PagedMqaConfig& config);

// Builds/loads the kernel once per (device, config), then launches it on args.stream.
void sm90_fp8_paged_mqa_logits(const PagedMqaArgs& args);

}  // namespace deep_gemm::kernels
