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

namespace deep_gemm::heuristics {

struct Sm90Fp8GemmConfig {
    int block_m = 128;
    int block_n = 128;
    int num_stages = 4;
    int group_n = 8;  // scheduler: N blocks per swizzle group

    int num_math_warpgroups() const { return block_m / 64; }
    int num_threads() const { return 128 + 128 * num_math_warpgroups(); }
    bool operator==(const Sm90Fp8GemmConfig&) const = default;
};

constexpr int kSm90Fp8BlockK = 128;
constexpr int kSm90Fp8MaxBlockN = 192;  // two FP32 accumulators of BLOCK_N/2 registers must fit 232 regs
constexpr int kSm90Fp8MaxStages = 10;
constexpr int kSm90Fp8MinStages = 3;

// Width (bytes) of the D staging swizzle: the widest of 128/64/32 that divides a BLOCK_N row of bf16.
inline int sm90_fp8_d_swizzle_bytes(int block_n) {
    const int row_bytes = block_n * 2;
    return row_bytes % 128 == 0 ? 128 : (row_bytes % 64 == 0 ? 64 : 32);
}

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
// a tile needs the max of: tensor-core time (8192 FP8 FLOP/clk/SM), shared-memory reads by wgmma
// (A and B per m64 instruction, 128 B/clk) and TMA loads into the SM (~64 B/clk/SM). Globally the
// loads must also pass L2 (~6 KB/clk) and the unique bytes HBM (~2.3 KB/clk).
inline double sm90_fp8_cost(int m, int n, int k, int num_sms, int block_m, int block_n) {
    const double num_kb = (k + kSm90Fp8BlockK - 1) / kSm90Fp8BlockK;
    const double tiles = double((m + block_m - 1) / block_m) * double((n + block_n - 1) / block_n);
    const double waves = std::ceil(tiles / num_sms);
    const double t_mma = double(block_m) * block_n / 32.0;
    const double t_smem = (block_m / 64.0) * (64.0 + block_n);
    const double t_load = (block_m + block_n) * 128.0 / 64.0;
    const double t_kb = std::max({t_mma, t_smem, t_load});
    const double t_tile = num_kb * t_kb + 400.0 + block_n * 2.0;  // + epilogue / pipeline ramp
    const double t_sm = waves * t_tile;
    const double l2_bytes = tiles * num_kb * (block_m + block_n) * 128.0;
    const double hbm_bytes = double(m) * k + double(n) * k + 2.0 * m * n;
    return std::max({t_sm, l2_bytes / 6144.0, hbm_bytes / 2300.0});
}

// Chooses block sizes (minimum modelled cost; ties go to the larger tile) and fills shared memory
// with pipeline stages.
inline Sm90Fp8GemmConfig choose_sm90_fp8_config(int m, int n, int k, int num_sms, int smem_limit) {
    Sm90Fp8GemmConfig best;
    double best_cost = -1.0;
    for (int block_m : {64, 128}) {
        if (block_m == 128 && m <= 64) continue;
        for (int block_n = 16; block_n <= kSm90Fp8MaxBlockN; block_n += 16) {
            const int stages = sm90_fp8_max_stages(block_m, block_n, smem_limit);
            if (stages < kSm90Fp8MinStages) continue;
            const double cost = sm90_fp8_cost(m, n, k, num_sms, block_m, block_n);
            // Strictly better by 1%, or equal within 1% with a larger tile.
            const bool better = best_cost < 0 || cost < best_cost * 0.99 ||
                                (cost <= best_cost * 1.01 && block_m * block_n > best.block_m * best.block_n);
            if (better) {
                best_cost = cost;
                best.block_m = block_m;
                best.block_n = block_n;
                best.num_stages = stages;
            }
        }
    }
    best.group_n = 8;
    return best;
}

inline std::string to_string(const Sm90Fp8GemmConfig& c) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "BLOCK_M=%d BLOCK_N=%d stages=%d group_n=%d threads=%d smem=%d", c.block_m,
                  c.block_n, c.num_stages, c.group_n, c.num_threads(),
                  sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages));
    return buf;
}

}  // namespace deep_gemm::heuristics
