// The parameters of every BF16 GEMM kernel instance (sm90_bf16_gemm.cuh), written once (common/abi.hpp says how
// the lists are used): the generated entry point declares them and passes them, in this order, to
// sm90_bf16_gemm_impl; the host (csrc/jit_kernels/impls/sm90_bf16_gemm.cpp) fills the struct below and launches
// with its fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

// tmap_d is read by the TMA-store epilogue only (zeroed for the others); c is null without a C operand; grouped is
// the grouped mode's int32 array (grouped_layout / masked_m / ks), else null.
#define DG_SM90_BF16_GEMM_PARAMS(TMAP, X, SEP)                                                                  \
    TMAP(tmap_a) SEP() TMAP(tmap_b) SEP() TMAP(tmap_d) SEP() X(void*, d) SEP() X(unsigned int, ldd) SEP()      \
    X(const void*, c) SEP() X(unsigned int, ldc) SEP() X(const int*, grouped) SEP() X(unsigned int, m) SEP()   \
    X(unsigned int, n) SEP() X(unsigned int, k) SEP() X(unsigned int, num_groups)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Bf16GemmParams, DG_SM90_BF16_GEMM_PARAMS);

}  // namespace deep_gemm
