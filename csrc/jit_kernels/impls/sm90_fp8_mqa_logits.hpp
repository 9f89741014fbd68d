// Host side of the SM90 FP8 MQA-logits kernel (deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh,
// which states the arithmetic and the design). Torch-free: the torch layer (csrc/apis/attention.cpp)
// validates, allocates the logits and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>

#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

// What selects a compiled kernel (everything else is a runtime argument).
struct MqaLogitsConfig {
    int num_heads = 64;        // 32 or 64
    int head_dim = 128;        // 32, 64 or 128
    bool bf16_logits = false;  // else FP32
    bool compressed = false;   // column j - ks[i] (max_seqlen_k > 0) instead of column j
    bool clean = true;         // -inf outside [ks, ke); else those columns are not written

    uint32_t key() const;
    bool operator==(const MqaLogitsConfig& o) const { return key() == o.key(); }
};

struct MqaLogitsConfigHash {
    size_t operator()(const MqaLogitsConfig& c) const { return std::hash<uint32_t>()(c.key()); }
};

// Queries per CTA (N = queries x heads = 256 columns of the wgmma), kv ring depth, threads.
inline constexpr int kMqaQTileColumns = 256;
inline constexpr int kMqaStages = 8;
inline constexpr int kMqaThreads = 384;
inline int mqa_queries_per_block(int num_heads) { return kMqaQTileColumns / num_heads; }
// Dynamic shared memory of a config (the generated source static_asserts the kernel's layout against it).
int mqa_logits_smem_bytes(const MqaLogitsConfig& c);

struct MqaLogitsArgs {
    MqaLogitsConfig config;
    const void* q = nullptr;           // e4m3 [S, H, D], contiguous
    const void* kv = nullptr;          // e4m3 [S_kv, D], row stride kv_stride bytes (16-byte multiple)
    int64_t kv_stride = 0;
    const float* kv_scale = nullptr;   // [S_kv]
    const float* weights = nullptr;    // [S, H], row stride weights_stride elements
    int64_t weights_stride = 0;
    const int* ks = nullptr;           // [S]
    const int* ke = nullptr;           // [S]
    void* logits = nullptr;            // [S, num_cols] with row stride logits_stride elements
    int64_t logits_stride = 0;
    int seq_len = 0, seq_len_kv = 0;
    int num_cols = 0;                  // S_kv (dense) or max_seqlen_k (compressed)
    int device = 0;
    CUstream stream = nullptr;
};

// The generated translation unit for one config.
jit::KernelSource sm90_fp8_mqa_logits_source(const MqaLogitsConfig& config);

// Builds/loads the kernel once per (device, config), then launches it on args.stream.
void sm90_fp8_mqa_logits(const MqaLogitsArgs& args);

}  // namespace deep_gemm::kernels
