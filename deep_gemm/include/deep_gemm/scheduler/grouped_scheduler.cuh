// Tile schedulers for the grouped (MoE) layouts, with the extended interface of gemm_scheduler.cuh, so
// any kernel written against that interface (the BF16 GEMM; the FP8 kernel later) runs all three modes.
//
// Contiguous: A / D are [sum_M, *] (rows of all groups concatenated), B is [G, N, K]; grouped_layout[row]
//   is the row's group, or -1 for padding. Every group's rows start at a multiple of the alignment
//   (kGroupAlign, set_mk_alignment_for_contiguous_layout: 128 rows by default), a multiple of BLOCK_M up to
//   128, so such an M block never mixes two groups; a 256-row block is looked up as two 128-row segments
//   (below). What happens to padding rows is the scheduler's kPadding (PaddingRows, gemm_scheduler.cuh):
//   kUnspecified (ensure_zero_padding=False, DeepGEMM's SM90 behaviour, whose M blocks are the alignment):
//   every segment takes the group of the first row of its alignment block, so padding rows in an
//   alignment block that starts in a group are computed with that group's B and stored, also when BLOCK_M
//   is smaller than the alignment, and segments of an alignment block that starts in padding are not
//   written (a 256-row block computes such a segment with its other segment's group but does not store it);
//   kZero stores zeros in every padding row. All-padding blocks are tiles with no K blocks.
// Contiguous with the psum layout: the same A / D / B, but grouped_layout is int32 [G]: group g owns the rows
//   [align(end[g-1]), end[g]) where end = grouped_layout, end[-1] = 0 and align() rounds up to the contiguous
//   alignment (kGroupAlign); rows outside every group are padding. A segment belongs to the first group
//   whose end lies past the first row of its alignment block (kUnspecified) or past its own first row (kZero)
//   (binary search; ends are non-decreasing), and blocks past the last end are padding. An alignment block
//   always starts in its group's rows (its first row r has end[g-1] <= r, so align(end[g-1]) <= r); a
//   smaller segment can start in the padding before its group, and kZero recognises it as padding (the
//   alignment, kGroupAlign, gives the group's first row align(end[g-1])).
// Masked: A is [G, max_m, K], D is [G * max_m, N], B is [G, N, K]; masked_m[g] (on the GPU: no host sync)
//   rows of group g are valid. Tiles are enumerated group after group (ceil(masked_m[g] / BLOCK_M) M blocks
//   each) and striped over the persistent grid; the row bound d_row_end() stops the epilogue at masked_m
//   (kClipRows: kernels that honour it write no row past masked_m; the BF16 kernel's TMA store may write
//   the rest of the last 64-row box, which its host allows only when max_m is a multiple of 64).
// K-grouped (weight gradients): A is [sum_K, M] and B [sum_K, N] (2-D tensor maps), group g owning the K
//   rows [k_start_g, k_start_g + ks[g]); D is [G * M, N] (the groups of a [G, M, N] tensor back to back).
//   See KGroupedScheduler.
#pragma once

#include "../common/types.cuh"
#include "gemm_scheduler.cuh"

