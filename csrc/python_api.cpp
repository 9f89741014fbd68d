// deep_gemm._C: the pybind11 module and the torch.library registrations.
//
// Every op exists twice, sharing one implementation (csrc/apis):
//  * `torch.ops.deep_gemm.<op>`: schema + CPU/CUDA kernels + a Meta kernel (validation only, symbolic
//    sizes allowed) so the ops trace under torch.compile(fullgraph=True) and FakeTensor;
//  * `deep_gemm._C.<op>`: the fast path with DeepGEMM's Python signature ((tensor, scales) pairs).
//    With plain CPU/CUDA tensors it validates and launches directly (no dispatcher, no Python
//    wrapper; the GIL is released); with anything else (meta, fake, subclasses, an active dispatch
//    mode) it forwards to the dispatcher op, so the behaviour is the same.
// deep_gemm/__init__.py exports the fast-path functions and registers torch.compile substitutes that
// call the torch.ops form.
#include <torch/extension.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <array>
#include <atomic>

#include "apis/common.hpp"
#include "apis/gemm.hpp"
#include "apis/layout.hpp"
#include "apis/runtime.hpp"
#include "jit/errors.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit/settings.hpp"
#include "jit_kernels/impls/layout_transpose_sf.hpp"

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

namespace py = pybind11;
using namespace deep_gemm;
using api::GemmCall;
using api::GemmOp;

namespace {

// ---- logging --------------------------------------------------------------------------------------

std::atomic<bool> g_python_logging{false};
PyObject* g_logger = nullptr;  // leaked on purpose: must outlive every C++ record, even at exit

bool python_is_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}

void python_log_sink(jit::LogLevel level, const std::string& message) noexcept {
    if (not g_python_logging.load() or not Py_IsInitialized() or python_is_finalizing()) return;
    try {
        py::gil_scoped_acquire gil;
        try {
            py::handle logger(g_logger);
            logger.attr("log")(static_cast<int>(level), message);
        } catch (py::error_already_set& e) {
            e.discard_as_unraisable("deep_gemm log sink");
        } catch (...) {
        }
    } catch (...) {
    }
}

void install_python_logging() {
    if (g_logger == nullptr) g_logger = py::module_::import("logging").attr("getLogger")("deep_gemm").release().ptr();
    g_python_logging.store(true);
    jit::set_log_sink(python_log_sink);
}

void uninstall_python_logging() {
    g_python_logging.store(false);
    jit::set_log_sink({});
}

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

std::optional<api::Recipe> parse_recipe_object(const char* op, const py::handle& obj) {
    if (obj.is_none()) return std::nullopt;
    if (not py::isinstance<py::sequence>(obj) or py::isinstance<py::str>(obj))
        api::throw_type_error(fmt::format("{}: recipe must be None or a tuple of 3 ints; got {}", op,
                                          std::string(py::str(obj.get_type().attr("__name__")))));
    auto seq = py::reinterpret_borrow<py::sequence>(obj);
    std::vector<int64_t> values;
    for (auto item : seq) {
        if (not py::isinstance<py::int_>(item))
            api::throw_type_error(fmt::format("{}: recipe must hold ints; got {}", op, std::string(py::repr(obj))));
        values.push_back(item.cast<int64_t>());
    }
    return api::parse_recipe(op, values);
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

const at::Tensor* opt_ptr(const std::optional<at::Tensor>& t) { return t.has_value() and t->defined() ? &*t : nullptr; }

// ---- torch.library kernels (one per signature family; the op is a template parameter) -----------

template <GemmOp kOp, bool kFake>
void gemm_kernel(const GemmCall& call) {
    if constexpr (kFake)
        api::check_gemm_fake(kOp, call);
    else
        api::run_gemm(kOp, call);
}

template <GemmOp kOp, bool kFake>
void fp8_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                const std::optional<at::Tensor>& c, at::OptionalIntArrayRef recipe, std::string_view compiled_dims,
                bool disable_ue8m0_cast) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.c = opt_ptr(c);
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_m_contiguous_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb,
                             const at::Tensor& d, const at::Tensor& grouped_layout, at::OptionalIntArrayRef recipe,
                             std::string_view compiled_dims, bool disable_ue8m0_cast, bool use_psum_layout) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &grouped_layout;
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    call.use_psum_layout = use_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_masked_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                       const at::Tensor& masked_m, int64_t expected_m, at::OptionalIntArrayRef recipe, std::string_view compiled_dims,
                       bool disable_ue8m0_cast) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &masked_m;
    call.expected_m = expected_m;
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_k_grouped_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                          at::IntArrayRef ks, const at::Tensor& ks_tensor, const std::optional<at::Tensor>& c, at::IntArrayRef recipe,
                          std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &ks_tensor, call.c = opt_ptr(c);
    call.ks = ks;
    call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, recipe);
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const std::optional<at::Tensor>& c,
                 std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.c = opt_ptr(c);
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_m_contiguous_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& grouped_layout,
                              std::string_view compiled_dims, bool use_psum_layout) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &grouped_layout;
    call.compiled_dims = compiled_dims;
    call.use_psum_layout = use_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_masked_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& masked_m, int64_t expected_m,
                        std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &masked_m;
    call.expected_m = expected_m;
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_k_grouped_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, at::IntArrayRef ks, const at::Tensor& ks_tensor,
                           const std::optional<at::Tensor>& c, std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &ks_tensor, call.c = opt_ptr(c);
    call.ks = ks;
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

