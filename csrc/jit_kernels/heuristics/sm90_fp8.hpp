// Config choice for the SM90 FP8 1D2D GEMM (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh).
// Header-only and torch-free. The shared-memory formula mirrors Sm90Fp8Gemm1d2dLayout in the device
// header; every generated kernel source static_asserts that the two agree.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"

namespace deep_gemm::heuristics {

struct Sm90Fp8GemmConfig {
    int block_m = 128;
    int block_n = 128;
    int num_stages = 4;
    int group_n = 8;  // scheduler: N blocks per swizzle group
    // Promotion overlap (kernel kPromoteMode): 0 = none; 1 = two scratch accumulators, K block kb+1's wgmmas
    // run while kb is promoted (BLOCK_N <= 128).
    int pipelined = 0;
    // TMA multicast over a 2-CTA cluster: 0 = off, 1 = the pair shares B (adjacent M blocks), 2 = the pair
    // shares A (adjacent N blocks).
    int multicast = 0;

    // 256-row tiles: two math warpgroups of 128 rows (two 64-row wgmma waves each).
    int num_math_warpgroups() const { return block_m == 256 ? 2 : block_m / 64; }
    int num_threads() const { return 128 + 128 * num_math_warpgroups(); }
    bool operator==(const Sm90Fp8GemmConfig&) const = default;
};

constexpr int kSm90Fp8BlockK = 128;
constexpr int kSm90Fp8MaxBlockN = 192;  // two FP32 accumulators of BLOCK_N/2 registers must fit 232 regs
constexpr int kSm90Fp8MaxBlockNPipelined = 128;  // fin + 2 scratch accumulators = 3 * BLOCK_N / 2 registers
// 256-row tiles: two waves' fin + one scratch = 3 * BLOCK_N / 2 registers as well (no pipelined promotion).
constexpr int kSm90Fp8MaxBlockN256 = 128;
constexpr int kSm90Fp8MaxStages = 10;
constexpr int kSm90Fp8MinStages = 3;

inline int sm90_fp8_num_threads(int block_m) { return 128 + 128 * (block_m == 256 ? 2 : block_m / 64); }

// Width (bytes) of the D staging swizzle: the widest of 128/64/32 that divides a BLOCK_N row of bf16.
inline int sm90_fp8_d_swizzle_bytes(int block_n) { return bf16_d_swizzle_bytes(block_n); }

inline int sm90_fp8_smem_bytes(int block_m, int block_n, int num_stages) {
    const int d = block_m * block_n * 2;
    const int per_stage = block_m * kSm90Fp8BlockK + block_n * kSm90Fp8BlockK + block_m * 4 + 2 * 8;
    return d + num_stages * per_stage;
}

inline int sm90_fp8_max_stages(int block_m, int block_n, int smem_limit) {
    int s = kSm90Fp8MaxStages;
    while (s >= kSm90Fp8MinStages && sm90_fp8_smem_bytes(block_m, block_n, s) > smem_limit) --s;
    return s;
}

// Rough cost in SM clocks of running the whole problem with tiles block_m x block_n. Per 128-K block
// a tile needs the max of: tensor-core time (8192 FP8 FLOP/clk/SM) plus, without the pipelined promotion,
// the FP32 promotion during which the tensor core idles (BLOCK_N/2 FFMA per thread, BLOCK_M/64 math warps
// per SM sub-partition, + wait latency); shared-memory reads by wgmma (A and B per m64 instruction,
// 128 B/clk); TMA loads into the SM (~64 B/clk/SM; a multicast operand counts half). Globally the loads
// must also pass L2 (~6 KB/clk; multicast halves the shared operand) and the unique bytes HBM (~2.3 KB/clk).
// multicast: 0 off, 1 = pair of M blocks shares B, 2 = pair of N blocks shares A (the pair's padding tile
// when the paired block count is odd is paid for).
inline double sm90_fp8_cost(int m, int n, int k, int num_sms, int block_m, int block_n, int pipelined = 0,
                            int multicast = 0) {
    const double num_kb = (k + kSm90Fp8BlockK - 1) / kSm90Fp8BlockK;
    double m_blocks = double((m + block_m - 1) / block_m), n_blocks = double((n + block_n - 1) / block_n);
    if (multicast == 1) m_blocks = 2.0 * std::ceil(m_blocks / 2.0);
    if (multicast == 2) n_blocks = 2.0 * std::ceil(n_blocks / 2.0);
    const double tiles = m_blocks * n_blocks;
    const double sms = multicast ? 2.0 * std::floor(num_sms / 2.0) : double(num_sms);
    const double waves = std::ceil(tiles / sms);
    const double bubble = pipelined ? 0.0 : (block_m / 64.0) * (block_n / 2.0) + 60.0;
    const double t_mma = double(block_m) * block_n / 32.0 + bubble;
    const double t_smem = (block_m / 64.0) * (64.0 + block_n);
    const double a_rows = multicast == 2 ? block_m / 2.0 : block_m;
    const double b_rows = multicast == 1 ? block_n / 2.0 : block_n;
    const double t_load = (a_rows + b_rows) * 128.0 / 64.0;
    const double t_kb = std::max({t_mma, t_smem, t_load});
    const double t_tile = num_kb * t_kb + 400.0 + block_n * 2.0;  // + epilogue / pipeline ramp
    const double t_sm = waves * t_tile * (multicast ? 1.02 : 1.0);  // cluster pairs wait for each other
    const double l2_bytes = tiles * num_kb * (a_rows + b_rows) * 128.0;
    const double hbm_bytes = double(m) * k + double(n) * k + 2.0 * m * n;
    return std::max({t_sm, l2_bytes / 6144.0, hbm_bytes / 2300.0});
}

// The first version's choice (DG_FP8_GEMM_CONFIG=legacy, for comparisons): minimum modelled cost over
// every tile, no pipelined promotion, no multicast.
inline Sm90Fp8GemmConfig choose_sm90_fp8_legacy_config(int m, int n, int k, int num_sms, int smem_limit) {
    Sm90Fp8GemmConfig best;
    double best_cost = -1.0;
    for (int block_m : {64, 128}) {
        if (block_m == 128 && m <= 64) continue;
        for (int block_n = 16; block_n <= kSm90Fp8MaxBlockN; block_n += 16) {
            const int stages = sm90_fp8_max_stages(block_m, block_n, smem_limit);
            if (stages < kSm90Fp8MinStages) continue;
            const double cost = sm90_fp8_cost(m, n, k, num_sms, block_m, block_n, 0, 0);
            if (is_better_tile(cost, block_m, block_n, best_cost, best.block_m, best.block_n)) {
                best_cost = cost;
                best.block_m = block_m;
                best.block_n = block_n;
                best.num_stages = stages;
                best.pipelined = 0;
                best.multicast = 0;
            }
        }
    }
    best.group_n = 8;
    return best;
}

// The default choice, set by config sweeps on the H200 (benchmarks/sweep_fp8_configs.py, 2026-12-02,
// TARGETS.md shapes): the pipelined promotion won or tied everywhere; 128x128 tiles won every M=4096
// shape and 128x64 tiles every M=128 shape (within 5% of the best where another tile won). 2-CTA
// multicast (after the fix that took a GPU-wide fence out of its release path): sharing A across N-block
// pairs won on the long-K shape (4096x7168x16384: 749.6 vs 775.5 us) and was within 1% or 1.5-4% slower
// on the shorter-K ones (the pair waits for its slower CTA once per K block, which long K loops amortise
// while halving A's L2 traffic). Rule: 128-wide N tiles once they give at least two waves of tiles, else
// 64-wide ones to spread a small problem over more SMs; BLOCK_M = 64 for M <= 64; A multicast for
// K >= 8192 when there are at least 8 M blocks and 2 N blocks. One row of 128-row tiles whose 64-wide N
// tiles would fill at most half the SMs (128x2112x7168, 128x4096x7168): 32-wide tiles with A multicast,
// twice the CTAs streaming B with A loaded once per pair (18.2 vs 19.8 us and 19.7 vs 21.0 us; at
// 128x7168x2048, 112 tiles of 64, they lose: 14.2 vs 10.8 us).
inline Sm90Fp8GemmConfig choose_sm90_fp8_config(int m, int n, int k, int num_sms, int smem_limit,
                                                bool legacy = false) {
    if (legacy) return choose_sm90_fp8_legacy_config(m, n, k, num_sms, smem_limit);
    Sm90Fp8GemmConfig config;
    config.block_m = m <= 64 ? 64 : 128;
    const long m_blocks = (m + config.block_m - 1) / config.block_m;
    const long tiles_128 = m_blocks * long((n + 127) / 128);
    config.block_n = tiles_128 >= 2L * num_sms ? 128 : 64;
    const bool narrow = m > 64 && m_blocks == 1 && 2L * ((n + 63) / 64) <= num_sms && n > 32 && num_sms >= 2;
    if (narrow) config.block_n = 32;
    config.num_stages = sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit);
    config.pipelined = 1;
    const long n_blocks = (n + config.block_n - 1) / config.block_n;
    config.multicast = (narrow || (k >= 8192 && m_blocks >= 8 && n_blocks >= 2 && num_sms >= 2)) ? 2 : 0;
    config.group_n = 8;
    return config;
}

inline std::string to_string(const Sm90Fp8GemmConfig& c) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "BLOCK_M=%d BLOCK_N=%d stages=%d group_n=%d pipelined=%d multicast=%d threads=%d smem=%d",
                  c.block_m, c.block_n, c.num_stages, c.group_n, int(c.pipelined), c.multicast, c.num_threads(),
                  sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages));
    return buf;
}

}  // namespace deep_gemm::heuristics
