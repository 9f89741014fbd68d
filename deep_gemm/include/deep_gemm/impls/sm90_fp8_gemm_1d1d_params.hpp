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
    int k[kMaxGroups];            // K_g, a multiple of 16; 0: the group's tiles store C or zeros
};

#if defined(__CUDACC__)
#define DG_K_GROUPED_HOST_DEVICE __host__ __device__
#else
#define DG_K_GROUPED_HOST_DEVICE
#endif

// The 128-K scale blocks (rows of sfa / sfb) a K-grouped group of K `k` owns: ceil(align(k, sf_k_align) / 128).
// sf_k_align 128 is the compact layout (ceil(k / 128): a partial last K block has a scale of its own); the
// padded layout (use_padded_sf_layout) rounds each group up to the caller's K alignment first. A group's
// blocks follow the previous groups' (host: the launch and the checks; device: kernels with kSfKAlign != 0).
DG_K_GROUPED_HOST_DEVICE constexpr unsigned long long k_grouped_scale_blocks(unsigned long long k, unsigned sf_k_align) {
    return ((k + sf_k_align - 1) / sf_k_align * sf_k_align + 127) / 128;
}

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d1dParams, DG_SM90_FP8_GEMM_1D1D_PARAMS);

// K-grouped: d and c are [num_groups, m, n] FP32 (row stride n); scale_k_block0 is the first group's first scale
// block in sfa / sfb (non-zero for the second and later chunks of a problem with more than kMaxGroups groups).
#define DG_SM90_FP8_GEMM_1D1D_K_GROUPED_PARAMS(TMAP, X, SEP)                                                      \
    TMAP(tmap_sfa) SEP() TMAP(tmap_sfb) SEP() X(DG_GRID_CONSTANT(deep_gemm::Sm90Fp8KGroupedMaps), groups) SEP()  \
    X(float*, d) SEP() X(const float*, c) SEP() X(unsigned int, m) SEP() X(unsigned int, n) SEP()                  \
    X(unsigned int, num_groups) SEP() X(unsigned int, scale_k_block0)

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d1dKGroupedParams, DG_SM90_FP8_GEMM_1D1D_K_GROUPED_PARAMS);

}  // namespace deep_gemm
