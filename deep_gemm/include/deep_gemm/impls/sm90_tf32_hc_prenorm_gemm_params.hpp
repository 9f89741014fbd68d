// The parameters of every HC-prenorm GEMM kernel instance (sm90_tf32_hc_prenorm_gemm.cuh), written once
// (common/abi.hpp says how the lists are used): the generated entry point declares them and passes them, in this
// order, to tf32_hc_prenorm_gemm; the host (csrc/jit_kernels/impls/sm90_tf32_hc_prenorm_gemm.cpp) fills the struct
// below and launches with its fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

// workspace / counters: the split-K partials and tile counters when the K blocks are reduced over CTAs, else null.
#define DG_SM90_TF32_HC_PRENORM_GEMM_PARAMS(TMAP, X, SEP)                                                           \
    TMAP(tmap_a) SEP() TMAP(tmap_b) SEP() X(float*, d) SEP() X(long long, d_row_stride) SEP()                      \
    X(long long, d_split_stride) SEP() X(float*, sqr_sum) SEP() X(long long, s_split_stride) SEP() X(int, m) SEP() \
    X(int, n) SEP() X(unsigned, num_k_blocks) SEP() X(unsigned, num_splits) SEP() X(unsigned, reduce) SEP()        \
    X(float*, workspace) SEP() X(unsigned*, counters)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Tf32HcPrenormGemmParams, DG_SM90_TF32_HC_PRENORM_GEMM_PARAMS);

}  // namespace deep_gemm