// ---- schemas --------------------------------------------------------------------------------------

std::string gemm_schema(GemmOp op) {
    const auto& spec = api::gemm_op_spec(op);
    const std::string dims = spec.default_compiled_dims;
    const bool fp8 = spec.family == api::Family::kFp8;
    const std::string ab = fp8 ? "Tensor a, Tensor sfa, Tensor b, Tensor sfb, Tensor(a!) d" : "Tensor a, Tensor b, Tensor(a!) d";
    std::string rest;
    switch (spec.grouping) {
        case api::Grouping::kNone:
            rest = fp8 ? fmt::format("Tensor? c=None, int[]? recipe=None, str compiled_dims=\"{}\", bool disable_ue8m0_cast=False", dims)
                       : fmt::format("Tensor? c=None, str compiled_dims=\"{}\"", dims);
            break;
        case api::Grouping::kMContiguous:
            rest = fp8 ? fmt::format("Tensor grouped_layout, int[]? recipe=None, str compiled_dims=\"{}\", bool disable_ue8m0_cast=False, "
                                     "bool use_psum_layout=False", dims)
                       : fmt::format("Tensor grouped_layout, str compiled_dims=\"{}\", bool use_psum_layout=False", dims);
            break;
        case api::Grouping::kMMasked:
            rest = fp8 ? fmt::format("Tensor masked_m, int expected_m, int[]? recipe=None, str compiled_dims=\"{}\", "
                                     "bool disable_ue8m0_cast=False", dims)
                       : fmt::format("Tensor masked_m, int expected_m, str compiled_dims=\"{}\"", dims);
            break;
        case api::Grouping::kKContiguous:
            rest = fp8 ? fmt::format("int[] ks, Tensor ks_tensor, Tensor? c=None, int[] recipe=[1, 1, 128], str compiled_dims=\"{}\"", dims)
                       : fmt::format("int[] ks, Tensor ks_tensor, Tensor? c=None, str compiled_dims=\"{}\"", dims);
            break;
    }
    return fmt::format("{}({}, {}) -> ()", spec.name, ab, rest);
}

// ---- fast-path entries with DeepGEMM's Python signatures ------------------------------------------
// Plain CPython METH_FASTCALL functions rather than pybind11 ones: no argument tuple, no at::Tensor
// copies (each copy of a Python-owned tensor costs a refcount round trip under the GIL), which keeps
// the eager per-call overhead to a few hundred nanoseconds.

using OptTensor = std::optional<at::Tensor>;

enum class Entry { kRun, kValidateOnly };

// Sets the Python error for the exception in flight (the same mapping as the pybind11 translator).
void set_python_error() noexcept {
    try {
        throw;
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (python_error& e) {  // a Python exception that crossed the dispatcher (fake tensors, dispatch modes)
        e.restore();
    } catch (const c10::TypeError& e) {
        PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
    } catch (const c10::ValueError& e) {
        PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    } catch (const c10::NotImplementedError& e) {
        PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
    } catch (const c10::IndexError& e) {
        PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    } catch (const std::exception& e) {  // jit::Error (ConfigError, CompileError, CudaError) and the rest
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "deep_gemm: unknown C++ exception");
    }
}

