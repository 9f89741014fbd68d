// Test-only: one FP8 wgmma (m64n8k32, e4m3 x e4m3 -> f32) from shared-memory descriptors, written as
// inline PTX so that it needs nothing but sm_90a. Used to check that both compilers emit GMMA SASS.
#pragma once

#include "common.cuh"

namespace dg_test {

__device__ __forceinline__ void wgmma_m64n8k32_e4m3(float (&d)[4], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

__device__ __forceinline__ unsigned long long smem_descriptor(const void* smem) {
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    unsigned long long desc = 0;
    desc |= (address & 0x3FFFFull) >> 4;       // start address
    desc |= (16ull >> 4) << 16;                // leading byte offset
    desc |= (1024ull >> 4) << 32;              // stride byte offset
    desc |= 1ull << 62;                        // 128-byte swizzle
    return desc;
}

}  // namespace dg_test
