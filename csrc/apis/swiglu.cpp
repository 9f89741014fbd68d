#include "swiglu.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "../jit_kernels/impls/swiglu_fp8_quant.hpp"
#include "common.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

using kernels::QuantConfig;
using kernels::QuantInput;
using kernels::QuantSfLayout;

int64_t concrete(const c10::SymInt& s) { return s.maybe_as_int().value_or(kUnknown); }

// The kernel reads and writes 16-byte vectors: unit inner stride, 16-byte row strides and base.
void check_vector_rows(const Checker& check, const at::Tensor& t, const char* name) {
    if (t.dim() != 2 or t.sym_numel() == 0) return;
    const int64_t elem = static_cast<int64_t>(t.element_size());
    const int64_t inner = concrete(t.sym_stride(1)), outer = concrete(t.sym_stride(0));
    const int64_t cols = concrete(t.sym_size(1)), rows = concrete(t.sym_size(0));
    if (known(inner) and inner != 1 and cols > 1)
        check.value_error(fmt::format("{} must have unit stride along dim 1 (row-major rows); got strides {}", name,
                                      make_view(t, name).stride_str()));
    if (known(outer) and rows > 1 and (outer * elem) % 16 != 0)
        check.value_error(fmt::format("{} row stride must be a multiple of 16 bytes ({} elements); got {}", name, 16 / elem, outer));
    if (check.mode() == CheckMode::kReal) {
        const auto addr = reinterpret_cast<uintptr_t>(t.const_data_ptr());
        if (addr % 16 != 0) check.value_error(fmt::format("{} data pointer must be 16-byte aligned; got address {:#x}", name, addr));
    } else {
        const int64_t offset = concrete(t.sym_storage_offset());
        if (known(offset) and (offset * elem) % 16 != 0)
            check.value_error(fmt::format("{} must start 16-byte aligned; got a storage offset of {} elements", name, offset));
    }
}

void check_same_device(const Checker& check, const at::Tensor& x, const at::Tensor* t, const char* name) {
    if (t == nullptr or not t->defined()) return;
    if (t->device() != x.device())
        check.runtime_error(fmt::format("all tensors must be on one device; x is on {} but {} is on {}", device_name(x), name,
                                        device_name(*t)));
}

// After every argument check, so CPU tensors still get the specific errors first.
void require_cuda(const Checker& check, const at::Tensor& x) {
    if (not x.is_cuda()) check.runtime_error(fmt::format("requires CUDA tensors; x is on {}", device_name(x)));
}

const at::Tensor* opt(const std::optional<at::Tensor>& t) { return t.has_value() and t->defined() ? &*t : nullptr; }

struct Plan {
    QuantConfig config;
    c10::SymInt tokens;
    int64_t hidden = 0, groups = 0;
};