// Runs a fast entry's body; a C++ exception becomes the matching Python exception (set_python_error).
template <typename Body>
PyObject* guarded(Body&& body) noexcept {
    try {
        body();
        Py_RETURN_NONE;
    } catch (...) {
        set_python_error();
        return nullptr;
    }
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

// Binds positional and keyword arguments to parameter slots (borrowed references; nullptr = not given).
class FastArgs {
public:
    static constexpr int kMax = 12;
    FastArgs(const char* fname, std::initializer_list<const char*> names, int required, PyObject* const* args, Py_ssize_t nargs,
             PyObject* kwnames) {
        const int n = static_cast<int>(names.size());
        int i = 0;
        for (const char* name : names) names_[i++] = name;
        if (nargs > n) api::throw_type_error(fmt::format("{}() takes at most {} arguments ({} given)", fname, n, nargs));
        for (Py_ssize_t j = 0; j < nargs; ++j) slots_[j] = args[j];
        if (kwnames != nullptr) {
            const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
            for (Py_ssize_t j = 0; j < nkw; ++j) {
                PyObject* key = PyTuple_GET_ITEM(kwnames, j);
                int slot = -1;
                for (int k = 0; k < n; ++k)
                    if (PyUnicode_CompareWithASCIIString(key, names_[k]) == 0) slot = k;
                if (slot < 0)
                    api::throw_type_error(fmt::format("{}() got an unexpected keyword argument '{}'", fname, PyUnicode_AsUTF8(key)));
                if (slots_[slot] != nullptr)
                    api::throw_type_error(fmt::format("{}() got multiple values for argument '{}'", fname, names_[slot]));
                slots_[slot] = args[nargs + j];
            }
        }
        for (int k = 0; k < required; ++k)
            if (slots_[k] == nullptr) api::throw_type_error(fmt::format("{}() missing required argument '{}'", fname, names_[k]));
    }
    PyObject* operator[](int i) const { return slots_[i]; }
    const char* name(int i) const { return names_[i]; }

private:
    const char* names_[kMax] = {};
    PyObject* slots_[kMax] = {};
};

const at::Tensor& tensor_arg(const char* op, const char* name, PyObject* o) {
    if (C10_UNLIKELY(o == nullptr or not THPVariable_Check(o)))
        api::throw_type_error(fmt::format("{}: {} must be a torch.Tensor; got {}", op, name, o ? type_name(o) : "nothing"));
    return THPVariable_Unpack(o);
}

const at::Tensor* opt_tensor_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or o == Py_None) return nullptr;
    return &tensor_arg(op, name, o);
}

// A DeepGEMM operand: a (tensor, scales) tuple or list.
std::pair<const at::Tensor*, const at::Tensor*> pair_arg(const char* op, const char* name, PyObject* o) {
    PyObject* first = nullptr;
    PyObject* second = nullptr;
    if (PyTuple_Check(o) and PyTuple_GET_SIZE(o) == 2) {
        first = PyTuple_GET_ITEM(o, 0), second = PyTuple_GET_ITEM(o, 1);
    } else if (PyList_Check(o) and PyList_GET_SIZE(o) == 2) {
        first = PyList_GET_ITEM(o, 0), second = PyList_GET_ITEM(o, 1);
    } else {
        api::throw_type_error(fmt::format("{}: {} must be a (tensor, scales) pair; got {}", op, name, type_name(o)));
    }
    const std::string n0 = name, n1 = std::string("sf") + name;
    return {&tensor_arg(op, n0.c_str(), first), &tensor_arg(op, n1.c_str(), second)};
}

std::string_view str_arg(const char* op, const char* name, PyObject* o, std::string_view fallback) {
    if (o == nullptr) return fallback;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &size) : nullptr;
    if (data == nullptr) {
        PyErr_Clear();
        api::throw_type_error(fmt::format("{}: {} must be a str; got {}", op, name, type_name(o)));
    }
    return {data, static_cast<size_t>(size)};
}

