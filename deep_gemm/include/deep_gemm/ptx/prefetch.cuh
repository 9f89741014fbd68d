// Cache prefetch hints for global memory.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

// Brings the 128-byte line holding `p` into this SM's L1 (a hint: no result, no fault is waited for).
// Callers pass addresses inside their tensors only.
__device__ __forceinline__ void prefetch_l1(const void* p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

// The same into L2 (shared by all SMs; normal eviction priority).
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

}  // namespace deep_gemm::ptx
