// FP32 -> TF32 conversion for TF32 wgmma operands.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

// The FP32 value with bits `x_bits` rounded to TF32 (sign, 8 exponent, 10 mantissa bits) to nearest, ties
// away from zero, as the 32-bit word a TF32 wgmma reads (PTX ISA "cvt": cvt.rna.tf32.f32, sm_80 and up; the
// ties-to-even .rn form needs sm_90, .rn.satfinite sm_100). For finite values this equals
// (x_bits + 0x1000) & 0xffffe000 (tests/python/hc_prenorm_reference.py models it). FP32 data given to a TF32
// wgmma as is loses its low 13 mantissa bits instead (truncation toward zero).
__device__ __forceinline__ u32 cvt_rna_tf32(u32 x_bits) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x_bits)));
    return r;
}

}  // namespace deep_gemm::ptx