bool bool_arg(const char* op, const char* name, PyObject* o, bool fallback) {
    if (o == nullptr) return fallback;
    if (o == Py_True) return true;
    if (o == Py_False) return false;
    const int v = PyObject_IsTrue(o);
    if (v < 0) {
        PyErr_Clear();
        api::throw_type_error(fmt::format("{}: {} must be a bool; got {}", op, name, type_name(o)));
    }
    return v != 0;
}

int64_t int_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or not PyLong_Check(o) or PyBool_Check(o))
        api::throw_type_error(fmt::format("{}: {} must be an int; got {}", op, name, o ? type_name(o) : "nothing"));
    const long long v = PyLong_AsLongLong(o);
    if (v == -1 and PyErr_Occurred()) {
        PyErr_Clear();
        api::throw_value_error(fmt::format("{}: {} does not fit in 64 bits", op, name));
    }
    return v;
}

std::vector<int64_t> int_list_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or not PySequence_Check(o) or PyUnicode_Check(o))
        api::throw_type_error(fmt::format("{}: {} must be a sequence of ints; got {}", op, name, o ? type_name(o) : "nothing"));
    py::sequence seq = py::reinterpret_borrow<py::sequence>(o);
    std::vector<int64_t> out;
    out.reserve(seq.size());
    for (auto item : seq) out.push_back(int_arg(op, name, item.ptr()));
    return out;
}

OptTensor to_optional(const at::Tensor* t) { return t ? OptTensor(*t) : OptTensor(); }

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
        const FastArgs args(op, {"a", "b", "d", "c", "recipe", "compiled_dims", "disable_ue8m0_cast"}, 3, argv, nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.c = opt_tensor_arg(op, "c", args[3]);
        if (args[4] != nullptr) call.recipe = parse_recipe_object(op, args[4]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[5], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[6], false);
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
        const FastArgs args(op, {"a", "b", "d", "grouped_layout", "recipe", "compiled_dims", "disable_ue8m0_cast", "use_psum_layout"}, 4,
                            argv, nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.layout = &tensor_arg(op, "grouped_layout", args[3]);
        if (args[4] != nullptr) call.recipe = parse_recipe_object(op, args[4]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[5], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[6], false);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[7], false);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, at::OptionalIntArrayRef, std::string_view, bool, bool)>()
                .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, *call.layout, recipe_ref(call.recipe), call.compiled_dims,
                      call.disable_ue8m0_cast, call.use_psum_layout);
        });
    });
}

