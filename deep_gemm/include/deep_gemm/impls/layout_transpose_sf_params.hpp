// The parameters of the scale-factor layout kernel (layout_transpose_sf.cuh), written once (common/abi.hpp says
// how the lists are used): the generated entry point declares them and passes them, in this order, to
// transpose_sf_into_mn_major; the host (csrc/jit_kernels/impls/layout_transpose_sf.cpp) fills the struct below
// and launches with its fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

#define DG_LAYOUT_TRANSPOSE_SF_PARAMS(TMAP, X, SEP)                                                                \
    X(const float* __restrict__, in) SEP() X(float* __restrict__, out) SEP() X(int, m) SEP() X(int, k) SEP()      \
    X(int, aligned_m) SEP() X(long long, in_stride_g) SEP() X(long long, in_stride_m) SEP()                       \
    X(long long, in_stride_k)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(LayoutTransposeSfParams, DG_LAYOUT_TRANSPOSE_SF_PARAMS);

}  // namespace deep_gemm
