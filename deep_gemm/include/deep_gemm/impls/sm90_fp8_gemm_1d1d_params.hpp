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

// The groups of one K-grouped launch (k_grouped_fp8_gemm_nt_contiguous), in the kernel's parameters: group g's
// A [M, K_g] and B [N, K_g] are separate row-major blocks (their row strides differ), so each has its own tensor
// maps, indexed by the group at run time. 32 groups make 8.3 KB of parameters (CUDA 12.1+ takes up to 32 KB on
// sm_70+); the host launches a problem with more groups in chunks of 32.
struct alignas(64) Sm90Fp8KGroupedMaps {
    static constexpr unsigned int kMaxGroups = 32;
    TmaDescriptor a[kMaxGroups];  // unset for empty groups (K_g == 0: no loads)
    TmaDescriptor b[kMaxGroups];
    int k[kMaxGroups];            // K_g, a multiple of 128; 0: the group's tiles store C or zeros
};

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d1dParams, DG_SM90_FP8_GEMM_1D1D_PARAMS);

// K-grouped: d and c are [num_groups, m, n] FP32 (row stride n); scale_k_block0 is the first group's K offset / 128
// in sfa / sfb (non-zero for the second and later chunks of a problem with more than kMaxGroups groups).
#define DG_SM90_FP8_GEMM_1D1D_K_GROUPED_PARAMS(TMAP, X, SEP)                                                      \
    TMAP(tmap_sfa) SEP() TMAP(tmap_sfb) SEP() X(DG_GRID_CONSTANT(deep_gemm::Sm90Fp8KGroupedMaps), groups) SEP()  \
    X(float*, d) SEP() X(const float*, c) SEP() X(unsigned int, m) SEP() X(unsigned int, n) SEP()                  \
    X(unsigned int, num_groups) SEP() X(unsigned int, scale_k_block0)

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d1dKGroupedParams, DG_SM90_FP8_GEMM_1D1D_K_GROUPED_PARAMS);

}  // namespace deep_gemm