template <GemmOp kOp>
PyObject* fp8_masked_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded([&] {
        const auto& spec = api::gemm_op_spec(kOp);
        const char* op = spec.name;
        const FastArgs args(op, {"a", "b", "d", "masked_m", "expected_m", "recipe", "compiled_dims", "disable_ue8m0_cast"}, 5, argv,
                            nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        call.layout = &tensor_arg(op, "masked_m", args[3]);
        call.expected_m = int_arg(op, "expected_m", args[4]);
        if (args[5] != nullptr) call.recipe = parse_recipe_object(op, args[5]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[6], spec.default_compiled_dims);
        call.disable_ue8m0_cast = bool_arg(op, "disable_ue8m0_cast", args[7], false);
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
        const FastArgs args(op, {"a", "b", "d", "ks", "ks_tensor", "c", "recipe", "compiled_dims"}, 5, argv, nargs, kwnames);
        GemmCall call;
        fp8_operands(op, args, call);
        const std::vector<int64_t> ks = int_list_arg(op, "ks", args[3]);
        call.ks = ks;
        call.layout = &tensor_arg(op, "ks_tensor", args[4]);
        call.c = opt_tensor_arg(op, "c", args[5]);
        if (args[6] != nullptr and args[6] != Py_None) call.recipe = parse_recipe_object(op, args[6]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[7], spec.default_compiled_dims);
        run_or_dispatch(kOp, call, [&] {
            const std::vector<int64_t> r =
                call.recipe ? std::vector<int64_t>(call.recipe->begin(), call.recipe->end()) : std::vector<int64_t>{1, 1, 128};
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            at::IntArrayRef, const at::Tensor&, const OptTensor&, at::IntArrayRef, std::string_view)>()
                .call(*call.a, *call.sfa, *call.b, *call.sfb, *call.d, ks, *call.layout, to_optional(call.c), r, call.compiled_dims);
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
        const FastArgs args(op, {"a", "b", "d", "grouped_layout", "compiled_dims", "use_psum_layout"}, 4, argv, nargs, kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        call.layout = &tensor_arg(op, "grouped_layout", args[3]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[4], spec.default_compiled_dims);
        call.use_psum_layout = bool_arg(op, "use_psum_layout", args[5], false);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, std::string_view, bool)>()
                .call(*call.a, *call.b, *call.d, *call.layout, call.compiled_dims, call.use_psum_layout);
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
        const FastArgs args(op, {"a", "b", "d", "ks", "ks_tensor", "c", "compiled_dims"}, 5, argv, nargs, kwnames);
        GemmCall call;
        call.a = &tensor_arg(op, "a", args[0]);
        call.b = &tensor_arg(op, "b", args[1]);
        call.d = &tensor_arg(op, "d", args[2]);
        const std::vector<int64_t> ks = int_list_arg(op, "ks", args[3]);
        call.ks = ks;
        call.layout = &tensor_arg(op, "ks_tensor", args[4]);
        call.c = opt_tensor_arg(op, "c", args[5]);
        call.compiled_dims = str_arg(op, "compiled_dims", args[6], spec.default_compiled_dims);
        run_or_dispatch(kOp, call, [&] {
            op_handle(kOp)
                .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, at::IntArrayRef, const at::Tensor&, const OptTensor&,
                            std::string_view)>()
                .call(*call.a, *call.b, *call.d, ks, *call.layout, to_optional(call.c), call.compiled_dims);
        });
    });
}

#define DG_FASTCALL(name, fn, sig, doc) \
    PyMethodDef { name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fn)), METH_FASTCALL | METH_KEYWORDS, name sig "\n--\n\n" doc }

#define DG_FP8_SIG(dims) "(a, b, d, c=None, recipe=None, compiled_dims='" dims "', disable_ue8m0_cast=False)"
#define DG_BF16_SIG(dims) "(a, b, d, c=None, compiled_dims='" dims "')"

