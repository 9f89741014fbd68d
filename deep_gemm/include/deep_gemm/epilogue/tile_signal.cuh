// Tile-completion signals of the overlapped masked FP8 GEMM (m_grouped_fp8_gemm_nt_masked with
// enable_overlap=True; docs/kernels/sm90_fp8_gemm_1d2d.md, "Tile signals"). After every math warpgroup has
// stored its rows of the tile at (group, M block), one thread adds 1 to signal[group * ceil(max_m / BLOCK_M) +
// M block] with release semantics at GPU scope. A consumer on another stream or kernel that reads the counter
// with acquire semantics and sees ceil(N / BLOCK_N) (every N block of those rows) then sees the rows in D.
#pragma once

#include "../common/types.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"

namespace deep_gemm {

namespace ptx {

// Orders this thread's completed async-proxy (TMA) global writes before its later generic-proxy operations.
__device__ __forceinline__ void fence_proxy_async_global() {
    asm volatile("fence.proxy.async.global;" ::: "memory");
}

// *addr += value, a release at GPU scope: every write that happens before it (this thread's, and through a
// barrier the other threads') is visible to a GPU-scope acquire that reads the new value.
__device__ __forceinline__ void red_add_release_gpu(i32* addr, i32 value) {
    asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}

}  // namespace ptx

// Named barrier of all math threads for the signal (the epilogues use 1 + math warpgroup, split-K 7).
constexpr u32 kTileSignalBarrier = 8;

// Called by every math thread after its warpgroup's epilogue stored the tile (`epilogue.finish()` waits for the
// warpgroup's TMA stores to complete; register stores need no wait). `has_rows`: the tile holds rows of its
// group (a 2-CTA pair's second tile past the group's last M block does not, and signals nothing, so the index
// stays below num_groups * ceil(max_m / BLOCK_M) whatever masked_m holds).
template <u32 kNumMathThreads, typename Epilogue>
__device__ __forceinline__ void signal_tile_stored(Epilogue& epilogue, u32 thread_in_wg, i32* signal, u32 index,
                                                   bool has_rows) {
    epilogue.finish();
    if (thread_in_wg == 0) ptx::fence_proxy_async_global();
    ptx::named_barrier_sync(kTileSignalBarrier, kNumMathThreads);
    if (threadIdx.x == 128 && has_rows) ptx::red_add_release_gpu(signal + index, 1);
}

}  // namespace deep_gemm