namespace deep_gemm {

// Both contiguous layouts: the dense tile order, each M block mapped to its group by its first row, or by its
// alignment block's first row (kUnspecified) (blocks with no group are tiles with no K blocks). A 256-row block is looked up as
// two 128-row segments (groups start at multiples of 128 rows, so each segment, the rows of one math warpgroup,
// lies in one group's rows or in padding); when the two segments belong to two groups the block is visited
// twice, once with each group's B, and each visit writes only its own segment (rows_written()).
// TileOrder: the dense tile order the kernel host picked (GroupedOrderScheduler, one CTA per tile), or one of
// 2-CTA clusters, whose two pipelines must stay in step (the same number of K blocks per tile):
//   ClusterPairNScheduler (TMA multicast of A): the CTAs take adjacent N blocks of one M block, so they look up
//     the same M block and see the same group, the same empty tiles and the same second visits.
//   ClusterPairScheduler (TMA multicast of B; 64- and 128-row blocks): the CTAs take M blocks 2p and 2p + 1 of
//     one N block, which may hold two groups. Each CTA looks up both blocks: they share B (pair_shares_b())
//     only when both belong to one group, otherwise each loads its own B tile whole. A block with no group (or
//     past m) beside one with a group is computed with the partner's group, so that both run all K blocks,
//     and is written as an all-padding block is (kUnspecified: not at all, kZero: zeros); two blocks with no
//     group are both tiles with no K blocks.
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, bool kPsumLayout, PaddingRows kPadding = PaddingRows::kUnspecified,
          u32 kGroupAlign = 128, typename TileOrder = GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>>
struct ContiguousLayoutScheduler : WholeKRange {
    static constexpr u32 kSegmentRows = kBlockM < 128 ? kBlockM : 128;
    static constexpr u32 kSegments = kBlockM / kSegmentRows;
    static_assert(kBlockM % kSegmentRows == 0 && kSegments <= 2, "BLOCK_M 64, 128 or 256");
    static constexpr bool kPairsMBlocks = TileOrder::kPairsMBlocks;
    static_assert(!kPairsMBlocks || kSegments == 1, "M-block pairs (multicast of B) of one segment each");
    static_assert(kGroupAlign % kSegmentRows == 0, "groups start at multiples of a segment");
    // All-padding blocks are visited as tiles with no K blocks (kZero stores their zeros, kUnspecified
    // nothing: d_row_end() is their first row) rather than skipped: a skip is a loop on loaded data inside
    // next(), which made ptxas take the kernels' tile loop for divergent (R2UR per wgmma descriptor).
    static constexpr bool kMayHaveEmptyK = true;
    static constexpr PaddingRows kPaddingRows = kPadding;
    TileOrder dense;
    const i32* grouped_layout;
    u32 num_groups;

    // The group of a segment; for the psum layout with a padding mode also the group's rows [begin, end).
    struct Segment {
        bool has_group;
        u32 group, begin, end;
    };
    // The current visit: the segment whose group it computes, whether it is all padding, and which
    // segments of the tile it writes (bit s: segment s).
    Segment cur{false, 0u, 0u, 0u};
    bool cur_empty = false;
    // M-block pairs: the pair reads one B tile; this block has no group and is computed for its partner only.
    bool cur_shares_b = false;
    bool cur_discard = false;
    u32 written = 1;
    // The current M block holds two groups and has been visited for the first one.
    bool revisit = false;

    // m = sum_M (rows of A and D), n = N; layout = group per row [m], or group ends [num_groups] (psum).
    __device__ __forceinline__ ContiguousLayoutScheduler(u32 m, u32 n, const i32* layout, u32 groups)
        : dense(m, n), grouped_layout(layout), num_groups(groups) {}

    // The group of the segment starting at `seg_row` (has_group false: padding, or past the last group).
    __device__ __forceinline__ Segment segment(u32 seg_row) const {
        // kUnspecified: the group of the alignment block's first row (DeepGEMM's M block), so a 64-row block
        // of padding after a group's last rows is computed with that group like the rest of its block.
        const u32 row = kPadding == PaddingRows::kUnspecified ? seg_row - seg_row % kGroupAlign : seg_row;
        Segment s{false, 0u, 0u, 0u};
        if constexpr (!kPsumLayout) {
            // A group id past the last group counts as padding too: group indices address B and its scales.
            const i32 g = __ldg(grouped_layout + row);
            s.group = static_cast<u32>(g);
            s.has_group = g >= 0 && s.group < num_groups;
        } else {
            // First group g with end[g] > row; a malformed (decreasing) layout only changes which group a
            // segment gets, never an address: g < num_groups and rows stay below m.
            u32 lo = 0, hi = num_groups;
            while (lo < hi) {
                const u32 mid = (lo + hi) / 2;
                if (__ldg(grouped_layout + mid) > static_cast<i32>(row)) hi = mid;
                else lo = mid + 1;
            }
            s.group = lo;
            s.has_group = lo < num_groups;
            if constexpr (kPadding != PaddingRows::kUnspecified) {
                if (s.has_group) {
                    // Group g's rows: [align(end[g-1]), end[g]); a segment before its first row is all padding
                    // (both are multiples of the segment).
                    const i32 prev_end = lo > 0 ? __ldg(grouped_layout + lo - 1) : 0;
                    s.begin = prev_end > 0 ? align_up(static_cast<u32>(prev_end), kGroupAlign) : 0u;
                    s.end = static_cast<u32>(__ldg(grouped_layout + lo));
                    s.has_group = row >= s.begin;
                }
            }
        }
        return s;
    }

