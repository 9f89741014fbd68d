// The fast path of deep_gemm._C: the METH_FASTCALL GEMM entries with DeepGEMM's Python signatures (and
// their method table) and the layout entries. Plain CPU/CUDA tensors run directly without the GIL;
// anything else (meta, fake, subclasses, a dispatch mode) goes through the torch.ops dispatcher op.
#include "python/fast_entries.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <array>
#include <mutex>

#include "apis/gemm.hpp"
#include "apis/layout.hpp"
#include "python/fast_args.hpp"

namespace deep_gemm::python {

using api::GemmCall;
using api::GemmOp;

namespace {

// ---- the dispatcher route -------------------------------------------------------------------------

bool all_plain(std::initializer_list<const at::Tensor*> tensors) {
    if (not api::no_dispatch_mode_active()) return false;
    for (const at::Tensor* t : tensors)
        if (t != nullptr and t->defined() and not api::is_plain_tensor(*t)) return false;
    return true;
}

const c10::OperatorHandle& op_handle(GemmOp op) {
    static std::array<std::optional<c10::OperatorHandle>, static_cast<int>(GemmOp::kCount)> handles;
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    auto& h = handles[static_cast<int>(op)];
    if (not h) h = c10::Dispatcher::singleton().findSchemaOrThrow(fmt::format("deep_gemm::{}", api::gemm_op_spec(op).name).c_str(), "");
    return *h;
}

at::OptionalIntArrayRef recipe_ref(const std::optional<api::Recipe>& r) {
    if (not r) return std::nullopt;
    return at::IntArrayRef(r->data(), r->size());
}

// Runs `call` directly when all tensors are plain, else through the dispatcher (`via_dispatcher`).
template <typename ViaDispatcher>
void run_or_dispatch(GemmOp op, const GemmCall& call, ViaDispatcher&& via_dispatcher) {
    if (all_plain({call.a, call.sfa, call.b, call.sfb, call.d, call.c, call.layout})) {
        py::gil_scoped_release no_gil;
        api::run_gemm(op, call);
    } else {
        via_dispatcher();
    }
}

// ---- fast-path entries with DeepGEMM's Python signatures ------------------------------------------
// Plain CPython METH_FASTCALL functions rather than pybind11 ones: no argument tuple, no at::Tensor
// copies (each copy of a Python-owned tensor costs a refcount round trip under the GIL), which keeps
// the eager per-call overhead to a few hundred nanoseconds.

enum class Entry { kRun, kValidateOnly };

// Builds the GemmCall of an FP8 op from (a, b, d) pairs; returns the slot index after d.
void fp8_operands(const char* op, const FastArgs& args, GemmCall& call) {
    const auto [a, sfa] = pair_arg(op, "a", args[0]);
    const auto [b, sfb] = pair_arg(op, "b", args[1]);
    call.a = a, call.sfa = sfa, call.b = b, call.sfb = sfb;
    call.d = &tensor_arg(op, "d", args[2]);
}

template <GemmOp kOp, Entry kEntry = Entry::kRun>
PyObject* fp8_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "c", "recipe", "recipe_a", "recipe_b", "compiled_dims", "disable_ue8m0_cast"}, 3, argv,
                            nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.c = opt_tensor_arg(op, "c", args[3]);
        call.recipe = resolve_recipe_objects(op, args[4], args[5], args[6]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[7], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[8], false);
        if constexpr (kEntry == Entry::kValidateOnly) {
            api::check_gemm_real_for_benchmark(kOp, call);
        } else {
            run_or_dispatch(kOp, call, [&] {
                op_handle(kOp)
                    .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                const OptTensor&, at::OptionalIntArrayRef, std::string_view, bool)>()
                    .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, to_optional(call.c), recipe_ref(call.recipe),
                          call.compiled_dims, call.disable_ue8m0_cast);
            });
        }
    });
}

