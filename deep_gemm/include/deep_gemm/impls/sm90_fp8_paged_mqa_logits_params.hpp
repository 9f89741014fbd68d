// The parameters of every paged MQA logits kernel instance (sm90_fp8_paged_mqa_logits.cuh), written once
// (common/abi.hpp says how the lists are used): three tensor maps and the runtime arguments in one struct (Args),
// passed by value. The generated entry point declares them and passes them, in this order, to
// paged_mqa_logits_impl; the host (csrc/jit_kernels/impls/sm90_fp8_paged_mqa_logits.cpp) fills the struct below
// and launches with its fields' addresses. Plain C++: host and device compilers read it alike.
#pragma once

#include "../common/abi.hpp"

namespace deep_gemm::paged_mqa {

// Runtime arguments shared by both roles of the kernel.
struct Args {
    const int* context_lens;   // [B] (1-D) or [B, kNextN] contiguous (2-D)
    const int* block_table;    // [B, table_width], row stride table_stride
    const int* schedule;       // [grid + 1, 2] int32: (batch, page) of each SM's first unit
    const float* weights;      // [B * kNextN, H] contiguous
    const u8* kv_cache;        // page p at kv_cache + p * page_stride
    void* logits;              // [B * kNextN, max_context_len], row stride logits_stride
    long long page_stride, logits_stride;
    int batch, num_pages, table_width, table_stride, max_context_len;
};

}  // namespace deep_gemm::paged_mqa

// tmap_q: q as [B * next_n * H, 128] bytes; tmap_kv: the pages' FP8 rows; tmap_sf: the pages' scales.
#define DG_SM90_FP8_PAGED_MQA_LOGITS_PARAMS(TMAP, X, SEP) \
    TMAP(tmap_q) SEP() TMAP(tmap_kv) SEP() TMAP(tmap_sf) SEP() X(const deep_gemm::paged_mqa::Args, args)

namespace deep_gemm {

DG_DEFINE_KERNEL_PARAMS(Sm90Fp8PagedMqaLogitsParams, DG_SM90_FP8_PAGED_MQA_LOGITS_PARAMS);

}  // namespace deep_gemm
