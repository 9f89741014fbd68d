// Prologue of the warp-specialised SM90 GEMMs (sm90_bf16_gemm.cuh, sm90_fp8_gemm_1d2d.cuh), before the warp
// roles split:
//     if (threadIdx.x == 0)
//         sm90_gemm_prefetch_and_init<kPrefetchD>(pipe, empty_arrivals, tmap_d, tmap_a, ...);
//     sm90_gemm_wait_setup<kMulticast>();
// The thread test stays in the kernel: with the branch inside the helper NVVM places the kernel's first
// instructions differently (the BF16 masked GEMM's SASS changed), while this split leaves it as it was.
#pragma once

#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "pipeline.cuh"
#include "types.cuh"

namespace deep_gemm {

// One thread: prefetches `input_maps` in the order given, then `tmap_d` when kPrefetchD (an epilogue that
// stores through TMA), and initialises the pipeline barriers, every empty barrier expecting `empty_arrivals`.
template <bool kPrefetchD, u32 kNumStages, typename... Maps>
__device__ __forceinline__ void sm90_gemm_prefetch_and_init(const PipelineBarriers<kNumStages>& pipe,
                                                            u32 empty_arrivals, const TmaDescriptor& tmap_d,
                                                            const Maps&... input_maps) {
    (ptx::tma_prefetch_descriptor(input_maps), ...);
    if constexpr (kPrefetchD) ptx::tma_prefetch_descriptor(tmap_d);
    pipe.init(empty_arrivals);
}

// Every thread: waits until the barriers are initialised, then for the previous kernel (PDL: the inputs may
// be written by it; nothing global is touched before this). With multicast (kMulticast > 1) the peer CTA
// writes this CTA's slots and arrives on its barriers, so both CTAs' barriers must be initialised before
// either producer starts: a cluster barrier instead of the CTA barrier.
template <u32 kMulticast>
__device__ __forceinline__ void sm90_gemm_wait_setup() {
    if constexpr (kMulticast > 1) {
        ptx::cluster_sync();
    } else {
        __syncthreads();
    }
    ptx::grid_dependency_wait();
}

}  // namespace deep_gemm
