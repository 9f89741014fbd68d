// Config choice for the SM90 FP8 1D2D GEMM (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh): the
// cost models that score candidate configs (sm90_fp8_config.hpp) and the choices built on them (the model,
// the default; the measured rules and the first version's choice, for comparisons). Header-only and
// torch-free.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common.hpp"
#include "sm90_fp8_config.hpp"

namespace deep_gemm::heuristics {

// The tiles of a block_m x block_n tiling (a multicast pair's padding block counted: multicast 1 pairs M
// blocks, 2 pairs N blocks) and the SMs that take them (pairs need two).
struct Sm90TileGrid {
    double m_blocks, n_blocks, tiles, sms;
};
inline Sm90TileGrid sm90_tile_grid(int m, int n, int num_sms, int block_m, int block_n, int multicast) {
    double m_blocks = double((m + block_m - 1) / block_m), n_blocks = double((n + block_n - 1) / block_n);
    if (multicast == 1) m_blocks = 2.0 * std::ceil(m_blocks / 2.0);
    if (multicast == 2) n_blocks = 2.0 * std::ceil(n_blocks / 2.0);
    const double sms = multicast ? 2.0 * std::floor(num_sms / 2.0) : double(num_sms);
    return {m_blocks, n_blocks, m_blocks * n_blocks, sms};
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
    const auto [m_blocks, n_blocks, tiles, sms] = sm90_tile_grid(m, n, num_sms, block_m, block_n, multicast);
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

// Minimum sm90_fp8_cost (no pipelined promotion, no multicast) over BLOCK_M in {64, 128} (64 alone for M <= 64
// when `multiples` allows it) x BLOCK_N in {16, 32, ..., max_block_n}: cheapest_tile with these rules.
template <typename MaxStages>
inline Sm90GemmConfig choose_sm90_fp8_min_cost_tile(int m, int n, int k, int num_sms, int max_block_n,
                                                     BlockMultiples multiples, MaxStages max_stages) {
    const bool only_64_rows = m <= 64 && 64 % multiples.m == 0;
    return or_default(cheapest_tile(
        max_block_n, kSm90Fp8MinStages,
        [&](int block_m, int block_n) { return !(block_m == 128 && only_64_rows) && multiples.allows(block_m, block_n); },
        max_stages, [&](int block_m, int block_n) { return sm90_fp8_cost(m, n, k, num_sms, block_m, block_n, 0, 0); }));
}

// The first version's choice (DG_FP8_GEMM_CONFIG=legacy, for comparisons): the minimum modelled cost over
// every tile with the rules' stage cap.
inline Sm90GemmConfig choose_sm90_fp8_legacy_config(int m, int n, int k, int num_sms, int smem_limit,
                                                    BlockMultiples multiples = {}) {
    return choose_sm90_fp8_min_cost_tile(m, n, k, num_sms, kSm90Fp8MaxBlockN, multiples, [&](int block_m, int block_n) {
        return sm90_fp8_max_stages(block_m, block_n, smem_limit, kSm90Fp8MaxStagesRules);
    });
}

// The previous default (DG_FP8_GEMM_CONFIG=rules), set by config sweeps on the H200 (benchmarks/sweep_fp8_configs.py, 2026-12-02,
// the shapes of benchmarks/bench_fp8_gemm.py): the pipelined promotion won or tied everywhere; 128x128 tiles won every M=4096
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
inline Sm90GemmConfig choose_sm90_fp8_rules_config(int m, int n, int k, int num_sms, int smem_limit) {
    Sm90GemmConfig config;
    config.block_m = m <= 64 ? 64 : 128;
    const long m_blocks = (m + config.block_m - 1) / config.block_m;
    const long tiles_128 = m_blocks * long((n + 127) / 128);
    config.block_n = tiles_128 >= 2L * num_sms ? 128 : 64;
    const bool narrow = m > 64 && m_blocks == 1 && 2L * ((n + 63) / 64) <= num_sms && n > 32 && num_sms >= 2;
    if (narrow) config.block_n = 32;
    config.num_stages = sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit, kSm90Fp8MaxStagesRules);
    config.pipelined = 1;
    const long n_blocks = (n + config.block_n - 1) / config.block_n;
    config.multicast = (narrow || (k >= 8192 && m_blocks >= 8 && n_blocks >= 2 && num_sms >= 2)) ? 2 : 0;
    config.group_n = 8;
    return config;
}

// ---- Config model (the default choice) ----
// Every candidate tile (block_m 64/128/192/256, block_n a multiple of 16 up to 192, or 128 for 192- and
// 256-row tiles),
// with or without a 2-CTA multicast of B or A, the most pipeline stages that fit (<= 16), is scored by the
// modelled time of its busiest SM; the lowest wins (ties within 1%: the larger tile). Per tile and 128-K
// block an SM needs the larger of
//   - tensor-core time, BLOCK_M * BLOCK_N / 32 clocks (8192 FP8 FLOP/clk), plus
//       * the FP32 promotion it cannot hide: none when pipelined, else a share of the promotion work
//         (BLOCK_M * BLOCK_N / 128 FFMA clocks per SM); 256-row tiles expose a smaller share, the other
//         warpgroup's wgmmas run meanwhile, and 192-row tiles (three warpgroups of 64 rows, the plain
//         promotion only) a smaller one still (fitted to a 192-row sweep: 7-10% slower than 256x128 on
//         full waves, 11% faster at 4096x2112x7168, whose 256-row tiles leave a third of the SMs idle);
//       * for 64-row tiles (a single math warpgroup) a promotion cost per column even when pipelined: no
//         second warpgroup issues wgmmas while this one promotes (measured: 64x128 tiles run 12-14% slower
//         than 128x64 ones with the same tile count and bytes per K block);
//       * for a BLOCK_N that neither divides nor is a multiple of 128, a share of the MMA time: such tiles
//         straddle 128-column B-scale blocks and promote with per-column scales (measured 15-25% slower per
//         tile at M = 4096; less for BLOCK_N > 128, whose tiles straddle at most one boundary per 128+
//         columns);
//       * a fixed cost per K block (barriers, scale loads) that larger tiles amortise;
//   - load time: the bytes this SM requests from L2 per K block (a multicast operand: half) at most
//     kFp8SmLoadBytesPerClk per clock, and no faster than its pipeline refills: with S stages in flight a
//     slot takes a load latency to fill, so a K block costs at least latency / S. The latency is long when
//     an operand streams from HBM and short when both hit L2: blended by the larger first-touch share of
//     the two operands (B is read by m_blocks tiles, the first from HBM: 1 / m_blocks; A: 1 / n_blocks).
// Block-32 scales (sf_gran_k 32, not fitted: no GPU sweep yet) promote after each of the four 32-K steps of a K
// block, four times the promotion work: the exposed promotion above counts four times where the promotion waits
// for each step, once (the last step's) where two scratch accumulators take turns (pipelined), and no tile
// straddles B-scale blocks (a slice of 32 columns has one scale).
// A 2-CTA multicast pair waits for its slower CTA once per K block (a fixed cost per K block) and is only
// considered with more than one wave of tiles. Whole problem: waves * (K blocks * per-K-block time +
// epilogue), the last wave counted in full (so last-wave fill is scored), bounded below by the L2's total
// rate (every tile's bytes: B read again by every M block, A by every N block) and the unique bytes at the
// HBM rate a streaming GEMM reaches (~2.9 TB/s measured at M = 128, below the peak).
// The constants are fitted to an H200 config sweep (benchmarks/data/fp8_sweep_h200.txt, 12 shapes x ~12
// configs, log-time error; tests/cpp/test_fp8_model_fit.cpp prints the fit), so clocks are "model clocks":
// kFp8ModelClkPerUs converts them to the measured microseconds (typical error ~10%).
constexpr double kFp8SmLoadBytesPerClk = 52.0;
constexpr double kFp8HbmLoadLatencyClk = 3700.0;
constexpr double kFp8L2LoadLatencyClk = 3100.0;
constexpr double kFp8KBlockOverheadClk = 115.0;
constexpr double kFp8PromoteExposedShare = 0.93;  // not pipelined, 64/128-row tiles
constexpr double kFp8PromoteExposedShare256 = 0.56;  // 256-row tiles
constexpr double kFp8PromoteExposedShare192 = 0.35;  // 192-row tiles (three warpgroups take turns)
constexpr double kFp8OneWarpgroupPromoteClkPerColumn = 1.3;  // 64-row tiles, per BLOCK_N column and K block
constexpr double kFp8StraddleMmaShare = 0.37;  // BLOCK_N < 128 straddling B-scale blocks: extra share of MMA time
constexpr double kFp8StraddleMmaShareWide = 0.125;  // BLOCK_N > 128, not a multiple of 128
constexpr double kFp8PairSyncClk = 8.5;
constexpr double kFp8LaunchClk = 11900.0;  // launch, first loads, last stores: the same for every candidate
constexpr double kFp8EpilogueClk = 400.0;
constexpr double kFp8EpilogueClkPerColumn = 3.0;  // per BLOCK_N column per 64 rows
constexpr double kFp8L2BytesPerClk = 5400.0;
constexpr double kFp8HbmBytesPerClk = 1520.0;
constexpr double kFp8ModelClkPerUs = 1760.0;  // model clocks per measured microsecond
// Split-K: per split of a tile, the partial's store, the fence and counter, and the last unit's read (fitted
// to an H200 split-K sweep, docs/kernels/sm90_fp8_gemm_1d2d.md, "Split-K").
constexpr double kFp8SplitCombineClk = 350.0;
// The model splits K only with the tiles the split-K sweep measured, 64x32 and 64x64 (the partials stay
// small: one wave of 64x64 FP32 units is ~2 MB), and only in one wave of units (two waves measured 1.3-2x
// slower than one).
inline bool sm90_fp8_split_k_tile(int block_m, int block_n) { return block_m == 64 && (block_n == 32 || block_n == 64); }

// B scales come per 128 columns: a BLOCK_N that neither divides 128 nor is a multiple of it gives tiles
// that straddle two scale blocks (the kernel promotes them with per-column scales).
constexpr int kSm90Fp8ScaleBlockN = 128;
inline bool sm90_fp8_straddles_scale_blocks(int block_n) {
    return kSm90Fp8ScaleBlockN % block_n != 0 && block_n % kSm90Fp8ScaleBlockN != 0;
}

// The modelled time in two parts: the busiest SM's time (`sm`) and the floor no candidate goes below (`floor`:
// the L2's and HBM's total rates); the cost is the larger.
struct Sm90Fp8ModelTime {
    double sm, floor;
    double cost() const { return std::max(sm, floor); }
};

inline Sm90Fp8ModelTime sm90_fp8_model_time(int m, int n, int k, int num_sms, int block_m, int block_n, int num_stages,
                                            int pipelined, int multicast, int split_k = 1,
                                            int sf_gran_k = kSm90Fp8BlockK) {
    const int steps = kSm90Fp8BlockK / sf_gran_k;  // promotions per K block (block-32: 4)
    const double num_kb = (k + kSm90Fp8BlockK - 1) / kSm90Fp8BlockK;
    const auto [m_blocks, n_blocks, tiles, sms] = sm90_tile_grid(m, n, num_sms, block_m, block_n, multicast);
    const double splits = std::max(1, split_k);
    const double waves = std::ceil(tiles * splits / sms);
    // Promotion the tensor core waits for (see above).
    const double promote = double(block_m) * block_n / 128.0;
    // Promotions per K block not hidden behind this warpgroup's own wgmmas (128-granular: 0 or 1).
    const double exposed_steps = pipelined ? (steps > 1 ? 1 : 0) : steps;
    const double bubble = promote * exposed_steps *
                          (block_m == 256 ? kFp8PromoteExposedShare256
                           : block_m == 192 ? kFp8PromoteExposedShare192
                                            : kFp8PromoteExposedShare);
    const double one_warpgroup = block_m == 64 ? kFp8OneWarpgroupPromoteClkPerColumn * block_n * (pipelined ? 1 : steps) : 0.0;
    const double straddle = steps > 1 || !sm90_fp8_straddles_scale_blocks(block_n) ? 0.0
                            : block_n > kSm90Fp8ScaleBlockN       ? kFp8StraddleMmaShareWide
                                                                  : kFp8StraddleMmaShare;
    const double t_mma = double(block_m) * block_n / 32.0 * (1.0 + straddle) + bubble + one_warpgroup +
                         kFp8KBlockOverheadClk;
    const double a_rows = multicast == 2 ? block_m / 2.0 : block_m;
    const double b_rows = multicast == 1 ? block_n / 2.0 : block_n;
    const double kb_bytes = (a_rows + b_rows) * kSm90Fp8BlockK;
    // Split-K: every unit's FP32 partial is written to L2 and read back once.
    const double l2_bytes = tiles * num_kb * kb_bytes + (splits > 1 ? tiles * splits * block_m * block_n * 8.0 : 0.0);
    const double hbm_bytes = double(m) * k + double(n) * k + 2.0 * m * n;
    const double first_touch = std::max(1.0 / std::ceil(double(m) / block_m), 1.0 / std::ceil(double(n) / block_n));
    const double latency = kFp8L2LoadLatencyClk + (kFp8HbmLoadLatencyClk - kFp8L2LoadLatencyClk) * first_touch;
    const double t_load = std::max(kb_bytes / kFp8SmLoadBytesPerClk, latency / num_stages);
    const double t_kb = std::max(t_mma, t_load) + (multicast ? kFp8PairSyncClk : 0.0);
    const double t_tile = std::ceil(num_kb / splits) * t_kb + kFp8EpilogueClk +
                          (block_m / 64.0) * block_n * kFp8EpilogueClkPerColumn +
                          (splits > 1 ? splits * kFp8SplitCombineClk : 0.0);
    const double t_sm = waves * t_tile + kFp8LaunchClk;
    return {t_sm, std::max(l2_bytes / kFp8L2BytesPerClk, hbm_bytes / kFp8HbmBytesPerClk)};
}

inline double sm90_fp8_model_cost(int m, int n, int k, int num_sms, int block_m, int block_n, int num_stages,
                                  int pipelined, int multicast, int split_k = 1, int sf_gran_k = kSm90Fp8BlockK) {
    return sm90_fp8_model_time(m, n, k, num_sms, block_m, block_n, num_stages, pipelined, multicast, split_k, sf_gran_k).cost();
}

// The candidates the model may pick: all by default; the grouped schedulers take no multicast, and the
// contiguous ones no 192-row tiles.
struct Sm90Fp8ModelSpace {
    int min_block_m = 64, max_block_m = 256;
    bool rows_192 = true;
    bool multicast = true;
    bool split_k = false;  // the dense GEMM without C
    BlockMultiples multiples;  // set_block_size_multiple_of
    int max_block_n = 0;       // the masked GEMM's max_block_n: BLOCK_N at most this (0: no cap)
    int sf_gran_k = kSm90Fp8BlockK;  // block-32 scales: 32 (the caller makes BLOCK_N a multiple of 32 through `multiples`)
};

inline Sm90GemmConfig choose_sm90_fp8_model_config(int m, int n, int k, int num_sms, int smem_limit,
                                                   Sm90Fp8ModelSpace space = {}) {
    Sm90GemmConfig best;
    Sm90Fp8ModelTime best_time{-1.0, -1.0};  // cost() < 0: nothing taken yet
    auto take = [&](Sm90Fp8ModelTime t, int block_m, int block_n, int stages, int pipelined, int multicast, int split) {
        best_time = t;
        best.block_m = block_m;
        best.block_n = block_n;
        best.num_stages = stages;
        best.pipelined = pipelined;
        best.multicast = multicast;
        best.split_k = split;
    };
    // The smallest BLOCK_M the space allows takes any M; a larger one must not leave a whole 64-row wave of
    // padding (its wgmmas, zero-filled loads and promotion all wasted; measured: 192x128 tiles at M=128 22-43%
    // slower than 128x128, 256x128 at M=192 29-43% slower than 192x128, at M=160 55% slower;
    // docs/kernels/sm90_fp8_gemm_1d2d.md, "Tile choice").
    int smallest_m = space.max_block_m;
    auto allowed_m = [&](int block_m) {
        return block_m >= space.min_block_m && block_m <= space.max_block_m && (block_m != 192 || space.rows_192);
    };
    for (int block_m : {256, 192, 128, 64})
        if (allowed_m(block_m) && block_m % space.multiples.m == 0) smallest_m = block_m;
    for (int block_m : {64, 128, 192, 256}) {
        if (!allowed_m(block_m)) continue;
        if (block_m > smallest_m && block_m - m >= 64) continue;  // a 64-row wave of the tile would be padding
        const int tile_max_n = block_m == 256 ? kSm90Fp8MaxBlockN256 : block_m == 192 ? kSm90Fp8MaxBlockN192 : kSm90Fp8MaxBlockN;
        const int max_n = space.max_block_n > 0 ? std::min(tile_max_n, space.max_block_n) : tile_max_n;
        for (int block_n = 16; block_n <= max_n; block_n += 16) {
            if (!space.multiples.allows(block_m, block_n)) continue;
            const int stages = sm90_fp8_max_stages(block_m, block_n, smem_limit, kSm90Fp8MaxStages, space.sf_gran_k);
            if (stages < kSm90Fp8MinStages) continue;
            // 192-row tiles run the plain promotion: their pipelined variant (BLOCK_N <= 80) measured 1.5x slower.
            const int pipelined = (block_m < 192 && block_n <= kSm90Fp8MaxBlockNPipelined) ? 1 : 0;
            const long m_blocks = (m + block_m - 1) / block_m, n_blocks = (n + block_n - 1) / block_n;
            for (int multicast : {0, 1, 2}) {
                // A pair needs two blocks along its dimension.
                if (multicast != 0 && (num_sms < 2 || !space.multicast)) continue;
                if (multicast == 1 && m_blocks < 2) continue;
                if (multicast == 2 && n_blocks < 2) continue;
                if (multicast != 0 && m_blocks * n_blocks <= num_sms) continue;  // one wave: no pairs
                const Sm90Fp8ModelTime t = sm90_fp8_model_time(m, n, k, num_sms, block_m, block_n, stages, pipelined,
                                                               multicast, 1, space.sf_gran_k);
                const double cost = t.cost(), best_cost = best_time.cost();
                // Ties (within 1%): where both sit on the floor, the floor (too conservative at small M, where
                // 3.0-3.5 TB/s were measured) says nothing about them, and the one whose busiest SM has less to do
                // wins (measured: 128x64 on all 132 SMs 46.8 us against 128x80 on 106 SMs 54.7 at 128x8448x16384,
                // 128x128 72.0 against 192x128 100.1 at 128x14336x16384; ten shapes with M 64-192 gained 4-30%).
                // Not below 64 rows, where the 64-row tiles are mostly padding: there it won one shape and lost
                // two by 4-6% (sm90_fp8_gemm_1d2d.md, "Tile choice"). Otherwise the larger tile (fewer bytes per FLOP), and
                // without multicast.
                const bool on_floor = m >= 64 && t.sm < t.floor && best_time.sm < best_time.floor;
                if (best_cost < 0 || cost < best_cost * 0.99 ||
                    (cost <= best_cost * 1.01 &&
                     (on_floor ? t.sm < best_time.sm * 0.99
                               : (block_m * block_n > best.block_m * best.block_n ||
                                  (block_m * block_n == best.block_m * best.block_n && multicast == 0 &&
                                   best.multicast != 0))))) {
                    take(t, block_m, block_n, stages, pipelined, multicast, 1);
                }
            }
            // Split-K: small tiles, one wave of units, at least two K blocks per unit; taken only when clearly
            // (> 1%) cheaper.
            if (!space.split_k || !sm90_fp8_split_k_tile(block_m, block_n)) continue;
            const long num_kb = (k + kSm90Fp8BlockK - 1) / kSm90Fp8BlockK;
            for (int split = 2; split <= kSm90Fp8MaxSplitK; ++split) {
                if (m_blocks * n_blocks * split > num_sms || num_kb < 2L * split) break;
                const Sm90Fp8ModelTime t =
                    sm90_fp8_model_time(m, n, k, num_sms, block_m, block_n, stages, pipelined, 0, split, space.sf_gran_k);
                if (best_time.cost() < 0 || t.cost() < best_time.cost() * 0.99) take(t, block_m, block_n, stages, pipelined, 0, split);
            }
        }
    }
    // Nothing fits (a device with little shared memory): a stage count below the minimum, which the caller reports.
    if (best_time.cost() < 0) best.num_stages = sm90_fp8_max_stages(64, 16, smem_limit);
    best.group_n = 8;
    return best;
}

// Tile order of the dense model's config. With one wave of units (every tile, or split unit, on its own SM at
// once) the set of tiles that run together is fixed and the order only decides which CTA index takes which
// tile; what measured best is to put side by side the CTAs that read the same tile of the larger operand.
// B larger (N > M): group_n 1 (all M blocks of one N block in a row), 0.5-6% faster than 8 on every such
// one-wave shape the H200 sweep tried (M 128-512, 64- to 256-row tiles, split-K too); A larger: 8 (with at most
// 8 N blocks, all N blocks of one M block in a row), where 1 measured 2-12% slower (4096x256x7168 23.9 against
// 21.1-21.5 us). With several waves 8 stays (1 measured 2% slower at 4096x4096x7168, earlier sweeps kept 8
// against 4-32). With one M block every group_n gives the same order; 8 keeps those kernels (and their cache
// entries) as they were. docs/kernels/sm90_fp8_gemm_1d2d.md, "Tile choice".
inline int sm90_fp8_dense_group_n(int m, int n, int num_sms, const Sm90GemmConfig& c) {
    const long m_blocks = (m + c.block_m - 1) / c.block_m, n_blocks = (n + c.block_n - 1) / c.block_n;
    const long units = m_blocks * n_blocks * std::max(1, c.split_k);
    return (c.multicast == 0 && m_blocks > 1 && n > m && units <= num_sms) ? 1 : 8;
}

// Which choice DG_FP8_GEMM_CONFIG asks for when it forces no tile: the model (default), the measured rules
// that preceded the model ("rules"), or the first version's ("legacy"): tuning tools for A/B runs,
// never the default.
enum class Sm90Fp8Chooser { kModel, kRules, kLegacy };

// `multiples` (set_block_size_multiple_of) filters the candidates; the rules pick fixed tiles, so where
// theirs is not allowed the model chooses among the allowed ones.
// `split_k`: the caller can run split-K (the dense GEMM without C); only the model uses it. `sf_gran_k`: the
// scales' K granularity (block-32: 32, with `multiples` keeping BLOCK_N a multiple of 32); only the model uses it.
inline Sm90GemmConfig choose_sm90_fp8_config(int m, int n, int k, int num_sms, int smem_limit,
                                             Sm90Fp8Chooser chooser = Sm90Fp8Chooser::kModel,
                                             BlockMultiples multiples = {}, bool split_k = false,
                                             int sf_gran_k = kSm90Fp8BlockK) {
    if (chooser == Sm90Fp8Chooser::kLegacy) return choose_sm90_fp8_legacy_config(m, n, k, num_sms, smem_limit, multiples);
    if (chooser == Sm90Fp8Chooser::kRules) {
        const Sm90GemmConfig rules = choose_sm90_fp8_rules_config(m, n, k, num_sms, smem_limit);
        if (multiples.allows(rules.block_m, rules.block_n)) return rules;
    }
    Sm90Fp8ModelSpace space;
    space.multiples = multiples;
    space.split_k = split_k;
    space.sf_gran_k = sf_gran_k;
    Sm90GemmConfig config = choose_sm90_fp8_model_config(m, n, k, num_sms, smem_limit, space);
    config.group_n = sm90_fp8_dense_group_n(m, n, num_sms, config);
    return config;
}

// The mean rows a masked group takes once padded to whole BLOCK_M tiles. expected_m is a mean and real groups
// spread around it: the model takes them evenly over +-30% of it (the spread of
// benchmarks/bench_fp8_grouped.py), so a tile that just fits expected_m does not win when a third of the groups
// would need two of it.
inline double sm90_fp8_masked_tile_rows(int expected_m, int block_m) {
    constexpr int kSamples = 16;
    double sum = 0.0;
    for (int i = 0; i < kSamples; ++i) {
        const long rows = std::max(1L, std::lround(expected_m * (0.7 + 0.6 * (i + 0.5) / kSamples)));
        sum += double((rows + block_m - 1) / block_m * block_m);
    }
    return sum / kSamples;
}

// M-grouped calls (contiguous: m = sum of M, rows_per_group = expected_m_for_psum_layout or 0; masked: m =
// max_m, rows_per_group = expected_m). No multicast here (sm90_fp8_contiguous_unzeroed_config below adds it for
// large contiguous calls without zeroing; forced configs reach the rest). Each candidate BLOCK_M
// is scored by the dense model on the rows it would compute, and the cheapest wins (the smaller tile unless
// the larger is > 1% cheaper):
// - Contiguous: BLOCK_M 64 or 128 on sum of M. The scheduler also runs 256-row tiles (two 128-row segments;
//   forced only): on the three contiguous benchmark shapes they measured 1.03-1.13x the dense model's time on
//   sum of M plus 128 (G - 1) rows (a block whose halves hold two groups runs twice), against 0.89-0.99x for
//   the 128-row tiles, so the model would pick them where 128x192 is ~6% faster (docs/kernels/sm90_fp8_gemm_1d2d.md,
//   "Grouped layouts"). No 192-row tiles (their 64-row warpgroups do not fit the segments). With the psum
//   layout's rows hint, groups of at most 64 expected rows take 64-row tiles, larger ones 128.
// - Masked: G x the mean rows a group takes in whole tiles (sm90_fp8_masked_tile_rows), for BLOCK_M 64, 128
//   and 256 (192-row tiles measured 7-10% slower than 256-row ones at full waves; see above).
// "rules" / "legacy": the dense rule on that M with BLOCK_M 64 or 128 as for the psum hint; its 32-wide N tiles
// only pay off with A multicast: 64 instead.
// `max_block_n` (masked, > 0): no BLOCK_N above it (SGLang's max_block_n; the rules' pick is cut down to it).
inline Sm90GemmConfig choose_sm90_fp8_grouped_config(int m, int n, int k, int num_sms, int smem_limit,
                                                     int rows_per_group, int num_groups, bool masked,
                                                     Sm90Fp8Chooser chooser = Sm90Fp8Chooser::kModel,
                                                     BlockMultiples multiples = {}, int max_block_n = 0) {
    const int hinted_block_m = rows_per_group <= 64 && 64 % multiples.m == 0 ? 64 : 128;
    const long groups = std::max(1, num_groups);
    const int model_m = masked ? int(std::min<long>(groups * std::max(1, rows_per_group), INT32_MAX)) : m;
    if (chooser != Sm90Fp8Chooser::kModel) {
        Sm90GemmConfig config = choose_sm90_fp8_config(model_m, n, k, num_sms, smem_limit, chooser, multiples);
        config.block_m = rows_per_group > 0 ? hinted_block_m : std::min(config.block_m, 128);
        if (config.block_n < 64) config.block_n = 64;
        if (max_block_n > 0) config.block_n = std::min(config.block_n, max_block_n / 16 * 16);
        config.multicast = 0;
        config.group_n = 8;  // (the dense model's one-wave order is not measured on the grouped schedulers)
        config.num_stages = sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit);
        if (multiples.allows(config.block_m, config.block_n)) return config;  // else: the model's allowed tiles
    }
    Sm90Fp8ModelSpace space;
    space.multicast = false;
    space.rows_192 = false;
    space.multiples = multiples;
    space.max_block_n = max_block_n;
    if (!masked) {
        space.min_block_m = rows_per_group > 0 ? hinted_block_m : 64;
        space.max_block_m = rows_per_group > 0 ? hinted_block_m : 128;
        return choose_sm90_fp8_model_config(m, n, k, num_sms, smem_limit, space);
    }
    Sm90GemmConfig best;
    double best_cost = -1.0;
    // Masked: per BLOCK_M, the model's pick on the rows its tiles cover (the smaller tile unless > 1% cheaper).
    for (const int block_m : {64, 128, 256}) {
        space.min_block_m = space.max_block_m = block_m;
        const double rows = double(groups) * sm90_fp8_masked_tile_rows(rows_per_group, block_m);
        const int rows_m = int(std::min<double>(std::ceil(rows), INT32_MAX));
        const Sm90GemmConfig c = choose_sm90_fp8_model_config(rows_m, n, k, num_sms, smem_limit, space);
        if (c.num_stages < kSm90Fp8MinStages || !multiples.allows(c.block_m, c.block_n)) continue;
        const double cost = sm90_fp8_model_cost(rows_m, n, k, num_sms, c.block_m, c.block_n, c.num_stages, c.pipelined, 0);
        if (best_cost < 0 || cost < best_cost * 0.99) best = c, best_cost = cost;
    }
    if (best_cost < 0) {  // nothing fits: the caller reports the stage count
        space.min_block_m = 64, space.max_block_m = 256;
        return choose_sm90_fp8_model_config(model_m, n, k, num_sms, smem_limit, space);
    }
    return best;
}