PyMethodDef g_fast_methods[] = {
    DG_FASTCALL("fp8_gemm_nt", (fp8_fast<GemmOp::kFp8Nt>), DG_FP8_SIG("nk"), "d = c + a @ b.T (FP8); see deep_gemm.fp8_gemm_nt."),
    DG_FASTCALL("fp8_gemm_nn", (fp8_fast<GemmOp::kFp8Nn>), DG_FP8_SIG("nk"), "d = c + a @ b (FP8); see deep_gemm.fp8_gemm_nn."),
    DG_FASTCALL("fp8_gemm_tn", (fp8_fast<GemmOp::kFp8Tn>), DG_FP8_SIG("mn"), "d = c + a.T @ b (FP8); see deep_gemm.fp8_gemm_tn."),
    DG_FASTCALL("fp8_gemm_tt", (fp8_fast<GemmOp::kFp8Tt>), DG_FP8_SIG("mn"), "d = c + a.T @ b.T (FP8); see deep_gemm.fp8_gemm_tt."),
    DG_FASTCALL("m_grouped_fp8_gemm_nt_contiguous", (fp8_m_contiguous_fast<GemmOp::kMGroupedFp8NtContiguous>),
                "(a, b, d, grouped_layout, recipe=None, compiled_dims='nk', disable_ue8m0_cast=False, use_psum_layout=False)",
                "See deep_gemm.m_grouped_fp8_gemm_nt_contiguous."),
    DG_FASTCALL("m_grouped_fp8_gemm_nt_masked", (fp8_masked_fast<GemmOp::kMGroupedFp8NtMasked>),
                "(a, b, d, masked_m, expected_m, recipe=None, compiled_dims='nk', disable_ue8m0_cast=False)",
                "See deep_gemm.m_grouped_fp8_gemm_nt_masked."),
    DG_FASTCALL("k_grouped_fp8_gemm_nt_contiguous", (fp8_k_grouped_fast<GemmOp::kKGroupedFp8NtContiguous>),
                "(a, b, d, ks, ks_tensor, c=None, recipe=(1, 1, 128), compiled_dims='mn')",
                "See deep_gemm.k_grouped_fp8_gemm_nt_contiguous."),
    DG_FASTCALL("bf16_gemm_nt", (bf16_fast<GemmOp::kBf16Nt>), DG_BF16_SIG("nk"), "d = c + a @ b.T (BF16); see deep_gemm.bf16_gemm_nt."),
    DG_FASTCALL("bf16_gemm_nn", (bf16_fast<GemmOp::kBf16Nn>), DG_BF16_SIG("nk"), "d = c + a @ b (BF16); see deep_gemm.bf16_gemm_nn."),
    DG_FASTCALL("bf16_gemm_tn", (bf16_fast<GemmOp::kBf16Tn>), DG_BF16_SIG("mn"), "d = c + a.T @ b (BF16); see deep_gemm.bf16_gemm_tn."),
    DG_FASTCALL("bf16_gemm_tt", (bf16_fast<GemmOp::kBf16Tt>), DG_BF16_SIG("mn"), "d = c + a.T @ b.T (BF16); see deep_gemm.bf16_gemm_tt."),
    DG_FASTCALL("m_grouped_bf16_gemm_nt_contiguous", (bf16_m_contiguous_fast<GemmOp::kMGroupedBf16NtContiguous>),
                "(a, b, d, grouped_layout, compiled_dims='nk', use_psum_layout=False)", "See deep_gemm.m_grouped_bf16_gemm_nt_contiguous."),
    DG_FASTCALL("m_grouped_bf16_gemm_nt_masked", (bf16_masked_fast<GemmOp::kMGroupedBf16NtMasked>),
                "(a, b, d, masked_m, expected_m, compiled_dims='nk')", "See deep_gemm.m_grouped_bf16_gemm_nt_masked."),
    DG_FASTCALL("k_grouped_bf16_gemm_tn_contiguous", (bf16_k_grouped_fast<GemmOp::kKGroupedBf16TnContiguous>),
                "(a, b, d, ks, ks_tensor, c=None, compiled_dims='mn')", "See deep_gemm.k_grouped_bf16_gemm_tn_contiguous."),
    DG_FASTCALL("_validate_fp8_gemm_nt", (fp8_fast<GemmOp::kFp8Nt, Entry::kValidateOnly>), DG_FP8_SIG("nk"),
                "fp8_gemm_nt's fast path without the device work (host-overhead microbenchmark)."),
    {nullptr, nullptr, 0, nullptr},
};

// ---- layout ops -----------------------------------------------------------------------------------

// torch.ops form: always a fresh tensor (an op may not return an alias of its input).
at::Tensor mn_major_op(const at::Tensor& sf) { return api::get_mn_major_tma_aligned_tensor(sf, /*allow_passthrough=*/false); }

at::Tensor transform_sf_op(const at::Tensor& sf, c10::SymInt mn, c10::SymInt k, at::IntArrayRef recipe, std::optional<int64_t> num_groups,
                           bool is_sfa, bool disable_ue8m0_cast) {
    return api::transform_sf_into_required_layout(sf, mn.guard_int(__FILE__, __LINE__), k.guard_int(__FILE__, __LINE__),
                                                  api::parse_recipe("transform_sf_into_required_layout", recipe), num_groups, is_sfa,
                                                  disable_ue8m0_cast, /*allow_passthrough=*/false);
}

at::Tensor transform_sf_meta(const at::Tensor& sf, c10::SymInt mn, c10::SymInt k, at::IntArrayRef recipe, std::optional<int64_t> num_groups,
                             bool is_sfa, bool /*disable_ue8m0_cast*/) {
    return api::transform_sf_into_required_layout_meta(sf, mn.maybe_as_int().value_or(api::kUnknown),
                                                       k.maybe_as_int().value_or(api::kUnknown),
                                                       api::parse_recipe("transform_sf_into_required_layout", recipe), num_groups, is_sfa);
}

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

// ---- JIT tools ------------------------------------------------------------------------------------

