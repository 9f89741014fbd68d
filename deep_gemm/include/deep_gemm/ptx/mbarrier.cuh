// mbarrier wrappers (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier").
// All operate on a 64-bit barrier object in the CTA's own shared memory.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

__device__ __forceinline__ void mbarrier_init(u64* bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes barrier initialisation visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbarrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival (release semantics at CTA scope).
__device__ __forceinline__ void mbarrier_arrive(u64* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// One arrival on the barrier at the same shared-memory offset in CTA `cta_rank` of this cluster; `bar` is
// this CTA's barrier, mapped into the peer's window with mapa. Default semantics (release at CTA scope):
// what it orders is this thread's reads of a slot, which wgmma (waited for) has finished, against the
// peer's TMA overwrite. `.release.cluster` would compile to a GPU-wide MEMBAR per arrival, which measured
// 1.8x slower on the H200 (4096x7168x16384 with multicast).
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* bar, u32 cta_rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(smem_addr(bar)),
        "r"(cta_rank)
        : "memory");
}

// One arrival that also raises the expected transaction count by `bytes` (the TMA loads that follow
// complete_tx them).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Waits until the phase with parity `parity` has completed (acquire semantics). A freshly initialised
// barrier is in phase 0, so waiting for parity 1 returns at once ("the previous phase is complete").
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
    const u32 addr = smem_addr(bar);
    u32 done;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (done == 0);
}

}  // namespace deep_gemm::ptx
