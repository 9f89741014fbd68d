// The sparse-attention indexer's MQA-logits ops (DeepGEMM's fp8_mqa_logits / fp8_fp4_mqa_logits and the
// 2.8 get_mqa_logits_metadata): validation, output allocation (real and meta/fake) and the launch of the
// JIT kernel csrc/jit_kernels/impls/sm90_fp8_mqa_logits. The arithmetic is stated in the kernel header
// deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh; the ops in docs/mqa_logits.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "../jit/jit.hpp"

namespace deep_gemm::api {

// logits [S, S_kv] (max_seqlen_k == 0) or [S, max_seqlen_k] (compressed), float32 or bfloat16, contiguous.
// `q_sf` given (an FP4 q) raises NotImplementedError (SM100 only). `schedule_meta` is accepted and not
// read (the kernel derives its schedule from ks / ke itself). `fake`: meta/fake tensors.
at::Tensor fp8_mqa_logits(const at::Tensor& q, const std::optional<at::Tensor>& q_sf, const at::Tensor& kv, const at::Tensor& kv_sf,
                          const at::Tensor& weights, const at::Tensor& ks, const at::Tensor& ke, bool clean_logits,
                          int64_t max_seqlen_k, at::ScalarType logits_dtype, const std::optional<at::Tensor>& schedule_meta,
                          bool fake);

// int32 [ceil(S / (256 / num_heads)), 2]: per CTA of the kernel (256 / num_heads consecutive queries), the
// union [start, end) of its queries' ks / ke ranges clamped to [0, num_kv_tokens] ([0, 0] when all are
// empty), i.e. the kv rows that CTA computes.
at::Tensor get_mqa_logits_metadata(const at::Tensor& ks, const at::Tensor& ke, int64_t num_kv_tokens, int64_t num_heads, bool fake);

// The generated source of one kernel config (for compile-only builds without a GPU: tests, SASS checks).
jit::KernelSource mqa_logits_kernel_source(int num_heads, int head_dim, bool bf16_logits, bool compressed, bool clean);

}  // namespace deep_gemm::api
