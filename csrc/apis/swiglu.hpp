// Fused SwiGLU -> FP8 quantisation (swiglu_apply_weight_to_fp8) and plain per-token FP8 quantisation
// (apply_weight_to_fp8): validation, output allocation (real and meta/fake) and the launch of the JIT
// kernel csrc/jit_kernels/impls/swiglu_fp8_quant. The arithmetic is stated in the kernel header.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "../jit/jit.hpp"

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

// The generated source of one kernel config (for compile-only builds without a GPU): `input` "bf16", "fp16" or
// "fp32", `sf_layout` "col", "row" or "ue8m0".
jit::KernelSource quant_kernel_source(std::string_view input, bool swiglu, int group, std::string_view sf_layout, bool round_scale,
                                      bool weights, bool clamp, bool output_bf16, bool fast_math);

}  // namespace deep_gemm::api
