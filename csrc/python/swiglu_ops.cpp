// torch.library ops and fast-path entries of the fused FP8 quantisation (csrc/apis/swiglu.hpp). Kept in
// its own library fragment so the GEMM registrations (torch_library.cpp) stay untouched.
#include "python/swiglu_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "apis/common.hpp"
#include "apis/swiglu.hpp"
#include "python/fast_args.hpp"
#include "python/jit_tools.hpp"
#include "python/op_table.hpp"
#include "python/torch_ops.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Opt = std::optional<at::Tensor>;
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

api::QuantOptions options(int64_t num_per_channels, bool col_major, bool round_scale, bool ue8m0, std::optional<double> clamp,
                          std::string_view fmt, std::optional<int64_t> num_sms, bool fast_math) {
    api::QuantOptions o;
    o.num_per_channels = num_per_channels;
    o.use_col_major_scales = col_major;
    o.round_scale = round_scale;
    o.ue8m0_scale = ue8m0;
    o.clamp_value = clamp;
    o.fmt = fmt;
    o.num_sms = num_sms;
    o.fast_math = fast_math;
    return o;
}

template <bool kFake>
Triple swiglu_kernel(const at::Tensor& x, const Opt& w, const Opt& avail, int64_t npc, bool col_major, bool round_scale, bool ue8m0,
                     std::optional<double> clamp, std::string_view fmt, std::optional<int64_t> num_sms, bool output_bf16, bool fast_math) {
    return api::swiglu_apply_weight_to_fp8(x, w, avail, options(npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, fast_math),
                                           output_bf16, kFake);
}

template <bool kFake>
at::Tensor apply_kernel(const at::Tensor& x, const at::Tensor& out, const Opt& w, const Opt& avail, int64_t npc, bool col_major,
                        bool round_scale, bool ue8m0, std::optional<double> clamp, std::string_view fmt, std::optional<int64_t> num_sms,
                        bool fast_math) {
    return api::apply_weight_to_fp8(x, out, w, avail, options(npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, fast_math), kFake);
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
Triple swiglu_entry(const at::Tensor& x, const Opt& w, const Opt& avail, const py::object& npc_obj, bool col_major, bool round_scale,
                    bool ue8m0, std::optional<double> clamp, const std::string& fmt, const py::object& num_sms_obj, bool output_bf16,
                    bool fast_math) {
    const char* name = "swiglu_apply_weight_to_fp8";
    const int64_t npc = int64_arg(name, "num_per_channels", npc_obj);
    const std::optional<int64_t> num_sms = opt_int64_arg(name, "num_sms", num_sms_obj);
    if (plain_tensors({&x, opt_ptr(w), opt_ptr(avail)})) {
        py::gil_scoped_release no_gil;
        return swiglu_kernel<false>(x, w, avail, npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, output_bf16, fast_math);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::swiglu_apply_weight_to_fp8", "")
                               .typed<Triple(const at::Tensor&, const Opt&, const Opt&, int64_t, bool, bool, bool, std::optional<double>,
                                             std::string_view, std::optional<int64_t>, bool, bool)>();
    return op.call(x, w, avail, npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, output_bf16, fast_math);
}

at::Tensor apply_entry(const at::Tensor& x, const at::Tensor& out, const Opt& w, const Opt& avail, const py::object& npc_obj,
                       bool col_major, bool round_scale, bool ue8m0, std::optional<double> clamp, const std::string& fmt,
                       const py::object& num_sms_obj, bool fast_math) {
    const char* name = "apply_weight_to_fp8";
    const int64_t npc = int64_arg(name, "num_per_channels", npc_obj);
    const std::optional<int64_t> num_sms = opt_int64_arg(name, "num_sms", num_sms_obj);
    if (plain_tensors({&x, &out, opt_ptr(w), opt_ptr(avail)})) {
        py::gil_scoped_release no_gil;
        return apply_kernel<false>(x, out, w, avail, npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, fast_math);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::apply_weight_to_fp8", "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const Opt&, const Opt&, int64_t, bool, bool, bool,
                                                 std::optional<double>, std::string_view, std::optional<int64_t>, bool)>();
    return op.call(x, out, w, avail, npc, col_major, round_scale, ue8m0, clamp, fmt, num_sms, fast_math);
}

// Builds one kernel config for sm_90a without a GPU (the compile-only SASS test); returns the cache entry.
py::dict compile_quant_kernel(const std::string& input, bool swiglu, int group, const std::string& sf_layout, bool round_scale,
                              bool weights, bool clamp, bool output_bf16, bool fast_math) {
    return build_entry(api::quant_kernel_source(input, swiglu, group, sf_layout, round_scale, weights, clamp, output_bf16, fast_math),
                       "sm_90a");
}

}  // namespace

void register_quant_entries(py::module_& m) {
    m.def("_compile_quant_kernel", &compile_quant_kernel, py::arg("input"), py::arg("swiglu"), py::arg("group"), py::arg("sf_layout"),
          py::arg("round_scale"), py::arg("weights"), py::arg("clamp"), py::arg("output_bf16"), py::arg("fast_math"));
    m.def("swiglu_apply_weight_to_fp8", &swiglu_entry, py::arg("x"), py::arg("topk_weights"), py::arg("avail_tokens"),
          py::arg("num_per_channels"), py::arg("use_col_major_scales"), py::arg("round_scale"), py::arg("ue8m0_scale"),
          py::arg("clamp_value") = py::none(), py::arg("fmt") = "e4m3", py::arg("num_sms") = py::none(), py::arg("output_bf16") = false,
          py::arg("fast_math") = true, "Fused SwiGLU -> FP8; see deep_gemm.swiglu_apply_weight_to_fp8 (always returns 3 tensors).");
    m.def("apply_weight_to_fp8", &apply_entry, py::arg("x"), py::arg("out"), py::arg("topk_weights") = py::none(),
          py::arg("avail_tokens") = py::none(), py::arg("num_per_channels") = 128, py::arg("use_col_major_scales") = true,
          py::arg("round_scale") = false, py::arg("ue8m0_scale") = false, py::arg("clamp_value") = py::none(), py::arg("fmt") = "e4m3",
          py::arg("num_sms") = py::none(), py::arg("fast_math") = true, "Per-token FP8 quantisation; see deep_gemm.apply_weight_to_fp8.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor under
// torch.compile): validation and the outputs' shapes and scale layouts.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    def_op(m, schema_text(table::row("swiglu_apply_weight_to_fp8")),
           TORCH_FN(swiglu_kernel<false>), TORCH_FN(swiglu_kernel<true>));
    def_op(m, schema_text(table::row("apply_weight_to_fp8")),
           TORCH_FN(apply_kernel<false>), TORCH_FN(apply_kernel<true>));
}
