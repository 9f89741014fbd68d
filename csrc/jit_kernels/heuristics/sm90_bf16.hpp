// Config choice for the SM90 BF16 GEMM (deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm.cuh).
// Header-only and torch-free. The shared-memory formula mirrors Sm90Bf16GemmLayout in the device header;
// every generated kernel source static_asserts that the two agree.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common.hpp"

namespace deep_gemm::heuristics {

constexpr int kSm90Bf16BlockK = 64;
constexpr int kSm90Bf16MaxBlockN = 256;
constexpr int kSm90Bf16MaxStages = 16;
constexpr int kSm90Bf16MinStages = 3;

// Only the TMA-store epilogue stages D in shared memory; the direct ones store from registers.
inline int sm90_bf16_staging_bytes(int block_m, int block_n, Sm90GemmEpilogue epilogue) {
    return epilogue == Sm90GemmEpilogue::kBf16Tma ? block_m * block_n * 2 : 0;
}

inline int sm90_bf16_padded_block_n(int block_n, bool b_mn_major) {
    return b_mn_major ? (block_n + 63) / 64 * 64 : block_n;
}

inline int sm90_bf16_smem_bytes(int block_m, int block_n, int num_stages, bool b_mn_major, Sm90GemmEpilogue epilogue) {
    const int per_stage = (block_m + sm90_bf16_padded_block_n(block_n, b_mn_major)) * kSm90Bf16BlockK * 2 + 2 * 8;
    return sm90_bf16_staging_bytes(block_m, block_n, epilogue) + num_stages * per_stage;
}

inline int sm90_bf16_max_stages(int block_m, int block_n, bool b_mn_major, Sm90GemmEpilogue epilogue,
                                int smem_limit) {
    return max_stages_that_fit(kSm90Bf16MaxStages, kSm90Bf16MinStages, smem_limit, [&](int s) {
        return sm90_bf16_smem_bytes(block_m, block_n, s, b_mn_major, epilogue);
    });
}

// Rough cost in SM clocks per 64-K stage: tensor-core time (BF16 dense ~4096 FLOP/clk/SM -> BM*BN/32 clk)
// or shared-memory time, whichever is longer: wgmma reads A and B from shared memory for each m64
// instruction ((BM/64) * (64 + BN) * 128 B) and the TMA writes the stage ((BM + BN) * 128 B), all through
// the same ~128 B/clk. (Only BM x BN = 128 x 256 keeps that within the tensor time; 128 x 128 is at 80%.)
// Times waves; bounded below by L2 (~6 KB/clk) and HBM (~2.3 KB/clk) traffic. `out_bytes` is the D
// element size (plus C's, if read). `groups` independent m x n x k problems (K-grouped: m and n per group,
// k the average K) share the grid.
inline double sm90_bf16_cost(int m, int n, int k, int num_sms, int block_m, int block_n, int out_bytes,
                             int groups = 1) {
    const double num_kb = (k + kSm90Bf16BlockK - 1) / kSm90Bf16BlockK;
    const double tiles =
        double(groups) * double((m + block_m - 1) / block_m) * double((n + block_n - 1) / block_n);
    const double waves = std::ceil(tiles / num_sms);
    const double t_mma = double(block_m) * block_n / 32.0;
    const double t_smem = (block_m / 64.0) * (64.0 + block_n) + (block_m + block_n);
    const double t_kb = std::max(t_mma, t_smem);
    const double t_tile = num_kb * t_kb + 400.0 + block_n * out_bytes;  // + epilogue / pipeline ramp
    const double t_sm = waves * t_tile;
    const double l2_bytes = tiles * num_kb * (block_m + block_n) * 128.0;
    const double hbm_bytes = groups * (2.0 * (double(m) * k + double(n) * k) + double(out_bytes) * m * n);
    return std::max({t_sm, l2_bytes / 6144.0, hbm_bytes / 2300.0});
}

// Chooses block sizes (minimum modelled cost; ties go to the larger tile), then fills shared memory with
// stages. `m` is the number of rows the tiles cover (sum of M for contiguous grouped; for masked,
// expected_m * groups; K-grouped: M, with `groups` = G and k the average K per group); `rows_per_group`
// (masked: expected_m) caps BLOCK_M at 64 when a group has <= 64 rows.
// Measured exception (sweep_bf16_configs.py on the H200, 2026-12-02): a single row of 64/128-row tiles
// (M <= 128) that still gives at least half a wave of 64-wide N tiles runs fastest with 64-wide tiles
// (128x24576x1536: 29.3 us vs 33.8 us for the modelled 128x256; 128x7168x2048: 16.0 vs 16.1): these
// problems stream B, and more CTAs stream it faster than the model's wave count suggests.
// `multiples` (set_block_size_multiple_of) filters the candidates. `n_unit` > 0 (the einsum layouts): BLOCK_N divides
// n_unit where a multiple of 16 does, else BLOCK_N <= n_unit rounded up to 16. Head-batched GEMMs pass the head
// width N (heads side by side in D: no tile straddles two heads, D keeps its TMA store, no tile wider than a head);
// the batch-reduced one passes 128, the tile width its batch split count is planned for (csrc/apis/einsum.cpp).
inline Sm90GemmConfig choose_sm90_bf16_config(int m, int n, int k, int num_sms, int smem_limit, bool b_mn_major,
                                              Sm90GemmEpilogue epilogue, int out_bytes, int rows_per_group = 0,
                                              int groups = 1, BlockMultiples multiples = {}, int n_unit = 0) {
    const bool small_m = m <= 64 || (rows_per_group > 0 && rows_per_group <= 64);
    const int small_block_m = small_m && 64 % multiples.m == 0 ? 64 : 128;  // 64-row tiles when allowed
    auto max_stages = [&](int block_m, int block_n) {
        return sm90_bf16_max_stages(block_m, block_n, b_mn_major, epilogue, smem_limit);
    };
    auto cost = [&](int block_m, int block_n) {
        return sm90_bf16_cost(m, n, k, num_sms, block_m, block_n, out_bytes, groups);
    };
    if (n_unit > 0) {
        auto pick = [&](bool divisors) {
            return cheapest_tile(
                std::min(kSm90Bf16MaxBlockN, (n_unit + 15) / 16 * 16), kSm90Bf16MinStages,
                [&](int block_m, int block_n) {
                    return !(block_m == 128 && small_block_m == 64) && multiples.allows(block_m, block_n) &&
                           !(divisors && n_unit % block_n != 0);
                },
                max_stages, cost);
        };
        const Sm90GemmConfig divisor = pick(true);
        if (divisor.block_m != 0) return divisor;
        const Sm90GemmConfig bounded = pick(false);
        if (bounded.block_m != 0) return bounded;
    }
    Sm90GemmConfig best;
    if (m <= 128 && groups == 1 && rows_per_group == 0 && 2L * ((n + 63) / 64) >= num_sms &&
        multiples.allows(small_block_m, 64)) {
        best.block_m = small_block_m;
        best.block_n = 64;
        best.num_stages = sm90_bf16_max_stages(best.block_m, best.block_n, b_mn_major, epilogue, smem_limit);
        if (best.num_stages >= kSm90Bf16MinStages) return best;
    }
    return or_default(cheapest_tile(
        kSm90Bf16MaxBlockN, kSm90Bf16MinStages,
        [&](int block_m, int block_n) { return !(block_m == 128 && small_block_m == 64) && multiples.allows(block_m, block_n); },
        max_stages, cost));
}

// K-grouped problems: the K per group the config is chosen for. The average K rounded up to a power of two
// in [128, 16384], so that ks changing from step to step (MoE token counts) rarely changes the config, and
// with it the kernel to compile.
inline int sm90_bf16_k_grouped_hint_k(int64_t sum_k, int num_groups) {
    const int64_t avg = num_groups > 0 ? (sum_k + num_groups - 1) / num_groups : sum_k;
    int k = 128;
    while (k < avg && k < 16384) k *= 2;
    return k;
}

// TMA multicast of B over a 2-CTA cluster (two M blocks on the same N block share each B stage, halving
// B's L2 -> SM traffic): dense problems only, and B must split into two 1024-byte aligned halves (K-major:
// BN/2 rows, a multiple of 8; MN-major: an even number of 64-wide atoms). Off unless requested: in the H200
// sweep (2026-12-02) it was 0.5-7% slower than the same tiles without it in 23 of 24 M=4096 comparisons
// (consistent with shared-memory bandwidth, which multicast does not reduce, being the limit, not L2).
// `request`: 0 = heuristic, 1 = off, 2 = on when legal. Returns 1 or 2.
inline int choose_sm90_bf16_multicast(int m, const Sm90GemmConfig& c, int grouped_mode, bool b_mn_major,
                                      int request) {
    if (request == 1 || grouped_mode != 0) return 1;
    const int m_blocks = (m + c.block_m - 1) / c.block_m;
    const bool legal = m_blocks >= 2 && (b_mn_major ? (sm90_bf16_padded_block_n(c.block_n, true) / 64) % 2 == 0
                                                    : (c.block_n / 2) % 8 == 0);
    if (!legal) return 1;
    return request == 2 ? 2 : 1;
}

// Width (bytes) of the D staging swizzle of the bf16 TMA-store epilogue (as in Bf16TmaStoreEpilogue).
inline int sm90_bf16_d_swizzle_bytes(int block_n) { return bf16_d_swizzle_bytes(block_n); }

inline std::string sm90_bf16_to_string(const Sm90GemmConfig& c) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "BLOCK_M=%d BLOCK_N=%d stages=%d group_n=%d threads=%d", c.block_m, c.block_n,
                  c.num_stages, c.group_n, c.num_threads());
    return buf;
}

}  // namespace deep_gemm::heuristics
