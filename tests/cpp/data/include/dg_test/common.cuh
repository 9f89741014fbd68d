// Test-only helpers for the JIT core tests (not shipped).
#pragma once

namespace dg_test {

__device__ __forceinline__ unsigned lane_id() {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

}  // namespace dg_test
