// Config limits of the SM90 FP8 1D2D GEMM (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh; the config
// itself is common.hpp's Sm90GemmConfig) and its shared-memory formula. Header-only and torch-free. The formula
// mirrors Sm90Fp8Gemm1d2dLayout in the device header; every generated kernel source static_asserts that the
// two agree. Which config a shape gets: sm90_fp8_cost_model.hpp.
#pragma once

#include <cstdio>
#include <string>

#include "common.hpp"

namespace deep_gemm::heuristics {

constexpr int kSm90Fp8BlockK = 128;
constexpr int kSm90Fp8MaxBlockN = 192;  // two FP32 accumulators of BLOCK_N/2 registers must fit 232 regs
constexpr int kSm90Fp8MaxBlockNPipelined = 128;  // fin + 2 scratch accumulators = 3 * BLOCK_N / 2 registers
// 256-row tiles: two waves' fin + one scratch = 3 * BLOCK_N / 2 registers as well (no pipelined promotion).
constexpr int kSm90Fp8MaxBlockN256 = 128;
// 192-row tiles: three math warpgroups with 152 registers each (512 threads): fin + scratch fit for
// BLOCK_N <= 128, fin + two scratch (pipelined) for BLOCK_N <= 80 (ptxas spills beyond; checked in SASS).
constexpr int kSm90Fp8MaxBlockN192 = 128;
constexpr int kSm90Fp8MaxBlockN192Pipelined = 80;
constexpr int kSm90Fp8MaxStages = 16;
constexpr int kSm90Fp8MaxSplitK = 16;
constexpr int kSm90Fp8MaxStagesRules = 10;  // the cap of the rule-based and legacy choices (as measured)
constexpr int kSm90Fp8MinStages = 3;

inline int sm90_fp8_num_threads(int block_m) { return 128 + 128 * (block_m == 256 ? 2 : block_m / 64); }

// Width (bytes) of the D staging swizzle: the widest of 128/64/32 that divides a BLOCK_N row of bf16.
inline int sm90_fp8_d_swizzle_bytes(int block_n) { return bf16_d_swizzle_bytes(block_n); }

// sf_gran_k: the scales' K granularity, 128 or 32 (block-32 scales: four A scales per row and stage).
inline int sm90_fp8_smem_bytes(int block_m, int block_n, int num_stages, int sf_gran_k = kSm90Fp8BlockK) {
    const int d = block_m * block_n * 2;
    const int sfa = block_m * 4 * (kSm90Fp8BlockK / sf_gran_k);
    const int per_stage = block_m * kSm90Fp8BlockK + block_n * kSm90Fp8BlockK + sfa + 2 * 8;
    return d + num_stages * per_stage;
}

inline int sm90_fp8_max_stages(int block_m, int block_n, int smem_limit, int cap = kSm90Fp8MaxStages,
                               int sf_gran_k = kSm90Fp8BlockK) {
    return max_stages_that_fit(cap, kSm90Fp8MinStages, smem_limit,
                               [&](int s) { return sm90_fp8_smem_bytes(block_m, block_n, s, sf_gran_k); });
}

inline std::string sm90_fp8_to_string(const Sm90GemmConfig& c, int sf_gran_k = kSm90Fp8BlockK) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "BLOCK_M=%d BLOCK_N=%d stages=%d group_n=%d pipelined=%d multicast=%d split_k=%d threads=%d smem=%d%s",
                  c.block_m, c.block_n, c.num_stages, c.group_n, int(c.pipelined), c.multicast, c.split_k,
                  c.num_threads(), sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages, sf_gran_k),
                  sf_gran_k == kSm90Fp8BlockK ? "" : " sf_gran_k=32");
    return buf;
}

}  // namespace deep_gemm::heuristics
