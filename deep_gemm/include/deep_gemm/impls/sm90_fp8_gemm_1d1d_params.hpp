// The parameters of every FP8 1D1D GEMM kernel instance (sm90_fp8_gemm_1d1d.cuh), written once (common/abi.hpp
// says how the lists are used): the generated entry point declares them and passes them, in this order, to
// sm90_fp8_gemm_1d1d_impl; the host (csrc/jit_kernels/impls/sm90_fp8_gemm_1d1d.cpp) fills the struct below and
// launches with its fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

// d and c are FP32 (c null without a C operand).
#define DG_SM90_FP8_GEMM_1D1D_PARAMS(TMAP, X, SEP)                                                                \
    TMAP(tmap_a) SEP() TMAP(tmap_b) SEP() TMAP(tmap_sfa) SEP() TMAP(tmap_sfb) SEP() X(float*, d) SEP()           \
    X(const float*, c) SEP() X(unsigned int, ldd) SEP() X(unsigned int, ldc) SEP() X(unsigned int, m) SEP()      \
    X(unsigned int, n) SEP() X(unsigned int, k)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d1dParams, DG_SM90_FP8_GEMM_1D1D_PARAMS);

}  // namespace deep_gemm