// Everything both ops check; `x_cols_per_h` is 2 for SwiGLU ([T, 2H]), 1 otherwise.
Plan check_common(const Checker& check, const at::Tensor& x, const at::Tensor* weights, const at::Tensor* avail,
                  const QuantOptions& o, bool swiglu) {
    check.strided(x, "x");
    if (weights != nullptr) check.strided(*weights, "topk_weights");
    if (avail != nullptr) check.strided(*avail, "avail_tokens");
    check.dtype_in(x, "x", {at::kBFloat16, at::kHalf, at::kFloat});
    if (x.dim() != 2) check.value_error(fmt::format("x must be 2-D [T, {}]; got {}-D", swiglu ? "2H" : "H", x.dim()));
    const std::string x_shape = make_view(x, "x").shape_str();
    if (o.fmt != "e4m3") check.value_error(fmt::format("fmt must be \"e4m3\" (the only FP8 format the SM90 GEMMs take); got \"{}\"", o.fmt));
    const int64_t npc = o.num_per_channels;
    if (npc < 16 or npc > 512 or (npc & (npc - 1)) != 0)
        check.value_error(fmt::format("num_per_channels must be a power of two in [16, 512]; got {}", npc));
    if (o.ue8m0_scale and not o.round_scale)
        check.value_error("ue8m0_scale needs round_scale=True (UE8M0 stores power-of-two scales); got round_scale=False");
    if (o.ue8m0_scale and not o.use_col_major_scales)
        check.value_error("ue8m0_scale needs use_col_major_scales=True (packed UE8M0 scales are M-major); got False");
    if (o.clamp_value and not(*o.clamp_value > 0.0 and std::isfinite(*o.clamp_value)))
        check.value_error(fmt::format("clamp_value must be a positive finite number; got {}", *o.clamp_value));
    if (o.num_sms and *o.num_sms <= 0) check.value_error(fmt::format("num_sms must be positive; got {}", *o.num_sms));
    if (o.num_sms) check.fits_int32(*o.num_sms, "num_sms");  // launch() casts it to int

    Plan plan;
    plan.tokens = x.sym_size(0);
    // The row length selects the group count and the output shapes: specialise on it (a guard under
    // torch.compile with dynamic shapes; T stays symbolic).
    const int64_t cols = x.sym_size(1).guard_int(__FILE__, __LINE__);
    if (swiglu) {
        if (cols % (2 * npc) != 0)
            check.value_error(fmt::format("x.shape[1] = 2H must be divisible by 2 * num_per_channels = {}; got shape {}", 2 * npc, x_shape));
        plan.hidden = cols / 2;
    } else {
        plan.hidden = cols;
    }
    if (plan.hidden <= 0 or plan.hidden % 16 != 0)
        check.value_error(fmt::format("H must be a positive multiple of 16; got H = {} (x shape {})", plan.hidden, x_shape));
    if (plan.hidden > (int64_t{1} << 30)) check.value_error(fmt::format("H is too large; got {}", plan.hidden));
    const int64_t tokens = concrete(plan.tokens);
    if (known(tokens) and tokens > (int64_t{1} << 30)) check.value_error(fmt::format("T is too large; got {}", tokens));
    plan.groups = (plan.hidden + npc - 1) / npc;
    check_vector_rows(check, x, "x");

    if (weights != nullptr) {
        check.dtype(*weights, "topk_weights", at::kFloat);
        if (weights->dim() != 1 or (known(tokens, concrete(weights->sym_size(0))) and concrete(weights->sym_size(0)) != tokens))
            check.value_error(fmt::format("topk_weights must be 1-D [T] with T = x.shape[0]; got shape {} for x shape {}",
                                          make_view(*weights, "topk_weights").shape_str(), x_shape));
        const int64_t s = concrete(weights->sym_stride(0));
        if (known(s) and s != 1 and concrete(weights->sym_size(0)) > 1)
            check.value_error(fmt::format("topk_weights must be contiguous; got stride {}", s));
    }
    if (avail != nullptr) {
        check.dtype(*avail, "avail_tokens", at::kInt);
        const int64_t n = concrete(avail->sym_numel());
        if (known(n) and n != 1) check.value_error(fmt::format("avail_tokens must hold exactly one int32; got shape {}",
                                                             make_view(*avail, "avail_tokens").shape_str()));
    }
    check_same_device(check, x, weights, "topk_weights");
    check_same_device(check, x, avail, "avail_tokens");

    QuantConfig& c = plan.config;
    c.input = x.scalar_type() == at::kFloat ? QuantInput::kFp32 : x.scalar_type() == at::kHalf ? QuantInput::kFp16 : QuantInput::kBf16;
    c.swiglu = swiglu;
    c.group = static_cast<int>(npc);
    c.sf_layout = o.ue8m0_scale ? QuantSfLayout::kUe8m0 : o.use_col_major_scales ? QuantSfLayout::kColMajor : QuantSfLayout::kRowMajor;
    c.round_scale = o.round_scale;
    c.has_weights = weights != nullptr;
    c.has_clamp = o.clamp_value.has_value();
    c.fast_math = o.fast_math;
    return plan;
}

// Scales for T tokens and S groups. Column-major FP32: a [S, align(T, 4)] buffer returned as its
// transpose's first T rows ([T, S], strides (1, align(T, 4)): the M-major layout the SM90 FP8 GEMMs read
// as sfa without a copy). UE8M0: int32 [T, ceil(S/4)] with the same M-major layout (4 exponents per
// word, group 4j + i in byte i of word j). Row-major: contiguous float32 [T, S].
at::Tensor empty_scales(const at::Tensor& x, const Plan& plan) {
    const c10::SymInt& t = plan.tokens;
    const auto options = x.options();
    switch (plan.config.sf_layout) {
        case QuantSfLayout::kRowMajor:
            return at::empty_symint({t, c10::SymInt(plan.groups)}, options.dtype(at::kFloat));
        case QuantSfLayout::kColMajor: {
            const c10::SymInt aligned = ((t + 3) / 4) * 4;
            return at::empty_strided_symint({aligned, c10::SymInt(plan.groups)}, {c10::SymInt(1), aligned}, options.dtype(at::kFloat))
                .narrow_symint(0, 0, t);
        }
        case QuantSfLayout::kUe8m0: {
            const c10::SymInt aligned = ((t + 3) / 4) * 4;
            const c10::SymInt words((plan.groups + 3) / 4);
            return at::empty_strided_symint({aligned, words}, {c10::SymInt(1), aligned}, options.dtype(at::kInt)).narrow_symint(0, 0, t);
        }
    }
    return {};
}