// Kernels that can be compiled without a GPU (warm-up, CI). Other kernel families add theirs here.
jit::KernelSource compile_only_source(const std::string& kernel) {
    if (kernel == "layout_transpose_sf") return kernels::layout_transpose_sf_source();
    api::throw_value_error(fmt::format("compile_only: unknown kernel \"{}\"; known: layout_transpose_sf", kernel));
}

py::dict compile_only(const std::string& kernel, const std::string& arch) {
    const jit::KernelSource src = compile_only_source(kernel);
    jit::CachedKernel entry;
    {
        py::gil_scoped_release no_gil;
        entry = jit::build(src, arch);
    }
    py::dict result;
    result["name"] = src.name;
    result["symbol"] = src.symbol;
    result["dir"] = entry.dir.string();
    result["compiled"] = entry.compiled;
    result["cubin_size"] = entry.cubin.size();
    return result;
}

py::dict settings_dict() {
    const jit::Settings& s = jit::settings();
    py::dict d;
    d["cache_dir"] = s.cache_dir.string();
    d["use_nvrtc"] = s.use_nvrtc;
    d["nvcc_compiler"] = s.nvcc_compiler;
    d["cpp_standard"] = s.cpp_standard;
    d["debug"] = s.debug;
    d["print_compiler_command"] = s.print_compiler_command;
    d["print_load_time"] = s.print_load_time;
    d["ptxas_verbose"] = s.ptxas_verbose;
    d["ptxas_check"] = s.ptxas_check;
    d["with_lineinfo"] = s.with_lineinfo;
    d["dump_ptx"] = s.dump_ptx;
    d["dump_sass"] = s.dump_sass;
    d["print_configs"] = s.print_configs;
    return d;
}

py::list setting_registry() {
    py::list out;
    for (const auto& info : jit::setting_registry()) {
        py::dict d;
        d["name"] = info.name;
        d["type"] = info.type;
        d["default"] = info.default_value;
        d["doc"] = info.doc;
        out.append(d);
    }
    return out;
}

py::dict device_info(int device) {
    const auto& info = api::device_info_cached(device);
    py::dict d;
    d["ordinal"] = info.ordinal;
    d["cc_major"] = info.cc_major;
    d["cc_minor"] = info.cc_minor;
    d["sm_count"] = info.sm_count;
    d["max_smem_per_block_optin"] = info.max_smem_per_block_optin;
    d["arch"] = info.arch;
    return d;
}

// ---- exception translation ------------------------------------------------------------------------

void translate_exceptions() {
    py::register_local_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (python_error& e) {
            e.restore();
        } catch (const c10::TypeError& e) {
            PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
        } catch (const c10::ValueError& e) {
            PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
        } catch (const c10::NotImplementedError& e) {
            PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
        } catch (const c10::IndexError& e) {
            PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
        } catch (const c10::Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
        } catch (const jit::Error& e) {  // ConfigError, CompileError, CudaError
            PyErr_SetString(PyExc_RuntimeError, e.what());
        }
    });
}

}  // namespace

// ---- torch.library registration -------------------------------------------------------------------

#define DG_FOR_EACH_GEMM(X)                                              \
    X(GemmOp::kFp8Nt, fp8_kernel)                                        \
    X(GemmOp::kFp8Nn, fp8_kernel)                                        \
    X(GemmOp::kFp8Tn, fp8_kernel)                                        \
    X(GemmOp::kFp8Tt, fp8_kernel)                                        \
    X(GemmOp::kMGroupedFp8NtContiguous, fp8_m_contiguous_kernel)         \
    X(GemmOp::kMGroupedFp8NtMasked, fp8_masked_kernel)                   \
    X(GemmOp::kKGroupedFp8NtContiguous, fp8_k_grouped_kernel)            \
    X(GemmOp::kBf16Nt, bf16_kernel)                                      \
    X(GemmOp::kBf16Nn, bf16_kernel)                                      \
    X(GemmOp::kBf16Tn, bf16_kernel)                                      \
    X(GemmOp::kBf16Tt, bf16_kernel)                                      \
    X(GemmOp::kMGroupedBf16NtContiguous, bf16_m_contiguous_kernel)       \
    X(GemmOp::kMGroupedBf16NtMasked, bf16_masked_kernel)                 \
    X(GemmOp::kKGroupedBf16TnContiguous, bf16_k_grouped_kernel)

