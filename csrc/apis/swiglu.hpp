// Fused SwiGLU -> FP8 quantisation (swiglu_apply_weight_to_fp8) and plain per-token FP8 quantisation
// (apply_weight_to_fp8): validation, output allocation (real and meta/fake) and the launch of the JIT
// kernel csrc/jit_kernels/impls/swiglu_fp8_quant. The arithmetic is stated in the kernel header.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>
#include <tuple>

namespace deep_gemm::api {

struct QuantOptions {
    int64_t num_per_channels = 128;
    bool use_col_major_scales = true;
    bool round_scale = false;
    bool ue8m0_scale = false;
    std::optional<double> clamp_value;
    std::string_view fmt = "e4m3";
    std::optional<int64_t> num_sms;
    bool fast_math = true;
};

// (y, y_sf, y_bf16); y_bf16 is an empty bfloat16 tensor unless output_bf16.
// `fake`: meta/fake tensors (validation and output shapes only, symbolic T allowed).
std::tuple<at::Tensor, at::Tensor, at::Tensor> swiglu_apply_weight_to_fp8(
    const at::Tensor& x, const std::optional<at::Tensor>& topk_weights, const std::optional<at::Tensor>& avail_tokens,
    const QuantOptions& options, bool output_bf16, bool fake);

// Quantises x [T, H] into `out` (float8_e4m3fn [T, H]) and returns the scales.
at::Tensor apply_weight_to_fp8(const at::Tensor& x, const at::Tensor& out, const std::optional<at::Tensor>& topk_weights,
                               const std::optional<at::Tensor>& avail_tokens, const QuantOptions& options, bool fake);

}  // namespace deep_gemm::api