// Contiguous calls that leave padding rows unwritten (ensure_zero_padding=False): the model's pipelined
// 128-row tiles give way to 128x192 tiles on 2-CTA clusters sharing B (pairs of M blocks of one group). Same
// H100 run against DeepGEMM, peer/ours on 8 x ~4256 x 7168 x 3072 and 4 x ~8576 x 4096 x 4096 (index / psum):
// pipelined 128x128 0.816 / 0.859 and 0.810 / 0.792, 128x192 B-shared 0.915 / 0.895 and 0.911 / 0.894; with
// zeroing the pipelined tile stays ahead (0.908 and 0.937 against 0.886 and 0.886), and where the model already
// picks 128x192 (8 x ~4256 x 6144 x 7168) sharing B measured within 1.5% (docs/kernels/sm90_fp8_gemm_1d2d.md,
// "Against DeepGEMM on the same tile"). Only for problems of 8 or more waves of 128x192 tiles (the measured
// shapes have 44 and 76 on 132 SMs; smaller ones are unmeasured), where 4 stages of 128x192 fit in shared memory and the
// caller's block multiples allow the tile.
inline Sm90GemmConfig sm90_fp8_contiguous_unzeroed_config(Sm90GemmConfig config, int m, int n, int num_sms,
                                                          int smem_limit, BlockMultiples multiples = {}) {
    const long tiles = long((m + 127) / 128) * long((n + 191) / 192);
    if (!config.pipelined || config.block_m != 128 || tiles < 8L * num_sms || !multiples.allows(128, 192))
        return config;
    const int stages = sm90_fp8_max_stages(128, 192, smem_limit);
    if (stages < 4) return config;
    config.block_n = 192;
    config.num_stages = 4;
    config.pipelined = false;
    config.multicast = 1;
    return config;
}

}  // namespace deep_gemm::heuristics
