// deep_gemm._C: the pybind11 module. It wires together the parts under csrc/python: fast_args (argument
// binding, exception translation), gemm_table (the GEMM ops' signatures, from which fast_entries and
// torch_library generate the fast path and the torch.ops registrations),
// logging_bridge (the Python logging sink), jit_tools (compile_only, settings, device info), cache_tools
// (cache admin, build_source) and plan_tools (_plan_gemm_call).
#include <torch/extension.h>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "apis/layout.hpp"
#include "apis/runtime.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit/settings.hpp"
#include "python/fast_args.hpp"
#include "python/fast_entries.hpp"
#include "python/jit_tools.hpp"
#include "python/cache_tools.hpp"
#include "python/cublaslt_ops.hpp"
#include "python/einsum_ops.hpp"
#include "python/logging_bridge.hpp"
#include "python/plan_tools.hpp"
#include "python/swiglu_ops.hpp"
#include "python/attention_ops.hpp"
#include "python/hyperconnection_ops.hpp"
#include "python/paged_mqa_ops.hpp"

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

namespace py = pybind11;
using namespace deep_gemm;
using python::compile_only;
using python::device_info;
using python::install_python_logging;
using python::mn_major_entry;
using python::setting_registry;
using python::settings_dict;
using python::transform_sf_entry;
using python::translate_exceptions;
using python::uninstall_python_logging;

// Every op exists twice, sharing one implementation (csrc/apis):
//  * `torch.ops.deep_gemm.<op>`: schema + CPU/CUDA kernels + a Meta kernel (validation only, symbolic
//    sizes allowed) so the ops trace under torch.compile(fullgraph=True) and FakeTensor;
//  * `deep_gemm._C.<op>`: the fast path with DeepGEMM's Python signature ((tensor, scales) pairs).
//    With plain CPU/CUDA tensors it validates and launches directly (no dispatcher, no Python
//    wrapper; the GIL is released); with anything else (meta, fake, subclasses, an active dispatch
//    mode) it forwards to the dispatcher op, so the behaviour is the same.
// deep_gemm/__init__.py exports the fast-path functions and registers torch.compile substitutes that
// call the torch.ops form.

