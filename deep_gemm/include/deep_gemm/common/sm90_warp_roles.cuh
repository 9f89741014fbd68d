// Warp roles of the warp-specialised SM90 kernels (the GEMMs, MQA logits): warpgroup 0 produces (TMA) and
// gives registers back with setmaxnreg; the math warpgroups take them for their accumulators.
// 40 + 2 x 232 registers x 128 threads stays within the 64K-register file with two math warpgroups.
#pragma once

#include "../ptx/sync.cuh"
#include "pipeline.cuh"
#include "types.cuh"

namespace deep_gemm {

constexpr u32 kSm90ProducerRegs = 40;
constexpr u32 kSm90MathRegs = 232;

// The producer warpgroup of the GEMMs (sm90_bf16_gemm.cuh, sm90_fp8_gemm_1d2d.cuh, sm90_fp8_gemm_1d1d.cuh):
// gives registers back when there is more than one math warpgroup to take them; one thread walks the
// scheduler's tiles (extended constructor: m, n, grouped, num_groups) and calls
//     load_tile(scheduler, st, a_row0, n0, a_group, b_group)
// for each, which loads the tile's K blocks into the pipeline slots from `st` on and advances `st` past
// them; then that thread lets the next kernel launch (PDL). a_row0 / n0: the tile's first row of A (in its
// group) and of B; a_group / b_group: the group coordinates of A's and B's tensor maps.
template <typename Scheduler, u32 kNumStages, u32 kBlockN, u32 kNumMathWarpgroups, typename LoadTile>
__device__ __forceinline__ void sm90_gemm_producer(u32 m, u32 n, const i32* grouped, u32 num_groups,
                                                   LoadTile&& load_tile) {
    if constexpr (kNumMathWarpgroups > 1) ptx::setmaxnreg_dec<kSm90ProducerRegs>();
    if (threadIdx.x == 0) {
        Scheduler scheduler(m, n, grouped, num_groups);
        PipelineState<kNumStages> st;
        u32 m_block, n_block;
        while (scheduler.next(m_block, n_block)) {
            load_tile(static_cast<const Scheduler&>(scheduler), st, static_cast<i32>(scheduler.a_row0()),
                      static_cast<i32>(n_block * kBlockN), static_cast<i32>(scheduler.a_group()),
                      static_cast<i32>(scheduler.b_group()));
        }
        ptx::grid_dependency_launch_dependents();
    }
}

}  // namespace deep_gemm