template <GemmOp kOp>
PyObject* fp8_m_contiguous_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op,
                            {"a", "b", "d", "grouped_layout", "recipe", "recipe_a", "recipe_b", "compiled_dims", "disable_ue8m0_cast",
                             "use_psum_layout", "ensure_zero_padding", "expected_m_for_psum_layout"},
                            4, argv, nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.layout = &tensor_arg(op, "grouped_layout", args[3]);
        call.recipe = resolve_recipe_objects(op, args[4], args[5], args[6]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[7], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[8], false);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[9], false);
        call.ensure_zero_padding = bool_arg(op, "ensure_zero_padding", args[10], true);
        call.expected_m_for_psum_layout = opt_int_arg(op, "expected_m_for_psum_layout", args[11]);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, at::OptionalIntArrayRef, std::string_view, bool, bool, bool, std::optional<int64_t>)>()
                .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, *call.layout, recipe_ref(call.recipe), call.compiled_dims,
                      call.disable_ue8m0_cast, call.use_psum_layout, call.ensure_zero_padding, call.expected_m_for_psum_layout);
        });
    });
}

template <GemmOp kOp>
PyObject* fp8_masked_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "masked_m", "expected_m", "recipe", "recipe_a", "recipe_b", "compiled_dims",
                                 "disable_ue8m0_cast"},
                            5, argv, nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.layout = &tensor_arg(op, "masked_m", args[3]);
        call.expected_m = int_arg(op, "expected_m", args[4]);
        call.recipe = resolve_recipe_objects(op, args[5], args[6], args[7]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[8], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[9], false);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, int64_t, at::OptionalIntArrayRef, std::string_view, bool)>()
                .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, *call.layout, call.expected_m, recipe_ref(call.recipe),
                      call.compiled_dims, call.disable_ue8m0_cast);
        });
    });
}

template <GemmOp kOp>
PyObject* fp8_k_grouped_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "ks_cpu", "grouped_layout", "c", "recipe", "compiled_dims", "use_psum_layout"}, 5, argv,
                            nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        const std::vector<int64_t> ks = int_list_arg(op, "ks_cpu", args[3]);
        call.ks = ks;
        call.layout = &tensor_arg(op, "grouped_layout", args[4]);
        call.c = opt_tensor_arg(op, "c", args[5]);
        if (args[6] != nullptr and args[6] != Py_None) call.recipe = parse_recipe_object(op, args[6]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[7], spec.default_compiled_dims);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[8], false);
        run_or_dispatch(kOp, call, [&] {
            const std::vector<int64_t> r =
                call.recipe ? std::vector<int64_t>(call.recipe->begin(), call.recipe->end()) : std::vector<int64_t>{1, 1, 128};
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            at::IntArrayRef, const at::Tensor&, const OptTensor&, at::IntArrayRef, std::string_view, bool)>()
                .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, ks, *call.layout, to_optional(call.c), r, call.compiled_dims,
                      call.use_psum_layout);
        });
    });
}

template <GemmOp kOp>
PyObject* bf16_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "c", "compiled_dims"}, 3, argv, nargs, kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        call.c = opt_tensor_arg(op, "c", args[3]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[4], spec.default_compiled_dims);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const OptTensor&, std::string_view)>()
                .call(*call.a, *call.b, *call.d, to_optional(call.c), call.compiled_dims);
        });
    });
}

template <GemmOp kOp>
PyObject* bf16_m_contiguous_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op,
                            {"a", "b", "d", "grouped_layout", "compiled_dims", "use_psum_layout", "ensure_zero_padding",
                             "expected_m_for_psum_layout"},
                            4, argv, nargs, kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        call.layout = &tensor_arg(op, "grouped_layout", args[3]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[4], spec.default_compiled_dims);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[5], false);
        call.ensure_zero_padding = bool_arg(op, "ensure_zero_padding", args[6], true);
        call.expected_m_for_psum_layout = opt_int_arg(op, "expected_m_for_psum_layout", args[7]);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, std::string_view, bool, bool,
                            std::optional<int64_t>)>()
                .call(*call.a, *call.b, *call.d, *call.layout, call.compiled_dims, call.use_psum_layout, call.ensure_zero_padding,
                      call.expected_m_for_psum_layout);
        });
    });
}

