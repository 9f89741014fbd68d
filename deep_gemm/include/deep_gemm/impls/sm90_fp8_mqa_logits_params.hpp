// The parameters of every MQA logits kernel instance (sm90_fp8_mqa_logits.cuh), written once (common/abi.hpp
// says how the lists are used): the generated entry point declares them and passes them, in this order, to
// sm90_fp8_mqa_logits_impl; the host (csrc/jit_kernels/impls/sm90_fp8_mqa_logits.cpp) fills the struct below and
// launches with its fields' addresses. The logits' element type is the instance's: the generated source defines
// DG_MQA_LOGITS_T (float or __nv_bfloat16) before it includes the kernel; the host holds the pointer as void*.
#pragma once

#include "../common/abi.hpp"

#define DG_SM90_FP8_MQA_LOGITS_PARAMS(TMAP, X, SEP)                                                              \
    TMAP(tmap_q) SEP() TMAP(tmap_kv) SEP() X(const float*, kv_scale) SEP() X(const float*, weights) SEP()       \
    X(unsigned long long, ld_w) SEP() X(const int*, ks) SEP() X(const int*, ke) SEP()                           \
    X(DG_DEVICE_TYPE(DG_MQA_LOGITS_T)*, logits) SEP() X(unsigned long long, ld_logits) SEP()                   \
    X(unsigned, seq_len) SEP() X(unsigned, seq_len_kv) SEP() X(unsigned, num_cols)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8MqaLogitsParams, DG_SM90_FP8_MQA_LOGITS_PARAMS);

}  // namespace deep_gemm
