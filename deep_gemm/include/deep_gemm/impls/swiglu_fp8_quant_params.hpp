// The parameters of every (SwiGLU ->) FP8 quantisation kernel instance (swiglu_fp8_quant.cuh), written once
// (common/abi.hpp says how the lists are used): the generated entry point declares them and passes them, in this
// order, to fp8_quant; the host (csrc/jit_kernels/impls/swiglu_fp8_quant.cpp) fills the struct below and launches
// with its fields' addresses. The input's element type is the instance's: the generated source defines
// DG_SWIGLU_INPUT_T (__nv_bfloat16, __half or float) before it includes the kernel; the host holds the input and
// the BF16 output as void*.
#pragma once

#include "../common/abi.hpp"

#define DG_SWIGLU_FP8_QUANT_PARAMS(TMAP, X, SEP)                                                                 \
    X(const DG_DEVICE_TYPE(DG_SWIGLU_INPUT_T)* __restrict__, x) SEP() X(long long, x_stride) SEP()              \
    X(unsigned char* __restrict__, y) SEP() X(long long, y_stride) SEP() X(void* __restrict__, sf) SEP()        \
    X(long long, sf_stride) SEP() X(DG_DEVICE_TYPE(__nv_bfloat16)* __restrict__, y_bf16) SEP()                 \
    X(long long, y_bf16_stride) SEP() X(const float* __restrict__, weights) SEP()                               \
    X(const int* __restrict__, avail_tokens) SEP() X(int, num_tokens) SEP() X(int, hidden) SEP()                \
    X(int, num_groups) SEP() X(float, clamp)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(SwigluFp8QuantParams, DG_SWIGLU_FP8_QUANT_PARAMS);

}  // namespace deep_gemm
