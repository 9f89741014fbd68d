// Persistent tile schedulers. A scheduler hands each CTA its sequence of output tiles; the producer and
// the math warpgroups each own a copy constructed from the same arguments, so they walk the same
// sequence. Interface (what a kernel relies on):
//     __device__ Scheduler(u32 m, u32 n);
//     __device__ bool next(u32& m_block, u32& n_block);   // false when this CTA has no tiles left
// Grouped layouts (contiguous / masked MoE) provide other schedulers with the same interface.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm {

// Dense GEMM: tiles are striped over the persistent grid (tile t -> CTA t % gridDim.x). The linear
// tile index is mapped group by group: a group is kGroupN consecutive N blocks times all M blocks, and
// inside a group the N block varies fastest. CTAs running at the same time therefore share a few
// N blocks of B and a band of M blocks of A, which keeps both in L2.
template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
struct GroupedOrderScheduler {
    static_assert(kGroupN >= 1, "group size");
    u32 num_m_blocks;
    u32 num_n_blocks;
    u32 num_tiles;
    u32 next_tile;

    __device__ __forceinline__ GroupedOrderScheduler(u32 m, u32 n)
        : num_m_blocks(ceil_div(m, kBlockM)),
          num_n_blocks(ceil_div(n, kBlockN)),
          num_tiles(ceil_div(m, kBlockM) * ceil_div(n, kBlockN)),
          next_tile(blockIdx.x) {}

    __device__ __forceinline__ bool next(u32& m_block, u32& n_block) {
        if (next_tile >= num_tiles) return false;
        const u32 t = next_tile;
        next_tile += gridDim.x;
        const u32 group_span = num_m_blocks * kGroupN;
        const u32 group = t / group_span;
        const u32 in_group = t - group * group_span;
        const u32 first_n = group * kGroupN;
        const u32 width = min_of(kGroupN, num_n_blocks - first_n);
        m_block = in_group / width;
        n_block = first_n + (in_group - m_block * width);
        return true;
    }
};

}  // namespace deep_gemm
