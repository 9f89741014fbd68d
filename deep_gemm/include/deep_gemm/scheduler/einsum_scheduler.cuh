// Tile schedulers of the einsum layouts (csrc/apis/einsum.cpp), with the extended interface of
// gemm_scheduler.cuh plus its einsum hooks (kKWalksGroups, kAGroupMiddle, d_col0 / d_col_end):
//
// Batch-reduced ('bmk,bnk->mn'): D[M, N] = sum over G batches of A_g[M, K] @ B_g[N, K]^T. The tiles are
//   the dense ones in grouped order; each tile's K loop walks (batch, K block): ceil(K / BLOCK_K) blocks per
//   batch, loaded from 3-D tensor maps {K, rows, batch}. A batch's last K block is zero-filled past K by TMA,
//   so K needs no alignment to BLOCK_K. When the M x N tiles cannot fill the GPU, kSplits > 1 splits the
//   batches of each tile over kSplits units, each storing its FP32 partial tile in its own [M, N] slice of D
//   (the host adds the slices up).
// Head-batched ('bhr,hdr->bhd', 'bhd,hdr->bhr'): G independent GEMMs D_g[M, N] = A_g[M, K] @ B_g^T, one
//   per head g, with the same M, N, K. A is x[b, h, K] read through a 3-D map {K, head, b} (the head is the
//   middle dimension, so its strides stay increasing); B is y[h] (K-major [N, K] or N-major [K, N]) through
//   the usual {inner, outer, group} map; D is z[b, h, N] viewed as 2-D [b, h * N], head g owning columns
//   [g * N, g * N + N) (d_col0 / d_col_end bound the epilogue there). Tiles go head after head, grouped order
//   inside a head.
#pragma once

#include "../common/types.cuh"
#include "gemm_scheduler.cuh"

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kGroupN, u32 kSplits = 1>
struct BatchReducedScheduler : WholeKRange {
    static_assert(kSplits >= 1 && kSplits <= 64, "batch splits");
    static constexpr bool kKWalksGroups = true;
    // A split with no batches (more splits than batches) stores a zero partial tile rather than hanging.
    static constexpr bool kMayHaveEmptyK = kSplits > 1;
    static constexpr u32 kBlockK = 64;  // the BF16 kernel's K block
    u32 num_m_blocks, num_n_blocks, num_units, next_unit;
    u32 rows, num_batches;
    u32 cur_m0 = 0, split = 0, batch0 = 0, batch_count = 0;

    // m = M, n = N (of one partial), batches = G.
    __device__ __forceinline__ BatchReducedScheduler(u32 m, u32 n, const i32*, u32 batches)
        : num_m_blocks(ceil_div(m, kBlockM)),
          num_n_blocks(ceil_div(n, kBlockN)),
          num_units(ceil_div(m, kBlockM) * ceil_div(n, kBlockN) * kSplits),
          next_unit(blockIdx.x),
          rows(m),
          num_batches(batches) {}

    // Unit u = tile * kSplits + split; split s owns batches [s * G / kSplits, (s + 1) * G / kSplits).
    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (next_unit >= num_units) return false;
        const u32 u = next_unit;
        next_unit += gridDim.x;
        const u32 tile = u / kSplits;
        split = u - tile * kSplits;
        grouped_order_tile<kGroupN>(tile, num_m_blocks, num_n_blocks, m_block, n_block);
        cur_m0 = m_block * kBlockM;
        batch0 = static_cast<u32>(static_cast<u64>(split) * num_batches / kSplits);
        batch_count = static_cast<u32>(static_cast<u64>(split + 1) * num_batches / kSplits) - batch0;
        return true;
    }

    __device__ __forceinline__ u32 a_group() const { return 0; }
    __device__ __forceinline__ u32 b_group() const { return 0; }
    __device__ __forceinline__ u32 a_row0() const { return cur_m0; }
    // Split s's partial tile goes to rows [s * M, s * M + M) of D (with one split: D itself).
    __device__ __forceinline__ u32 d_row0() const { return split * rows + cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const { return split * rows + rows; }
    // The first batch of this unit; every batch contributes whole K blocks (its tail zero-filled by TMA).
    __device__ __forceinline__ u32 first_batch() const { return batch0; }
    __device__ __forceinline__ u32 k_size(u32 problem_k) const { return batch_count * align_up(problem_k, kBlockK); }
};

template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
struct HeadBatchedScheduler : WholeKRange {
    static constexpr bool kAGroupMiddle = true;
    static constexpr bool kDColumnGroups = true;
    u32 num_m_blocks, num_n_blocks, head_tiles, num_tiles, next_tile;
    u32 rows, cols;  // M and N of one head
    u32 head = 0, cur_m0 = 0;

    // m = M (= b), n = N per head, heads = G (the 64-bit product is far below 2^32 tiles for any tensor
    // that fits a GPU: at least 64 x 16 elements per tile).
    __device__ __forceinline__ HeadBatchedScheduler(u32 m, u32 n, const i32*, u32 heads)
        : num_m_blocks(ceil_div(m, kBlockM)),
          num_n_blocks(ceil_div(n, kBlockN)),
          head_tiles(ceil_div(m, kBlockM) * ceil_div(n, kBlockN)),
          num_tiles(heads * ceil_div(m, kBlockM) * ceil_div(n, kBlockN)),
          next_tile(blockIdx.x),
          rows(m),
          cols(n) {}

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (next_tile >= num_tiles) return false;
        const u32 t = next_tile;
        next_tile += gridDim.x;
        head = t / head_tiles;
        grouped_order_tile<kGroupN>(t - head * head_tiles, num_m_blocks, num_n_blocks, m_block, n_block);
        cur_m0 = m_block * kBlockM;
        return true;
    }

    __device__ __forceinline__ u32 a_group() const { return head; }
    __device__ __forceinline__ u32 b_group() const { return head; }
    __device__ __forceinline__ u32 a_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const { return rows; }
    __device__ __forceinline__ u32 d_col0() const { return head * cols; }
    __device__ __forceinline__ u32 d_col_end(u32) const { return head * cols + cols; }
};

}  // namespace deep_gemm
