// Persistent tile schedulers. A scheduler hands each CTA its sequence of output tiles; the producer and
// the math warpgroups each own a copy constructed from the same arguments, so they walk the same
// sequence. Interface (what a kernel relies on):
//     __device__ Scheduler(u32 m, u32 n);
//     __device__ bool next(u32& m_block, u32& n_block);   // false when this CTA has no tiles left
// Extended interface (kernels that support the grouped layouts; see grouped_scheduler.cuh):
//     __device__ Scheduler(u32 m, u32 n, const i32* grouped, u32 num_groups);
//     after next():  a_group(), b_group()  group coordinate of the tile in A's / B's (3-D) tensor map
//                    a_row0()              first row of the tile in A's (per-group) view
//                    d_row0(), d_row_end() first row and exclusive row bound of the tile in D's 2-D view
//                    k_offset(), k_size(k)  the tile's K range [k_offset, k_offset + k_size): K-grouped
//                                          problems give each group its own range; the others inherit
//                                          WholeKRange (all of the problem's K)
//     kMayHaveEmptyK                       true when k_size() can be 0 (the tile is then D = C or zeros)
//     kPaddingRows, row_valid(row)         what the epilogue does with rows of a tile that belong to no
//                                          group (see PaddingRows); row_valid() is asked only when
//                                          kPaddingRows != kUnspecified
//     rows_written(row_in_tile)            false for the rows of a warpgroup that this visit of the tile must
//                                          not write (another visit of the same tile writes them: a 256-row
//                                          contiguous block holding two groups)
//     kClipRows                            the epilogue must write no row at or past d_row_end() (the D
//                                          tensor map extends past it, e.g. into the next masked group)
//     pair_shares_b()                      on 2-CTA clusters pairing M blocks (multicast of B): whether the two
//                                          CTAs' tiles read the same B tile, so that each loads half of it for
//                                          both (the contiguous layouts: only when both blocks have one group)
//     kKWalksGroups, kAGroupMiddle,        the einsum layouts (einsum_scheduler.cuh): K blocks that walk the
//     kDColumnGroups                       groups, A's group as the middle tensor-map dimension, and a column
//                                          offset / bound per tile in D's 2-D view (d_col0(), d_col_end(n))
// Grouped layouts (contiguous / masked MoE) provide other schedulers with the same interface.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm {

// Maps linear tile index t of a num_m_blocks x num_n_blocks grid to (m_block, n_block), group by group:
// a group is kGroupN consecutive N blocks times all M blocks, and inside a group the N block varies
// fastest. CTAs running at the same time therefore share a few N blocks of B and a band of M blocks of
// A, which keeps both in L2.
template <u32 kGroupN>
__device__ __forceinline__ void grouped_order_tile(u32 t, u32 num_m_blocks, u32 num_n_blocks, u32& m_block,
                                                   u32& n_block) {
    const u32 group_span = num_m_blocks * kGroupN;
    const u32 group = t / group_span;
    const u32 in_group = t - group * group_span;
    const u32 first_n = group * kGroupN;
    const u32 width = min_of(kGroupN, num_n_blocks - first_n);
    m_block = in_group / width;
    n_block = first_n + (in_group - m_block * width);
}

// Rows of a contiguous-layout tile that belong to no group (padding):
//   kUnspecified  ensure_zero_padding=False: computed with the group of the alignment block they lie in and
//                 stored (zero rows of A give zero rows of D; content otherwise unspecified); alignment
//                 blocks that start in padding are not written. Also what every non-contiguous scheduler
//                 declares (no padding rows).
//   kZero         ensure_zero_padding=True: stored as zeros, all-padding blocks too.
// (The contiguous schedulers visit all-padding blocks as tiles with no K blocks: k_size() == 0, and
// d_row_end() == d_row0() where nothing is to be written.)
enum class PaddingRows : u32 { kUnspecified = 0, kZero = 1 };

