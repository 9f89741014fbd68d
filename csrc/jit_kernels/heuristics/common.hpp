// Pieces shared by the SM90 GEMM config heuristics (sm90_fp8_config.hpp, sm90_fp8_cost_model.hpp, sm90_fp8_1d1d.hpp,
// sm90_bf16.hpp): the config and epilogue types, the stage and tile choice helpers. Header-only and torch-free.
#pragma once

namespace deep_gemm::heuristics {

// Which epilogue stores D, in every SM90 GEMM kernel (GemmKernelKey::epilogue): staging + TMA store (bf16 D
// without C, TMA-addressable), direct bf16 stores (bf16 D without C that TMA cannot address), or direct
// stores with optional C (FP32 D, or any C).
enum class Sm90GemmEpilogue : int { kBf16Tma = 0, kBf16Direct = 1, kAccumDirect = 2 };

// The config of every SM90 GEMM kernel (BF16, FP8 1D2D, FP8 1D1D): tile, stages and scheduler group, and the
// FP8 kernels' own knobs, off for the others.
struct Sm90GemmConfig {
    int block_m = 128;
    int block_n = 128;
    int num_stages = 4;
    int group_n = 8;  // scheduler: N blocks per swizzle group
    // FP8: promotion overlap (1D2D kernel's kPromoteMode, 1D1D kernel's kPipelined): 0 = none; 1 = two scratch
    // accumulators, K block kb+1's wgmmas run while kb is promoted (BLOCK_N <= 128).
    int pipelined = 0;
    // FP8: TMA multicast over a 2-CTA cluster: 0 = off, 1 = the pair shares B (adjacent M blocks), 2 = the pair
    // shares A (adjacent N blocks; 1D2D only). (The BF16 kernel's multicast is chosen at the kernel key.)
    int multicast = 0;
    // FP8 1D2D split-K (dense, no C): each tile's K blocks are shared by split_k units whose FP32 partials the
    // tile's last unit adds up; 1 = off.
    int split_k = 1;
    // FP8 1D1D with C: C's tile pulled into L2 a few K blocks before the epilogue reads it (0 = off).
    int prefetch_c = 0;

    // 256-row tiles (FP8 1D2D only): two math warpgroups of 128 rows (two 64-row wgmma waves each).
    int num_math_warpgroups() const { return block_m == 256 ? 2 : block_m / 64; }
    int num_threads() const { return 128 + 128 * num_math_warpgroups(); }
    bool operator==(const Sm90GemmConfig&) const = default;
};

// set_block_size_multiple_of: the tiles a chooser may pick have BLOCK_M % m == 0 and BLOCK_N % n == 0
// (1, 1: any tile).
struct BlockMultiples {
    int m = 1, n = 1;
    bool allows(int block_m, int block_n) const { return block_m % m == 0 && block_n % n == 0; }
};

// Width (bytes) of the swizzle of a bf16 D tile staged in shared memory: the widest of 128/64/32 that
// divides a BLOCK_N row of bf16.
inline int bf16_d_swizzle_bytes(int block_n) {
    const int row_bytes = block_n * 2;
    return row_bytes % 128 == 0 ? 128 : (row_bytes % 64 == 0 ? 64 : 32);
}

// The most pipeline stages in [min_stages, max_stages] whose shared memory (`smem_bytes(stages)`) fits in
// `smem_limit`; min_stages - 1 when none does (the caller reports "not enough shared memory").
template <typename SmemBytes>
inline int max_stages_that_fit(int max_stages, int min_stages, int smem_limit, SmemBytes smem_bytes) {
    int s = max_stages;
    while (s >= min_stages && smem_bytes(s) > smem_limit) --s;
    return s;
}

// Tile choice: a candidate of modelled cost `cost` replaces the best so far (`best_cost` < 0: none yet) when
// strictly better by 1%, or equal within 1% with a larger tile.
inline bool is_better_tile(double cost, int block_m, int block_n, double best_cost, int best_block_m,
                           int best_block_n) {
    return best_cost < 0 || cost < best_cost * 0.99 ||
           (cost <= best_cost * 1.01 && block_m * block_n > best_block_m * best_block_n);
}

// The cheapest tile among BLOCK_M in {64, 128} x BLOCK_N in {16, 32, ..., max_block_n}: `cost(block_m, block_n)`
// over the tiles `allowed(block_m, block_n)` accepts and for which `max_stages(block_m, block_n)` gives at least
// `min_stages` (that many are taken), compared by is_better_tile. group_n 8; block_m 0 when no tile qualifies.
template <typename Allowed, typename MaxStages, typename Cost>
inline Sm90GemmConfig cheapest_tile(int max_block_n, int min_stages, Allowed allowed, MaxStages max_stages, Cost cost) {
    Sm90GemmConfig best{0, 0, 0, 8};
    double best_cost = -1.0;
    for (int block_m : {64, 128}) {
        for (int block_n = 16; block_n <= max_block_n; block_n += 16) {
            if (!allowed(block_m, block_n)) continue;
            const int stages = max_stages(block_m, block_n);
            if (stages < min_stages) continue;
            const double c = cost(block_m, block_n);
            if (is_better_tile(c, block_m, block_n, best_cost, best.block_m, best.block_n)) {
                best_cost = c;
                best.block_m = block_m, best.block_n = block_n, best.num_stages = stages;
            }
        }
    }
    return best;
}

// cheapest_tile's pick, or the default config when no tile qualifies.
inline Sm90GemmConfig or_default(const Sm90GemmConfig& picked) { return picked.block_m != 0 ? picked : Sm90GemmConfig{}; }

}  // namespace deep_gemm::heuristics