    __device__ __forceinline__ void visit(const Segment& s, u32 segments_written) {
        cur = s;
        cur_empty = false;
        written = segments_written;
    }

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        constexpr u32 kAll = (1u << kSegments) - 1;
        if (!dense.next(m_block, n_block)) return false;
        if constexpr (kPairsMBlocks) {
            // Both CTAs of the pair compute the same two lookups, so they agree on everything below.
            const u32 partner_row = (m_block ^ 1u) * kBlockM;
            const Segment own = dense.cur_m0 < dense.rows ? segment(dense.cur_m0) : Segment{false, 0u, 0u, 0u};
            const Segment partner = partner_row < dense.rows ? segment(partner_row) : Segment{false, 0u, 0u, 0u};
            cur_shares_b = own.has_group && partner.has_group && own.group == partner.group;
            cur_discard = !own.has_group && partner.has_group;
            if (own.has_group || partner.has_group) {
                // (kZero: row_valid() is false on every row of a discarded block: none is in the partner's group.)
                visit(own.has_group ? own : partner, kAll);
                return true;
            }
            cur.group = 0;  // both all padding: B is not read
            cur_empty = true;
            written = kAll;
            return true;
        }
        const Segment first = segment(m_block * kBlockM);
        u32 first_writes = kAll;
        if constexpr (kSegments > 1) {
            // (m is a multiple of 128, not of 256: the second segment of the last block may lie past m, and is
            // padding then, not looked up.)
            const u32 second_row = m_block * kBlockM + kSegmentRows;
            const Segment second = second_row < dense.rows ? segment(second_row) : Segment{false, 0u, 0u, 0u};
            if (first.has_group && second.has_group && first.group != second.group) {
                // Two groups: this block again (the dense order's step taken back) for the second one.
                if (!revisit) {
                    visit(first, 1u);
                    revisit = true;
                    dense.repeat_last();
                } else {
                    visit(second, 2u);
                    revisit = false;
                }
                return true;
            }
            // kUnspecified writes no segment whose alignment block starts in padding (kZero: its zeros).
            constexpr bool kWritePaddingSegment = kPadding == PaddingRows::kZero;
            if (!first.has_group && second.has_group) {
                visit(second, kWritePaddingSegment ? kAll : 2u);
                return true;
            }
            if (!kWritePaddingSegment && !second.has_group) first_writes = 1u;
        }
        if (first.has_group) {
            visit(first, first_writes);
            return true;
        }
        cur.group = 0;  // all padding: B is not read
        cur_empty = true;
        written = kAll;
        return true;
    }

    __device__ __forceinline__ u32 k_size(u32 problem_k) const {
        return cur_empty ? 0u : problem_k;
    }
    // Whether `row` (of D, inside the current tile) belongs to the visit's group.
    __device__ __forceinline__ bool row_valid(u32 row) const {
        if constexpr (kPsumLayout) {
            return row >= cur.begin && row < cur.end;
        } else {
            return row < dense.rows && __ldg(grouped_layout + row) == static_cast<i32>(cur.group);
        }
    }
    // Whether this visit writes the rows of the tile's segment holding tile row `row_in_tile`.
    __device__ __forceinline__ bool rows_written(u32 row_in_tile) const {
        if constexpr (kSegments == 1) return true;
        return ((written >> (row_in_tile / kSegmentRows)) & 1u) != 0;
    }

