// einsum (DeepGEMM's BF16 einsum): three expressions, each one JIT launch of the SM90 BF16 GEMM kernel with an
// einsum scheduler (deep_gemm/include/deep_gemm/scheduler/einsum_scheduler.cuh), or, with use_cublaslt, a
// loop of cublaslt_gemm_nt / _nn calls (csrc/apis/cublaslt.hpp). docs/einsum.md describes the forms.
//   'bmk,bnk->mn'   a [S, M, K], b [S, N, K] bf16; d [M, N] float32 (c optional, may be d) or bfloat16
//                   (no c): d = c + sum_s a[s] @ b[s]^T
//   'bhr,hdr->bhd'  x [B, H, R], y [H, D, R], z [B, H, D] bf16: z[:, h] = x[:, h] @ y[h]^T
//   'bhd,hdr->bhr'  x [B, H, D], y [H, D, R], z [B, H, R] bf16: z[:, h] = x[:, h] @ y[h]
// y may be a strided slice (e.g. fy[:, :, :r]) wherever TMA can address it (16-byte aligned base and strides).
// Errors: TypeError (dtypes), ValueError (expression, shapes, strides, alignment, overlap), RuntimeError
// (devices), raised before any compile or launch.
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/util/ArrayRef.h>

#include <optional>
#include <string_view>

namespace deep_gemm::api {

enum class EinsumForm { kBatchReduced, kHeadsNt, kHeadsNn };

// The form of `expr` (spaces ignored); ValueError naming the supported expressions otherwise.
EinsumForm parse_einsum_expr(const char* op, std::string_view expr);

// Validates, then (unless `fake`: meta/fake tensors, validation only) runs on the current stream.
void einsum(std::string_view expr, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
            const std::optional<at::Tensor>& c, bool use_cublaslt, bool fake);

// fp8_einsum('bhr,hdr->bhd'): x = a [B, H, R] e4m3 with sfa float32 [B, H, ceil(R / 128)] (per token and 128
// channels), y = b [H, D, R] e4m3 (strided slices as for einsum) with sfb float32 [H, ceil(D / 128), ceil(R / 128)]
// (packed, per 128x128 block), d = z [B, H, D] bfloat16; recipe (1, 128, 128). One SM90 FP8 1D2D kernel launch
// (head-batched scheduler) after one transposing copy of sfa into the kernel's M-major layout.
void fp8_einsum(std::string_view expr, const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb,
                const at::Tensor& d, const std::optional<at::Tensor>& c, c10::IntArrayRef recipe, bool fake);

}  // namespace deep_gemm::api
