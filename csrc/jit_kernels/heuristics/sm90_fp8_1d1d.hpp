// Config choice for the SM90 FP8 1D1D GEMM (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh).
// Header-only and torch-free. The shared-memory formula mirrors Sm90Fp8Gemm1d1dLayout in the device
// header; every generated kernel source static_asserts that the two agree.
#pragma once

#include <cstdio>
#include <string>

#include "common.hpp"
#include "sm90_fp8_config.hpp"      // the FP8 block K and stage limits
#include "sm90_fp8_cost_model.hpp"  // sm90_fp8_cost

namespace deep_gemm::heuristics {

// A math thread holds fin + scratch accumulators (BLOCK_N / 2 registers each) and BLOCK_N / 4 B scales:
// 160 registers at BLOCK_N = 128, within the 232 of the register split with room for addressing.
constexpr int kSm90Fp8_1d1dMaxBlockN = 128;
// The widest tile a forced config (DG_FP8_1D1D_GEMM_CONFIG) may take: 176 columns still compile without local
// memory (fin + scratch 176 registers, 44 B scales; tests/cpp/test_kernel_fp8_1d1d_compile.cpp). Wider tiles
// are not measured yet, so the model keeps to 128.
constexpr int kSm90Fp8_1d1dMaxForcedBlockN = 176;

// Per stage: A and B tiles, BLOCK_M A scales, BLOCK_N B scales (padded to 128 bytes), two barriers. No
// D staging (the epilogue stores from registers).
inline int sm90_fp8_1d1d_smem_bytes(int block_m, int block_n, int num_stages) {
    const int sfb = (block_n * 4 + 127) / 128 * 128;
    return num_stages * (block_m * kSm90Fp8BlockK + block_n * kSm90Fp8BlockK + block_m * 4 + sfb + 2 * 8);
}

inline int sm90_fp8_1d1d_max_stages(int block_m, int block_n, int smem_limit) {
    return max_stages_that_fit(kSm90Fp8MaxStages, kSm90Fp8MinStages, smem_limit,
                               [&](int s) { return sm90_fp8_1d1d_smem_bytes(block_m, block_n, s); });
}

// Minimum modelled cost over BLOCK_M in {64, 128} x BLOCK_N in {16, 32, ..., 128}. The model is the 1D2D
// kernel's (sm90_fp8_cost, without pipelined promotion or multicast: this kernel has both only under a forced
// config, not measured yet), which
// covers waves, tensor-core time plus the promotion bubble, and load bandwidth; the 1D1D promotion does
// one more multiply per element and the FP32 output doubles the store bytes, which shifts all tiles alike.
// `multiples` (set_block_size_multiple_of) filters the candidates.
inline Sm90GemmConfig choose_sm90_fp8_1d1d_config(int m, int n, int k, int num_sms, int smem_limit,
                                                  BlockMultiples multiples = {}) {
    return choose_sm90_fp8_min_cost_tile(m, n, k, num_sms, kSm90Fp8_1d1dMaxBlockN, multiples,
                                         [&](int block_m, int block_n) {
                                             return sm90_fp8_1d1d_max_stages(block_m, block_n, smem_limit);
                                         });
}

inline std::string sm90_fp8_1d1d_to_string(const Sm90GemmConfig& c) {
    char buf[128];
    std::snprintf(buf, sizeof(buf),
                  "BLOCK_M=%d BLOCK_N=%d stages=%d group_n=%d pipelined=%d multicast=%d prefetch_c=%d threads=%d smem=%d",
                  c.block_m, c.block_n, c.num_stages, c.group_n, int(c.pipelined), c.multicast, c.prefetch_c, c.num_threads(),
                  sm90_fp8_1d1d_smem_bytes(c.block_m, c.block_n, c.num_stages));
    return buf;
}

}  // namespace deep_gemm::heuristics