    __device__ __forceinline__ u32 a_group() const { return 0; }
    __device__ __forceinline__ u32 b_group() const { return cur.group; }
    __device__ __forceinline__ u32 a_row0() const { return dense.cur_m0; }
    __device__ __forceinline__ u32 d_row0() const { return dense.cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const {
        return (cur_empty || cur_discard) && kPadding != PaddingRows::kZero ? dense.cur_m0 : dense.rows;
    }
    __device__ __forceinline__ bool pair_shares_b() const { return cur_shares_b; }
};

template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
using ContiguousGroupedScheduler = ContiguousLayoutScheduler<kBlockM, kBlockN, kGroupN, false>;
template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
using PsumContiguousGroupedScheduler = ContiguousLayoutScheduler<kBlockM, kBlockN, kGroupN, true>;

// kCluster 2: 2-CTA clusters walk pairs of M blocks of one group (CTA rank r takes block 2p + r of pair p) and one N
// block, so both read the same B tile (TMA multicast of B) and run the same K blocks; a group with an odd number of
// M blocks gives its last pair a tile past masked_m, which writes nothing (kClipRows) and whose warpgroups only
// pass the pipeline's slots on.
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, u32 kCluster = 1>
struct MaskedGroupedScheduler : WholeKRange {
    using Stripe = ClusterStripe<kCluster>;
    static constexpr bool kClipRows = true;
    const i32* masked_m;
    u32 max_m;
    u32 num_groups;
    u32 num_n_blocks;
    u32 next_tile;
    // Current group: index, first linear tile, tile count, M blocks (or pairs of them), valid rows.
    u32 group = 0;
    u32 group_first_tile = 0;
    u32 group_tiles = 0;
    u32 group_m_blocks = 0;
    u32 group_rows = 0;
    u32 cur_m0 = 0;

    // m = max_m (rows per group), n = N, masked = masked_m [num_groups] int32.
    __device__ __forceinline__ MaskedGroupedScheduler(u32 m, u32 n, const i32* masked, u32 groups)
        : masked_m(masked),
          max_m(m),
          num_groups(groups),
          num_n_blocks(ceil_div(n, kBlockN)),
          next_tile(Stripe::first()) {
        if (num_groups > 0) load_group();
    }

    __device__ __forceinline__ void load_group() {
        const i32 rows = __ldg(masked_m + group);
        group_rows = rows <= 0 ? 0u : min_of(static_cast<u32>(rows), max_m);
        group_m_blocks = Stripe::units(ceil_div(group_rows, kBlockM));
        group_tiles = group_m_blocks * num_n_blocks;
    }

    // The tiles are counted up to a bound that kernel arguments alone give (every group with max_m rows), and
    // next() returns false only there; once the groups are used up the count jumps to the bound. Returning
    // false on the group cursor itself (loaded masked_m) made ptxas take the kernel's tile loop for divergent
    // and move the pipeline state and the wgmma descriptors out of uniform registers (two R2UR per descriptor
    // and K block); with the jump they stay uniform (SASS checked). Stepping to the bound instead of jumping
    // would cost a loop trip per grid's worth of unused tiles: thousands with a large max_m and small groups.
    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        // (Fits in 32 bits: it is about G * max_m * N / (BLOCK_M * BLOCK_N) plus a row or column of tiles per
        // group, far below 2^32 for any D and B that fit in a GPU's memory.)
        const u32 bound = num_groups * Stripe::units(ceil_div(max_m, kBlockM)) * num_n_blocks;
        while (next_tile < bound) {
            const u32 t = next_tile;
            next_tile += Stripe::step();
            // Tiles only move forward, so the group cursor does too.
            while (group < num_groups && t >= group_first_tile + group_tiles) {
                group_first_tile += group_tiles;
                if (++group < num_groups) load_group();
            }
            if (group < num_groups) {
                grouped_order_tile<kGroupN>(t - group_first_tile, group_m_blocks, num_n_blocks, m_block, n_block);
                m_block = Stripe::block(m_block);
                cur_m0 = m_block * kBlockM;
                return true;
            }
            next_tile = bound;
        }
        return false;
    }