TORCH_LIBRARY(deep_gemm, m) {
#define DG_DEF(op, kernel) m.def(gemm_schema(op).c_str());
    DG_FOR_EACH_GEMM(DG_DEF)
#undef DG_DEF
    m.def("get_mn_major_tma_aligned_tensor(Tensor sf) -> Tensor");
    m.def("transform_sf_into_required_layout(Tensor sf, SymInt mn, SymInt k, int[] recipe, int? num_groups=None, bool is_sfa=False, "
          "bool disable_ue8m0_cast=False) -> Tensor");
}

TORCH_LIBRARY_IMPL(deep_gemm, CUDA, m) {
#define DG_IMPL(op, kernel) m.impl(api::gemm_op_spec(op).name, TORCH_FN((kernel<op, false>)));
    DG_FOR_EACH_GEMM(DG_IMPL)
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(mn_major_op));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_op));
}

// CPU: the same validation, then "requires CUDA tensors" (the layout utilities have a CPU fallback).
TORCH_LIBRARY_IMPL(deep_gemm, CPU, m) {
    DG_FOR_EACH_GEMM(DG_IMPL)
#undef DG_IMPL
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(mn_major_op));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_op));
}

// Meta (also what FakeTensor runs under torch.compile): validation and output shapes only.
TORCH_LIBRARY_IMPL(deep_gemm, Meta, m) {
#define DG_META(op, kernel) m.impl(api::gemm_op_spec(op).name, TORCH_FN((kernel<op, true>)));
    DG_FOR_EACH_GEMM(DG_META)
#undef DG_META
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(api::get_mn_major_tma_aligned_tensor_meta));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_meta));
}

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
    m.def("device_info", &device_info, py::arg("device"));
    m.def("_install_python_logging", &install_python_logging);
    m.def("_uninstall_python_logging", &uninstall_python_logging);
    m.def("_log", [](int level, const std::string& message) { jit::log(static_cast<jit::LogLevel>(level), message); },
          py::arg("level"), py::arg("message"), py::call_guard<py::gil_scoped_release>(),
          "Send one record through the C++ log path without holding the GIL (tests).");

    // ---- runtime knobs ----
    m.def("set_num_sms", &api::set_num_sms, py::arg("new_num_sms"));
    m.def("get_num_sms", &api::get_num_sms);
    m.def("set_pdl", &api::set_pdl, py::arg("enable_pdl"));
    m.def("get_pdl", &api::get_pdl);
    m.def("set_ignore_compile_dims", &api::set_ignore_compile_dims, py::arg("new_value"));
    m.def("get_ignore_compile_dims", &api::get_ignore_compile_dims);
    m.def("set_mk_alignment_for_contiguous_layout", &api::set_mk_alignment_for_contiguous_layout, py::arg("new_value"));
    m.def("get_mk_alignment_for_contiguous_layout", &api::get_mk_alignment_for_contiguous_layout);
    m.def("get_theoretical_mk_alignment_for_contiguous_layout", &api::get_theoretical_mk_alignment_for_contiguous_layout);

    // ---- layout ----
    m.def("get_tma_aligned_size", &api::get_tma_aligned_size, py::arg("x"), py::arg("element_size"));
    m.def("get_mn_major_tma_aligned_tensor", &mn_major_entry, py::arg("sf"));
    m.def("transform_sf_into_required_layout", &transform_sf_entry, py::arg("sf"), py::arg("mn"), py::arg("k"), py::arg("recipe"),
          py::arg("num_groups") = py::none(), py::arg("is_sfa") = false, py::arg("disable_ue8m0_cast") = false);

    // ---- GEMMs (DeepGEMM signatures; METH_FASTCALL functions) ----
    for (PyMethodDef* def = g_fast_methods; def->ml_name != nullptr; ++def) {
        PyObject* fn = PyCFunction_NewEx(def, nullptr, m.attr("__name__").ptr());
        if (fn == nullptr) throw py::error_already_set();
        m.add_object(def->ml_name, py::reinterpret_steal<py::object>(fn));
    }
}