// The K range of every scheduler whose tiles all cover the whole problem K, and the row rules of the
// ones whose tiles have no padding rows and whose row bound is the D tensor map's.
struct WholeKRange {
    static constexpr u32 kNumSplits = 1;  // split-K: the K blocks of a tile are shared by kNumSplits units
    static constexpr bool kMayHaveEmptyK = false;
    static constexpr PaddingRows kPaddingRows = PaddingRows::kUnspecified;
    static constexpr bool kClipRows = false;
    __device__ __forceinline__ u32 k_offset() const { return 0; }
    __device__ __forceinline__ u32 k_size(u32 problem_k) const { return problem_k; }
    __device__ __forceinline__ bool row_valid(u32) const { return true; }
    __device__ __forceinline__ bool rows_written(u32) const { return true; }
    __device__ __forceinline__ bool pair_shares_b() const { return true; }
    // The einsum layouts (einsum_scheduler.cuh) override these; every other scheduler keeps the defaults,
    // which leave the kernels' code unchanged (compile-time constants).
    static constexpr bool kKWalksGroups = false;  // K blocks walk (group, K block of the group)
    static constexpr bool kAGroupMiddle = false;  // A's 3-D tensor map is {K, group, rows}
    static constexpr bool kDColumnGroups = false;  // tiles store at d_col0() + n0, bounded by d_col_end(n)
};

// The tile coordinates of the dense schedulers: no groups; A's and D's first row is the tile's (cur_m0, set
// by next()), D's row bound is M.
struct DenseTileRows : WholeKRange {
    u32 rows;  // M (for d_row_end)
    u32 cur_m0 = 0;

    __device__ __forceinline__ explicit DenseTileRows(u32 m) : rows(m) {}

    __device__ __forceinline__ u32 a_group() const { return 0; }
    __device__ __forceinline__ u32 b_group() const { return 0; }
    __device__ __forceinline__ u32 a_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const { return rows; }
};

// Dense GEMM: tiles are striped over the persistent grid (tile t -> CTA t % gridDim.x), in grouped order.
template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
struct GroupedOrderScheduler : DenseTileRows {
    static_assert(kGroupN >= 1, "group size");
    static constexpr bool kPairsMBlocks = false;  // no CTA pairs
    u32 num_m_blocks;
    u32 num_n_blocks;
    u32 num_tiles;
    u32 next_tile;

    __device__ __forceinline__ GroupedOrderScheduler(u32 m, u32 n)
        : DenseTileRows(m),
          num_m_blocks(ceil_div(m, kBlockM)),
          num_n_blocks(ceil_div(n, kBlockN)),
          num_tiles(ceil_div(m, kBlockM) * ceil_div(n, kBlockN)),
          next_tile(blockIdx.x) {}

    // Extended-interface constructor: dense problems have no group information.
    __device__ __forceinline__ GroupedOrderScheduler(u32 m, u32 n, const i32*, u32) : GroupedOrderScheduler(m, n) {}

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (next_tile >= num_tiles) return false;
        const u32 t = next_tile;
        next_tile += gridDim.x;
        grouped_order_tile<kGroupN>(t, num_m_blocks, num_n_blocks, m_block, n_block);
        cur_m0 = m_block * kBlockM;
        return true;
    }
    // The next next() gives the same tile again (the contiguous scheduler's second visit of a block).
    __device__ __forceinline__ void repeat_last() { next_tile -= gridDim.x; }
};

// Dense GEMM with split-K: unit u = tile * kSplits + split is striped over the persistent grid like the
// tiles of GroupedOrderScheduler (the splits of a tile are adjacent, so they run in the same wave). Split s
// of a tile covers K blocks [s * nkb / kSplits, (s + 1) * nkb / kSplits) (split_k_blocks): balanced to one
// block, and never empty while kSplits <= nkb (the host guarantees it). The kernel writes each unit's FP32
// partial tile to a workspace; the last unit of a tile to finish adds them up and stores D.
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, u32 kSplits>
struct SplitKScheduler : GroupedOrderScheduler<kBlockM, kBlockN, kGroupN> {
    static_assert(kSplits >= 2, "splits");
    using Base = GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>;
    static constexpr u32 kNumSplits = kSplits;
    u32 cur_tile = 0, cur_split = 0;

    // The base stripes num_tiles indices over the grid: here they are the units.
    __device__ __forceinline__ SplitKScheduler(u32 m, u32 n, const i32* = nullptr, u32 = 0) : Base(m, n) {
        this->num_tiles *= kSplits;
    }

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (this->next_tile >= this->num_tiles) return false;
        const u32 u = this->next_tile;
        this->next_tile += gridDim.x;
        cur_tile = u / kSplits;
        cur_split = u - cur_tile * kSplits;
        grouped_order_tile<kGroupN>(cur_tile, this->num_m_blocks, this->num_n_blocks, m_block, n_block);
        this->cur_m0 = m_block * kBlockM;
        return true;
    }

    // The tile (index into the per-tile counters) and the split of the current unit.
    __device__ __forceinline__ u32 tile() const { return cur_tile; }
    __device__ __forceinline__ u32 split() const { return cur_split; }
    // The current unit's first K block and number of K blocks, of a problem with num_k_blocks K blocks.
    __device__ __forceinline__ void split_k_blocks(u32 num_k_blocks, u32& kb0, u32& count) const {
        kb0 = cur_split * num_k_blocks / kSplits;
        count = (cur_split + 1) * num_k_blocks / kSplits - kb0;
    }
};