    __device__ __forceinline__ u32 a_group() const { return group; }
    __device__ __forceinline__ u32 b_group() const { return group; }
    __device__ __forceinline__ u32 a_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row0() const { return group * max_m + cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const { return group * max_m + group_rows; }
};

// K-grouped: every group has the same ceil(M/BM) x ceil(N/BN) tiles, enumerated group after group
// (grouped order inside a group, where all tiles share one K range) and striped over the persistent grid.
// ks (int32 [num_groups] on the GPU: no host sync) is read as the tiles move forward, so each CTA reads
// each entry at most once. Each ks[g] must be a multiple of BLOCK_K (the host checks 128): a tile's last
// K block then never reaches into the next group's rows. ks[g] == 0 gives tiles with no K blocks.
// kKsInParams: ks points into the kernel's parameters (the FP8 op's host list), read with plain loads.
// kCluster 2: 2-CTA clusters walk pairs of M blocks (CTA rank r takes block 2p + r of pair p) of one group and
// N block, so both read the same B tile (TMA multicast of B) and the same K; with an odd number of M blocks the
// last pair's second tile lies past M (its rows are not written: d_row0() >= d_row_end()).
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, bool kKsInParams = false, u32 kCluster = 1>
struct KGroupedScheduler : WholeKRange {
    using Stripe = ClusterStripe<kCluster>;
    static constexpr bool kMayHaveEmptyK = true;
    const i32* ks;
    u32 num_groups;
    u32 rows;  // M
    u32 num_m_blocks;  // M blocks, or pairs of them (kCluster 2)
    u32 num_n_blocks;
    u32 group_tiles;
    u32 next_tile;
    // Cursor: the current group, its first K row and its K.
    u32 group = 0;
    u32 group_k0 = 0;
    u32 group_k = 0;
    u32 cur_m0 = 0;

    // m = M (rows per group), n = N, k_sizes = ks_tensor [num_groups].
    __device__ __forceinline__ KGroupedScheduler(u32 m, u32 n, const i32* k_sizes, u32 groups)
        : ks(k_sizes),
          num_groups(groups),
          rows(m),
          num_m_blocks(Stripe::units(ceil_div(m, kBlockM))),
          num_n_blocks(ceil_div(n, kBlockN)),
          group_tiles(Stripe::units(ceil_div(m, kBlockM)) * ceil_div(n, kBlockN)),
          next_tile(Stripe::first()) {
        if (num_groups > 0) group_k = load_k(0);
    }

    __device__ __forceinline__ u32 load_k(u32 g) const {
        const i32 k = kKsInParams ? ks[g] : __ldg(ks + g);
        return k > 0 ? static_cast<u32>(k) : 0u;
    }

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        const u32 t = next_tile;
        next_tile += Stripe::step();
        if (group_tiles == 0) return false;
        const u32 g = t / group_tiles;
        if (g >= num_groups) return false;
        // Tiles only move forward, so the cursor does too.
        while (group < g) {
            group_k0 += group_k;
            group_k = load_k(++group);
        }
        grouped_order_tile<kGroupN>(t - g * group_tiles, num_m_blocks, num_n_blocks, m_block, n_block);
        m_block = Stripe::block(m_block);
        cur_m0 = m_block * kBlockM;
        return true;
    }

    __device__ __forceinline__ u32 a_group() const { return 0; }
    __device__ __forceinline__ u32 b_group() const { return 0; }
    __device__ __forceinline__ u32 a_row0() const { return cur_m0; }
    __device__ __forceinline__ u32 d_row0() const { return group * rows + cur_m0; }
    __device__ __forceinline__ u32 d_row_end() const { return group * rows + rows; }
    __device__ __forceinline__ u32 k_offset() const { return group_k0; }
    __device__ __forceinline__ u32 k_size(u32) const { return group_k; }
    // The tile's group (kernels with per-group tensor maps index them by it).
    __device__ __forceinline__ u32 group_index() const { return group; }
};

}  // namespace deep_gemm