template <GemmOp kOp>
PyObject* bf16_masked_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "masked_m", "expected_m", "compiled_dims"}, 5, argv, nargs, kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        call.layout = &tensor_arg(op, "masked_m", args[3]);
        call.expected_m = int_arg(op, "expected_m", args[4]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[5], spec.default_compiled_dims);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, std::string_view)>()
                .call(*call.a, *call.b, *call.d, *call.layout, call.expected_m, call.compiled_dims);
        });
    });
}

template <GemmOp kOp>
PyObject* bf16_k_grouped_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "ks_cpu", "grouped_layout", "c", "compiled_dims", "use_psum_layout"}, 5, argv, nargs,
                            kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        const std::vector<int64_t> ks = int_list_arg(op, "ks_cpu", args[3]);
        call.ks = ks;
        call.layout = &tensor_arg(op, "grouped_layout", args[4]);
        call.c = opt_tensor_arg(op, "c", args[5]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[6], spec.default_compiled_dims);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[7], false);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, at::IntArrayRef, const at::Tensor&, const OptTensor&,
                            std::string_view, bool)>()
                .call(*call.a, *call.b, *call.d, ks, *call.layout, to_optional(call.c), call.compiled_dims, call.use_psum_layout);
        });
    });
}

}  // namespace

#define DG_FASTCALL(name, fn, sig, doc) \
    PyMethodDef { name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fn)), METH_FASTCALL | METH_KEYWORDS, name sig "\n--\n\n" doc }

#define DG_FP8_SIG(dims) "(a, b, d, c=None, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='" dims "', disable_ue8m0_cast=False)"
#define DG_BF16_SIG(dims) "(a, b, d, c=None, compiled_dims='" dims "')"

