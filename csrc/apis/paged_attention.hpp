// Paged MQA logits of the sparse-attention indexer (DeepGEMM's get_paged_mqa_logits_metadata and
// fp8(_fp4)_paged_mqa_logits): validation, the schedule, output allocation (real and meta/fake) and the
// launch of the JIT kernel csrc/jit_kernels/impls/sm90_fp8_paged_mqa_logits. docs/paged_mqa_logits.md
// states the semantics and the schedule layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "../jit/jit.hpp"

namespace deep_gemm::api {

// int32 [num_sms + 1, 2] on context_lens' device: row i = (batch, page) of SM i's first work unit, row
// num_sms = (B, 0). Built with tensor ops on the device (no host sync; CUDA-graph capturable); CPU tensors
// work too. `fake`: shape only.
at::Tensor get_paged_mqa_logits_metadata(const at::Tensor& context_lens, int64_t block_kv, int64_t num_sms,
                                         const std::optional<at::Tensor>& indices, bool fake);

// Logits [B * next_n, max_context_len] (float32, or bfloat16 with logits_bf16). `q_sf` (FP4 q) and `indices`
// (varlen) are SM100-only: NotImplementedError.
at::Tensor fp8_paged_mqa_logits(const at::Tensor& q, const std::optional<at::Tensor>& q_sf, const at::Tensor& kv_cache,
                                const at::Tensor& weights, const at::Tensor& context_lens, const at::Tensor& block_table,
                                const at::Tensor& schedule_meta, int64_t max_context_len, bool clean_logits, bool logits_bf16,
                                const std::optional<at::Tensor>& indices, bool fake);

// The generated source of one kernel config (for compile-only builds without a GPU: tests, SASS checks).
jit::KernelSource paged_mqa_logits_kernel_source(int num_heads, int next_n, bool lens_2d, bool clean, bool bf16_logits, int block_kv);

}  // namespace deep_gemm::api