void launch(const at::Tensor& x, const at::Tensor& y, const at::Tensor& sf, const at::Tensor* y_bf16, const at::Tensor* weights,
            const at::Tensor* avail, const Plan& plan, const QuantOptions& o) {
    const int64_t tokens = concrete(plan.tokens);
    if (tokens == 0) return;
    const int device = x.device().index();
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    kernels::QuantArgs a;
    a.config = plan.config;
    a.config.output_bf16 = y_bf16 != nullptr;
    a.x = x.const_data_ptr();
    a.x_stride = x.stride(0);
    a.y = static_cast<uint8_t*>(y.mutable_data_ptr());
    a.y_stride = y.stride(0);
    a.sf = sf.mutable_data_ptr();
    // Column-major / UE8M0: the distance between groups (words) is stride(1); row-major: between tokens.
    a.sf_stride = plan.config.sf_layout == QuantSfLayout::kRowMajor ? sf.stride(0) : sf.stride(1);
    if (y_bf16 != nullptr) {
        a.y_bf16 = y_bf16->mutable_data_ptr();
        a.y_bf16_stride = y_bf16->stride(0);
    }
    a.weights = weights ? weights->const_data_ptr<float>() : nullptr;
    a.avail_tokens = avail ? avail->const_data_ptr<int>() : nullptr;
    a.num_tokens = static_cast<int>(tokens);
    a.hidden = static_cast<int>(plan.hidden);
    a.num_groups = static_cast<int>(plan.groups);
    a.clamp = o.clamp_value ? static_cast<float>(*o.clamp_value) : 0.0f;
    a.num_sms = o.num_sms ? static_cast<int>(*o.num_sms) : num_sms_for_device(device);
    a.device = device;
    a.stream = current_stream(device);
    kernels::swiglu_fp8_quant(a);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> swiglu_apply_weight_to_fp8(
    const at::Tensor& x, const std::optional<at::Tensor>& topk_weights, const std::optional<at::Tensor>& avail_tokens,
    const QuantOptions& o, bool output_bf16, bool fake) {
    const Checker check("swiglu_apply_weight_to_fp8", fake ? CheckMode::kFake : CheckMode::kReal);
    const Plan plan = check_common(check, x, opt(topk_weights), opt(avail_tokens), o, /*swiglu=*/true);
    const c10::SymInt h(plan.hidden);
    at::Tensor y = at::empty_symint({plan.tokens, h}, x.options().dtype(at::kFloat8_e4m3fn));
    at::Tensor sf = empty_scales(x, plan);
    at::Tensor y_bf16 = output_bf16 ? at::empty_symint({plan.tokens, h}, x.options().dtype(at::kBFloat16))
                                    : at::empty({0}, x.options().dtype(at::kBFloat16));
    if (not fake) require_cuda(check, x);
    if (not fake) launch(x, y, sf, output_bf16 ? &y_bf16 : nullptr, opt(topk_weights), opt(avail_tokens), plan, o);
    return {y, sf, y_bf16};
}

at::Tensor apply_weight_to_fp8(const at::Tensor& x, const at::Tensor& out, const std::optional<at::Tensor>& topk_weights,
                               const std::optional<at::Tensor>& avail_tokens, const QuantOptions& o, bool fake) {
    const Checker check("apply_weight_to_fp8", fake ? CheckMode::kFake : CheckMode::kReal);
    const Plan plan = check_common(check, x, opt(topk_weights), opt(avail_tokens), o, /*swiglu=*/false);
    check.strided(out, "out");
    check.dtype(out, "out", at::kFloat8_e4m3fn);
    const int64_t tokens = concrete(plan.tokens);
    const bool rows_differ = out.dim() == 2 and known(tokens, concrete(out.sym_size(0))) and concrete(out.sym_size(0)) != tokens;
    if (out.dim() != 2 or rows_differ or out.sym_size(1).guard_int(__FILE__, __LINE__) != plan.hidden)
        check.value_error(fmt::format("out must have the shape of x, {}; got {}", make_view(x, "x").shape_str(),
                                      make_view(out, "out").shape_str()));
    check_vector_rows(check, out, "out");
    check_same_device(check, x, &out, "out");
    if (not fake) {
        const View xv = make_view(x, "x"), ov = make_view(out, "out");
        check_no_overlap(check, ov, {&xv});
    }
    if (not fake) require_cuda(check, x);
    at::Tensor sf = empty_scales(x, plan);
    if (not fake) launch(x, out, sf, nullptr, opt(topk_weights), opt(avail_tokens), plan, o);
    return sf;
}


jit::KernelSource quant_kernel_source(std::string_view input, bool swiglu, int group, std::string_view sf_layout, bool round_scale,
                                      bool weights, bool clamp, bool output_bf16, bool fast_math) {
    kernels::QuantConfig c;
    c.input = input == "fp32" ? kernels::QuantInput::kFp32 : input == "fp16" ? kernels::QuantInput::kFp16 : kernels::QuantInput::kBf16;
    c.swiglu = swiglu;
    c.group = group;
    c.sf_layout = sf_layout == "ue8m0" ? kernels::QuantSfLayout::kUe8m0
                  : sf_layout == "row" ? kernels::QuantSfLayout::kRowMajor
                                       : kernels::QuantSfLayout::kColMajor;
    c.round_scale = round_scale;
    c.has_weights = weights;
    c.has_clamp = clamp;
    c.output_bf16 = output_bf16;
    c.fast_math = fast_math;
    return kernels::swiglu_fp8_quant_source(c);
}

}  // namespace deep_gemm::api