PyMethodDef g_fast_methods[] = {
    DG_FASTCALL("fp8_gemm_nt", (fp8_fast<GemmOp::kFp8Nt>), DG_FP8_SIG("nk"), "d = c + a @ b.T (FP8); see deep_gemm.fp8_gemm_nt."),
    DG_FASTCALL("fp8_gemm_nn", (fp8_fast<GemmOp::kFp8Nn>), DG_FP8_SIG("nk"), "d = c + a @ b (FP8); see deep_gemm.fp8_gemm_nn."),
    DG_FASTCALL("fp8_gemm_tn", (fp8_fast<GemmOp::kFp8Tn>), DG_FP8_SIG("mn"), "d = c + a.T @ b (FP8); see deep_gemm.fp8_gemm_tn."),
    DG_FASTCALL("fp8_gemm_tt", (fp8_fast<GemmOp::kFp8Tt>), DG_FP8_SIG("mn"), "d = c + a.T @ b.T (FP8); see deep_gemm.fp8_gemm_tt."),
    DG_FASTCALL("m_grouped_fp8_gemm_nt_contiguous", (fp8_m_contiguous_fast<GemmOp::kMGroupedFp8NtContiguous>),
                "(a, b, d, grouped_layout, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='nk', disable_ue8m0_cast=False, "
                "use_psum_layout=False, ensure_zero_padding=True, expected_m_for_psum_layout=None)",
                "See deep_gemm.m_grouped_fp8_gemm_nt_contiguous."),
    DG_FASTCALL("m_grouped_fp8_gemm_nt_masked", (fp8_masked_fast<GemmOp::kMGroupedFp8NtMasked>),
                "(a, b, d, masked_m, expected_m, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='nk', disable_ue8m0_cast=False)",
                "See deep_gemm.m_grouped_fp8_gemm_nt_masked."),
    DG_FASTCALL("k_grouped_fp8_gemm_nt_contiguous", (fp8_k_grouped_fast<GemmOp::kKGroupedFp8NtContiguous>),
                "(a, b, d, ks_cpu, grouped_layout, c=None, recipe=(1, 1, 128), compiled_dims='mn', use_psum_layout=False)",
                "See deep_gemm.k_grouped_fp8_gemm_nt_contiguous."),
    DG_FASTCALL("bf16_gemm_nt", (bf16_fast<GemmOp::kBf16Nt>), DG_BF16_SIG("nk"), "d = c + a @ b.T (BF16); see deep_gemm.bf16_gemm_nt."),
    DG_FASTCALL("bf16_gemm_nn", (bf16_fast<GemmOp::kBf16Nn>), DG_BF16_SIG("nk"), "d = c + a @ b (BF16); see deep_gemm.bf16_gemm_nn."),
    DG_FASTCALL("bf16_gemm_tn", (bf16_fast<GemmOp::kBf16Tn>), DG_BF16_SIG("mn"), "d = c + a.T @ b (BF16); see deep_gemm.bf16_gemm_tn."),
    DG_FASTCALL("bf16_gemm_tt", (bf16_fast<GemmOp::kBf16Tt>), DG_BF16_SIG("mn"), "d = c + a.T @ b.T (BF16); see deep_gemm.bf16_gemm_tt."),
    DG_FASTCALL("m_grouped_bf16_gemm_nt_contiguous", (bf16_m_contiguous_fast<GemmOp::kMGroupedBf16NtContiguous>),
                "(a, b, d, grouped_layout, compiled_dims='nk', use_psum_layout=False, ensure_zero_padding=True, "
                "expected_m_for_psum_layout=None)", "See deep_gemm.m_grouped_bf16_gemm_nt_contiguous."),
    DG_FASTCALL("m_grouped_bf16_gemm_nt_masked", (bf16_masked_fast<GemmOp::kMGroupedBf16NtMasked>),
                "(a, b, d, masked_m, expected_m, compiled_dims='nk')", "See deep_gemm.m_grouped_bf16_gemm_nt_masked."),
    DG_FASTCALL("k_grouped_bf16_gemm_tn_contiguous", (bf16_k_grouped_fast<GemmOp::kKGroupedBf16TnContiguous>),
                "(a, b, d, ks_cpu, grouped_layout, c=None, compiled_dims='mn', use_psum_layout=False)", "See deep_gemm.k_grouped_bf16_gemm_tn_contiguous."),
    DG_FASTCALL("_validate_fp8_gemm_nt", (fp8_fast<GemmOp::kFp8Nt, Entry::kValidateOnly>), DG_FP8_SIG("nk"),
                "fp8_gemm_nt's fast path without the device work (host-overhead microbenchmark)."),
    {nullptr, nullptr, 0, nullptr},
};

// ---- layout entries --------------------------------------------------------------------------------

at::Tensor mn_major_entry(const at::Tensor& sf) {
    if (all_plain({&sf})) {
        py::gil_scoped_release no_gil;
        return api::get_mn_major_tma_aligned_tensor(sf);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::get_mn_major_tma_aligned_tensor", "")
                               .typed<at::Tensor(const at::Tensor&)>();
    return op.call(sf);
}

at::Tensor transform_sf_entry(const at::Tensor& sf, int64_t mn, int64_t k, const py::object& recipe, std::optional<int64_t> num_groups,
                              bool is_sfa, bool disable_ue8m0_cast) {
    const char* name = "transform_sf_into_required_layout";
    const auto r = parse_recipe_object(name, recipe);
    if (not r) api::throw_type_error(fmt::format("{}: recipe is required (a tuple of 3 ints, e.g. (1, 128, 128))", name));
    if (all_plain({&sf})) {
        py::gil_scoped_release no_gil;
        return api::transform_sf_into_required_layout(sf, mn, k, *r, num_groups, is_sfa, disable_ue8m0_cast);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::transform_sf_into_required_layout", "")
                               .typed<at::Tensor(const at::Tensor&, c10::SymInt, c10::SymInt, at::IntArrayRef, std::optional<int64_t>,
                                                 bool, bool)>();
    const std::vector<int64_t> rv(r->begin(), r->end());
    return op.call(sf, c10::SymInt(mn), c10::SymInt(k), rv, num_groups, is_sfa, disable_ue8m0_cast);
}

}  // namespace deep_gemm::python