namespace {

// set_block_size_multiple_of(int) or ((block_m_multiple, block_n_multiple)).
void set_block_size_multiple_of_entry(const py::object& value) {
    const char* op = "set_block_size_multiple_of";
    if (py::isinstance<py::int_>(value) and not py::isinstance<py::bool_>(value)) {
        const int v = python::int32_arg(op, "new_value", value);
        api::set_block_size_multiple_of(v, v);
        return;
    }
    if (py::isinstance<py::tuple>(value) or py::isinstance<py::list>(value)) {
        const auto seq = value.cast<py::sequence>();
        if (seq.size() == 2 and py::isinstance<py::int_>(seq[0]) and py::isinstance<py::int_>(seq[1])) {
            api::set_block_size_multiple_of(python::int32_arg(op, "new_value[0]", seq[0]), python::int32_arg(op, "new_value[1]", seq[1]));
            return;
        }
    }
    api::throw_type_error(fmt::format("set_block_size_multiple_of: expected an int or a pair of ints (block_m, block_n); got {}",
                                      std::string(py::repr(value))));
}

// On SM90 the grouped kernels' BLOCK_M (and so the alignment) depends neither on the expected M nor on the
// number of groups: both are checked (positive) and otherwise unused.
int theoretical_mk_alignment_entry(const py::object& expected_m_obj, const py::object& num_groups_obj) {
    const char* op = "get_theoretical_mk_alignment_for_contiguous_layout";
    const std::optional<int> expected_m = python::opt_int32_arg(op, "expected_m", expected_m_obj);
    const std::optional<int> num_groups = python::opt_int32_arg(op, "num_groups", num_groups_obj);
    if (expected_m and *expected_m <= 0)
        api::throw_value_error(
            fmt::format("get_theoretical_mk_alignment_for_contiguous_layout: expected_m must be positive or None; got {}", *expected_m));
    if (num_groups and *num_groups <= 0)
        api::throw_value_error(
            fmt::format("get_theoretical_mk_alignment_for_contiguous_layout: num_groups must be positive or None; got {}", *num_groups));
    return api::get_theoretical_mk_alignment_for_contiguous_layout();
}

// DeepGEMM's transform_sf_into_required_layout: `recipe` may also be (mn_gran, k_gran) for the operand
// named by is_sfa (None = B); psum_layout only changes the packed UE8M0 layouts of SM100 (the SM90 FP32
// layouts pack all groups the same way), so it is accepted and unused.
at::Tensor transform_sf_compat_entry(const at::Tensor& sf, const py::object& mn_obj, const py::object& k_obj, const py::object& recipe,
                                     const py::object& num_groups_obj, std::optional<bool> is_sfa, bool disable_ue8m0_cast,
                                     const py::object& /*psum_layout*/) {
    const char* op = "transform_sf_into_required_layout";
    const int64_t mn = python::int64_arg(op, "mn", mn_obj), k = python::int64_arg(op, "k", k_obj);
    const std::optional<int64_t> num_groups = python::opt_int64_arg(op, "num_groups", num_groups_obj);
    const bool sfa = is_sfa.value_or(false);
    py::object r = recipe;
    if ((py::isinstance<py::tuple>(recipe) or py::isinstance<py::list>(recipe)) and py::len(recipe) == 2) {
        const auto seq = recipe.cast<py::sequence>();
        // Not a `?:`: pybind11 3.1 (torch 2.15) types make_tuple's result by its arguments, so the two branches differ.
        if (sfa)
            r = py::make_tuple(seq[0], 128, seq[1]);
        else
            r = py::make_tuple(1, seq[0], seq[1]);
    }
    return transform_sf_entry(sf, mn, k, r, num_groups, sfa, disable_ue8m0_cast);
}

}  // namespace

// ---- the Python module ----------------------------------------------------------------------------

