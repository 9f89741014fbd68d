// Host side of the TF32 hc_prenorm GEMM (deep_gemm/include/deep_gemm/impls/sm90_tf32_hc_prenorm_gemm.cuh,
// which states the arithmetic and the split layout). Torch-free: the torch layer (csrc/apis/hyperconnection.cpp)
// validates and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>

#include "common.hpp"

namespace deep_gemm::kernels {

inline constexpr int kHcBlockM = 128, kHcBlockK = 64, kHcThreads = 288, kHcMaxN = 64;
// Shared memory per CTA: two CTAs fit an SM (228 KB, 1 KB reserved per CTA), so one CTA's pipeline
// ramp overlaps the other's streaming.
inline constexpr int kHcSmemPerCta = 113 * 1024;
inline constexpr int kHcMaxStages = 8;
// A unit covers at least this many K blocks when the host splits a split further (fewer would spend more
// time in the pipeline ramp and the reduction than in streaming).
inline constexpr int kHcMinBlocksPerUnit = 4;

// What selects a compiled kernel.
struct HcPrenormConfig {
    int block_n = 24;  // n rounded up to 8
    int stages = 5;

    bool operator==(const HcPrenormConfig& o) const { return block_n == o.block_n and stages == o.stages; }
};

struct HcPrenormConfigHash {
    size_t operator()(const HcPrenormConfig& c) const { return std::hash<int>()(c.block_n * 64 + c.stages); }
};

// The launch shape of one call.
struct HcPrenormPlan {
    HcPrenormConfig config;
    int num_k_blocks = 0;  // ceil(k / 64)
    int reduce = 1;        // units per (m block, split) group; > 1 reduces through the split-K workspace
    int num_units = 0;     // the grid: m blocks x splits x reduce
    int smem_bytes = 0;
};

// Pure function of the shape and the SM count (unit-testable without a GPU). n in [1, 64], num_splits >= 1.
HcPrenormPlan plan_hc_prenorm(int m, int n, int k, int num_splits, int num_sms);

// The generated translation unit for one config (block size and dynamic shared memory filled in).
GemmKernelSource hc_prenorm_source(const HcPrenormConfig& config);

struct HcPrenormArgs {
    const void* a = nullptr;     // bf16 [m, k], unit column stride, rows a_row_stride elements apart
    int64_t a_row_stride = 0;
    const float* b = nullptr;    // fp32 [n, k], unit column stride
    int64_t b_row_stride = 0;
    float* d = nullptr;          // fp32 [S, m, n]: d[s * d_split_stride + i * d_row_stride + j]
    int64_t d_row_stride = 0, d_split_stride = 0;
    float* sqr_sum = nullptr;    // fp32 [S, m]: sqr_sum[s * s_split_stride + i]
    int64_t s_split_stride = 0;
    int m = 0, n = 0, k = 0;
    int num_splits = 1;
    int num_sms = 132;
    bool pdl = false;
    int device = 0;
    CUstream stream = nullptr;
};

// Builds/loads the kernel once per (device, config), then launches it on args.stream (m == 0: nothing).
void tf32_hc_prenorm_gemm(const HcPrenormArgs& args);

}  // namespace deep_gemm::kernels
