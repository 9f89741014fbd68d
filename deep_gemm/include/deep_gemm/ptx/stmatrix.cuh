// stmatrix and FP32 -> BF16 packing.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

// Packs two floats to bf16x2 (round to nearest even): `lo` lands in bits 0..15 (lower address).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
    u32 r;
    // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower half.
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Four 8x8 b16 matrices: thread t supplies the address of row (t % 8) of matrix (t / 8); register i of
// every thread holds (row lane/4, cols 2*(lane%4) .. +1) of matrix i.
__device__ __forceinline__ void stmatrix_x4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

}  // namespace deep_gemm::ptx