PYBIND11_MODULE(_C, m) {
    m.doc() = "deep_gemm C++ extension: JIT-compiled SM90 GEMM kernels (see deep_gemm/_C.pyi for signatures)";
    m.attr("__version__") = DG_VERSION;
#ifdef DG_JIT_USE_RUNTIME_API
    m.attr("USES_RUNTIME_API") = true;
#else
    m.attr("USES_RUNTIME_API") = false;
#endif
    translate_exceptions();
    install_python_logging();

    // ---- JIT setup and tools ----
    m.def("set_include_dir", [](const std::filesystem::path& dir) { jit::set_include_dir(dir); }, py::arg("path"));
    m.def("get_include_dir", []() { return jit::include_dir(); });
    m.def("reload_settings", &jit::reload_settings, "Re-read the DG_* environment variables at the next JIT use.");
    m.def("get_settings", &settings_dict, "The parsed DG_* settings (raises RuntimeError naming a malformed variable).");
    m.def("setting_registry", &setting_registry);
    m.def("compile_only", &compile_only, py::arg("kernel"), py::arg("arch") = "sm_90a",
          "Build (or find in the cache) a shipped kernel for `arch` without a GPU; returns the cache entry.");
    m.def("_compile_only_source", &python::compile_only_kernel_source, py::arg("kernel"),
          "(name, symbol, code) of a kernel compile_only knows (warm-up call lists).");
    m.def("device_info", &device_info, py::arg("device"));
    python::register_cache_tools(m);  // cache_list/stats/prune, compiler_info (python -m deep_gemm)
    python::register_plan_tools(m);   // _plan_gemm_call (warm-ups from op + shape lists)
    m.def("_install_python_logging", &install_python_logging);
    m.def("_uninstall_python_logging", &uninstall_python_logging);
    m.def("_log", [](int level, const std::string& message) { jit::log(static_cast<jit::LogLevel>(level), message); },
          py::arg("level"), py::arg("message"), py::call_guard<py::gil_scoped_release>(),
          "Send one record through the C++ log path without holding the GIL (tests).");

    // ---- runtime knobs ----
    // (int parameters are converted by python::int32_arg: a clear error for ints beyond the C++ type)
    m.def("set_num_sms", [](const py::object& n) { api::set_num_sms(python::int32_arg("set_num_sms", "new_num_sms", n)); },
          py::arg("new_num_sms"));
    m.def("get_num_sms", &api::get_num_sms);
    m.def("set_pdl", &api::set_pdl, py::arg("new_enable_pdl"));
    m.def("get_pdl", &api::get_pdl);
    m.def("set_ignore_compile_dims", &api::set_ignore_compile_dims, py::arg("new_value"));
    m.def("get_ignore_compile_dims", &api::get_ignore_compile_dims);
    m.def("set_tc_util", [](const py::object& v) { api::set_tc_util(python::int32_arg("set_tc_util", "new_tc_util", v)); },
          py::arg("new_tc_util"));
    m.def("get_tc_util", &api::get_tc_util);
    m.def("set_block_size_multiple_of", &set_block_size_multiple_of_entry, py::arg("new_value"));
    m.def("get_block_size_multiple_of", &api::get_block_size_multiple_of);
    // DeepGEMM's form: stores the value (any positive int; the contiguous ops reject what they cannot honour).
    m.def("set_mk_alignment_for_contiguous_layout",
          [](const py::object& v) {
              api::set_mk_alignment_for_contiguous_layout(python::int32_arg("set_mk_alignment_for_contiguous_layout", "new_value", v));
          },
          py::arg("new_value"));
    m.def("_set_mk_alignment_value",
          [](const py::object& v) { api::set_mk_alignment_for_contiguous_layout(python::int32_arg("_set_mk_alignment_value", "new_value", v)); },
          py::arg("new_value"));
    m.def("get_mk_alignment_for_contiguous_layout", &api::get_mk_alignment_for_contiguous_layout);
    m.def("get_theoretical_mk_alignment_for_contiguous_layout", &theoretical_mk_alignment_entry, py::arg("expected_m") = py::none(),
          py::arg("num_groups") = py::none());

    // ---- layout ----
    m.def("get_tma_aligned_size",
          [](const py::object& x, const py::object& element_size) {
              const char* op = "get_tma_aligned_size";
              return api::get_tma_aligned_size(python::int64_arg(op, "x", x), python::int64_arg(op, "element_size", element_size));
          },
          py::arg("x"), py::arg("element_size"));
    m.def("get_mn_major_tma_aligned_tensor", &mn_major_entry, py::arg("sf"));
    m.def("transform_sf_into_required_layout", &transform_sf_compat_entry, py::arg("sf"), py::arg("mn"), py::arg("k"), py::arg("recipe"),
          py::arg("num_groups") = py::none(), py::arg("is_sfa") = py::none(), py::arg("disable_ue8m0_cast") = false,
          py::arg("psum_layout") = py::none());

    // ---- GEMMs (DeepGEMM signatures; METH_FASTCALL functions) ----
    python::register_gemm_entries(m);

    // ---- fused FP8 quantisation (swiglu_ops.cpp) ----
    python::register_quant_entries(m);

    // ---- tf32_hc_prenorm_gemm (hyperconnection_ops.cpp) ----
    python::register_hc_entries(m);

    // ---- paged MQA logits (paged_mqa_ops.cpp) ----
    python::register_paged_mqa_entries(m);

    // ---- BF16 GEMMs through cuBLASLt (cublaslt_ops.cpp) ----
    python::register_cublaslt_entries(m);

    // ---- MQA logits of the sparse-attention indexer (attention_ops.cpp) ----
    python::register_attention_entries(m);

    // ---- einsum (einsum_ops.cpp) ----
    python::register_einsum_entries(m);
}
