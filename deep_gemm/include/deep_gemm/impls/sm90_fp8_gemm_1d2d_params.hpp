// The parameters of every FP8 1D2D GEMM kernel instance (sm90_fp8_gemm_1d2d.cuh), written once (common/abi.hpp
// says how the lists are used): the generated entry point declares them and passes them, in this order, to
// sm90_fp8_gemm_1d2d_impl; the host (csrc/jit_kernels/impls/sm90_fp8_gemm_1d2d.cpp) fills the structs below and
// launches with their fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

// tmap_d is read by the TMA-store epilogue only (zeroed for the others); c is null without a C operand; grouped is
// the grouped mode's int32 array (grouped_layout / masked_m), else null.
#define DG_SM90_FP8_GEMM_1D2D_PARAMS(TMAP, X, SEP)                                                                    \
    TMAP(tmap_a) SEP() TMAP(tmap_b) SEP() TMAP(tmap_sfa) SEP() TMAP(tmap_d) SEP() X(const float*, sfb) SEP()        \
    X(void*, d) SEP() X(unsigned int, ldd) SEP() X(const void*, c) SEP() X(unsigned int, ldc) SEP()                 \
    X(const int*, grouped) SEP() X(unsigned int, m) SEP() X(unsigned int, n) SEP() X(unsigned int, k) SEP()         \
    X(unsigned int, num_groups)
// Split-K kernels add the FP32 partial tiles and one zeroed counter per tile (split_k_workspace.hpp).
#define DG_SM90_FP8_GEMM_1D2D_SPLIT_K_PARAMS(TMAP, X, SEP) \
    DG_SM90_FP8_GEMM_1D2D_PARAMS(TMAP, X, SEP) SEP() X(float*, split_ws) SEP() X(unsigned int*, split_counters)
// Masked kernels with tile signals (enable_overlap) add the int32 counters (epilogue/tile_signal.cuh).
#define DG_SM90_FP8_GEMM_1D2D_SIGNAL_PARAMS(TMAP, X, SEP) \
    DG_SM90_FP8_GEMM_1D2D_PARAMS(TMAP, X, SEP) SEP() X(int*, tile_signal)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d2dParams, DG_SM90_FP8_GEMM_1D2D_PARAMS);
DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d2dSplitKParams, DG_SM90_FP8_GEMM_1D2D_SPLIT_K_PARAMS);
DG_DEFINE_KERNEL_PARAMS(Sm90Fp8Gemm1d2dSignalParams, DG_SM90_FP8_GEMM_1D2D_SIGNAL_PARAMS);

}  // namespace deep_gemm
