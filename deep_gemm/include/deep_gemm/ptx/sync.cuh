// Fences, named barriers, register reallocation and programmatic-dependent-launch controls.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA, wgmma) reads.
__device__ __forceinline__ void fence_proxy_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `count` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Named barrier `id` over `count` threads that also returns whether `pred` holds in all of them.
__device__ __forceinline__ bool named_barrier_and(u32 id, u32 count, bool pred) {
    u32 all;
    asm volatile(
        "{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.and.pred p, %2, %3, q;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(all)
        : "r"(static_cast<u32>(pred)), "r"(id), "r"(count)
        : "memory");
    return all != 0;
}

// Thread-block clusters: this CTA's rank in its cluster, and a full cluster barrier (every thread of every
// CTA of the cluster; release/acquire so shared-memory state, e.g. initialised mbarriers, is visible).
__device__ __forceinline__ u32 cluster_cta_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// Register reallocation for the whole warpgroup (all its threads must execute it).
template <u32 kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(kRegs >= 24 && kRegs <= 256 && kRegs % 8 == 0, "setmaxnreg range");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

template <u32 kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(kRegs >= 24 && kRegs <= 256 && kRegs % 8 == 0, "setmaxnreg range");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// PDL: wait for the grids this one depends on (no-op when launched without the attribute).
__device__ __forceinline__ void grid_dependency_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// PDL: allow the dependent grid to start launching.
__device__ __forceinline__ void grid_dependency_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace deep_gemm::ptx