// How the persistent grid's clusters of kCluster CTAs (1 or 2) stripe over units of work: cluster
// c = blockIdx.x / kCluster takes units c, c + (clusters), ...; with 2, a unit is a pair of blocks along the paired
// dimension and CTA rank r takes block 2p + r of pair p (units(n) pairs cover n blocks). Every tile order that
// pairs CTAs walks its units with it, so both CTAs of a cluster see the same sequence.
template <u32 kCluster>
struct ClusterStripe {
    static_assert(kCluster == 1 || kCluster == 2, "one CTA or a 2-CTA cluster per unit");
    static __device__ __forceinline__ u32 first() { return blockIdx.x / kCluster; }
    static __device__ __forceinline__ u32 step() { return gridDim.x / kCluster; }
    static __device__ __forceinline__ u32 units(u32 blocks) { return ceil_div(blocks, kCluster); }
    static __device__ __forceinline__ u32 block(u32 unit) { return unit * kCluster + blockIdx.x % kCluster; }
};

// Dense GEMM on 2-CTA clusters: cluster c = blockIdx.x / 2 walks pairs of blocks along one dimension x
// one block of the other in grouped order (groups of kGroupN N blocks, or with kPairsN of kGroupN N-block
// pairs); CTA rank r of the cluster takes block 2p + r of the pair p. When the number of blocks along the
// paired dimension is odd, the last pair's second tile lies past M (past N): that CTA still loads (a
// zero-filled operand tile, and its half of the shared operand for the peer) and computes.
//   kPairsN false (ClusterPairScheduler): pairs of M blocks sharing B; the epilogue stores nothing for the
//                 tile past M (d_row0 >= d_row_end).
//   kPairsN true (ClusterPairNScheduler): pairs of N blocks sharing A; the stores of the tile past N are
//                 clipped away (the kernel must clamp anything it indexes by n_block).
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, bool kPairsN>
struct ClusterPairOrderScheduler : DenseTileRows {
    static_assert(kGroupN >= 1, "group size");
    static constexpr bool kPairsMBlocks = !kPairsN;
    using Stripe = ClusterStripe<2>;
    u32 num_m_units;  // M blocks, or pairs of them
    u32 num_n_units;  // N blocks, or pairs of them
    u32 num_tiles;    // pair tiles
    u32 next_tile;

    __device__ __forceinline__ ClusterPairOrderScheduler(u32 m, u32 n, const i32* = nullptr, u32 = 0)
        : DenseTileRows(m),
          num_m_units(kPairsN ? ceil_div(m, kBlockM) : Stripe::units(ceil_div(m, kBlockM))),
          num_n_units(kPairsN ? Stripe::units(ceil_div(n, kBlockN)) : ceil_div(n, kBlockN)),
          num_tiles(num_m_units * num_n_units),
          next_tile(Stripe::first()) {}

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (next_tile >= num_tiles) return false;
        const u32 t = next_tile;
        next_tile += Stripe::step();
        u32 pair;
        if constexpr (kPairsN) {
            grouped_order_tile<kGroupN>(t, num_m_units, num_n_units, m_block, pair);
            n_block = Stripe::block(pair);
        } else {
            grouped_order_tile<kGroupN>(t, num_m_units, num_n_units, pair, n_block);
            m_block = Stripe::block(pair);
        }
        cur_m0 = m_block * kBlockM;
        return true;
    }
    // The next next() gives the same pair tile again (both CTAs of the cluster step back alike).
    __device__ __forceinline__ void repeat_last() { next_tile -= Stripe::step(); }
};

template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
using ClusterPairScheduler = ClusterPairOrderScheduler<kBlockM, kBlockN, kGroupN, false>;
template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
using ClusterPairNScheduler = ClusterPairOrderScheduler<kBlockM, kBlockN, kGroupN, true>;

}  // namespace deep_gemm
