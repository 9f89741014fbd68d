// An op of op_table.hpp bound from its row: TableOp<table::row_index("name"), kApi> derives from the row's
// parameters the C++ signature of the op's kernels and of its dispatcher call, and gives
//  * kernel<kFake>: the CUDA/CPU (kFake false) and Meta (true) kernel, kApi(parameters..., kFake), where kApi
//    is the op's csrc/apis function (or a captureless lambda around it) taking the row's parameters and `fake`;
//  * define(m): the torch.library op (schema_text(row) and the kernels, through def_op);
//  * add_entry(m, doc): the METH_FASTCALL fast entry _C.<row.entry>: binds positional and keyword arguments
//    by the row (defaults included), then runs kernel<false> without the GIL when every tensor is a plain
//    CPU/CUDA tensor and no dispatch mode is active, else calls the dispatcher op (meta, fake, subclasses).
// So an op's parameter list is written in its row and in its csrc/apis function, and nowhere else in C++.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Dtype.h>
#include <torch/extension.h>

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "python/fast_args.hpp"
#include "python/op_table.hpp"
#include "python/torch_ops.hpp"

namespace deep_gemm::python {

// ---- C++ types of the schema types ----------------------------------------------------------------
// Arg: the type in the kernels' and the dispatcher's signature. Held: what the fast entry binds a Python
// argument to (a reference to the caller's tensor, an owned list), convertible to Arg.

template <ParamType> struct ParamTraits;
template <> struct ParamTraits<ParamType::kTensor> {
    using Arg = const at::Tensor&;
    using Held = std::reference_wrapper<const at::Tensor>;
};
template <> struct ParamTraits<ParamType::kMutTensorA> : ParamTraits<ParamType::kTensor> {};
template <> struct ParamTraits<ParamType::kMutTensorB> : ParamTraits<ParamType::kTensor> {};
template <> struct ParamTraits<ParamType::kOptTensor> {
    using Arg = const std::optional<at::Tensor>&;
    using Held = std::optional<at::Tensor>;
};
template <> struct ParamTraits<ParamType::kInt> { using Arg = int64_t; using Held = int64_t; };
template <> struct ParamTraits<ParamType::kOptInt> { using Arg = std::optional<int64_t>; using Held = std::optional<int64_t>; };
template <> struct ParamTraits<ParamType::kSymInt> { using Arg = c10::SymInt; using Held = int64_t; };
template <> struct ParamTraits<ParamType::kBool> { using Arg = bool; using Held = bool; };
template <> struct ParamTraits<ParamType::kFloat> { using Arg = double; using Held = double; };
template <> struct ParamTraits<ParamType::kOptFloat> { using Arg = std::optional<double>; using Held = std::optional<double>; };
template <> struct ParamTraits<ParamType::kStr> { using Arg = std::string_view; using Held = std::string_view; };
template <> struct ParamTraits<ParamType::kIntList> { using Arg = c10::IntArrayRef; using Held = std::vector<int64_t>; };
template <> struct ParamTraits<ParamType::kScalarType> { using Arg = at::ScalarType; using Held = at::ScalarType; };

template <Returns> struct ReturnTraits;
template <> struct ReturnTraits<Returns::kNothing> { using Type = void; };
template <> struct ReturnTraits<Returns::kTensor> { using Type = at::Tensor; };
template <> struct ReturnTraits<Returns::kThreeTensors> { using Type = std::tuple<at::Tensor, at::Tensor, at::Tensor>; };

template <size_t kRow> constexpr const OpTableRow& table_row = table::kOtherOps[kRow];
template <size_t kRow, size_t I> constexpr ParamType param_type = table_row<kRow>.params[I].type;

template <size_t kRow, size_t... I>
auto signature_of(std::index_sequence<I...>)
    -> typename ReturnTraits<table_row<kRow>.returns>::Type (*)(typename ParamTraits<param_type<kRow, I>>::Arg...);

// The C++ function type of row kRow's kernels, e.g. at::Tensor(const at::Tensor&, int64_t, int64_t, const std::optional<at::Tensor>&).
template <size_t kRow>
using RowSignature = std::remove_pointer_t<decltype(signature_of<kRow>(std::make_index_sequence<table_row<kRow>.params.size()>()))>;

// ---- converting Python arguments --------------------------------------------------------------------

// "1, 128, 128" -> {1, 128, 128}, "128" -> {128}: a default of the table, parsed once per parameter.
std::vector<int64_t> parse_int_list(std::string_view text);
double float_arg(const char* op, const char* name, PyObject* o);
at::ScalarType dtype_arg(const char* op, const char* name, PyObject* o);

constexpr bool defaults_to_none(const OpParam& p) {
    const char* d = p.default_value;
    return d != nullptr and d[0] == 'N' and d[1] == 'o' and d[2] == 'n' and d[3] == 'e' and d[4] == 0;
}

// Binds Python argument `o` (nullptr: not given, the row's default) of parameter I of row kRow.
template <size_t kRow, size_t I>
typename ParamTraits<param_type<kRow, I>>::Held bind_param(const char* op, PyObject* o) {
    constexpr const OpParam& p = table_row<kRow>.params[I];
    constexpr ParamType type = p.type;
    constexpr bool kNoneDefault = defaults_to_none(p);
    if constexpr (type == ParamType::kTensor or type == ParamType::kMutTensorA or type == ParamType::kMutTensorB) {
        return std::cref(tensor_arg(op, p.name, o));
    } else if constexpr (type == ParamType::kOptTensor) {
        return to_optional(opt_tensor_arg(op, p.name, o));
    } else if constexpr (type == ParamType::kInt or type == ParamType::kSymInt) {
        if constexpr (p.default_value != nullptr) {
            static const int64_t fallback = parse_int_list(p.default_value).at(0);
            if (o == nullptr) return fallback;
        }
        return int64_arg(op, p.name, py::handle(o));
    } else if constexpr (type == ParamType::kOptInt) {
        static_assert(p.default_value == nullptr or kNoneDefault, "an int? parameter defaults to None");
        if (o == nullptr) return std::nullopt;
        return opt_int64_arg(op, p.name, py::handle(o));
    } else if constexpr (type == ParamType::kBool) {
        return bool_arg(op, p.name, o, p.default_value != nullptr and p.default_value[0] == 'T');
    } else if constexpr (type == ParamType::kFloat) {
        static_assert(p.default_value == nullptr, "float defaults are not rendered yet");
        return float_arg(op, p.name, o);
    } else if constexpr (type == ParamType::kOptFloat) {
        static_assert(p.default_value == nullptr or kNoneDefault, "a float? parameter defaults to None");
        if (o == nullptr or o == Py_None) return std::nullopt;
        return float_arg(op, p.name, o);
    } else if constexpr (type == ParamType::kStr) {
        return str_arg(op, p.name, o, p.default_value != nullptr ? p.default_value : "");
    } else if constexpr (type == ParamType::kIntList) {
        if constexpr (p.default_value != nullptr) {
            static const std::vector<int64_t> fallback = parse_int_list(p.default_value);
            if (o == nullptr) return fallback;
        }
        return int_list_arg(op, p.name, o);
    } else {
        static_assert(type == ParamType::kScalarType and p.default_value == nullptr, "ScalarType defaults are not rendered yet");
        return dtype_arg(op, p.name, o);
    }
}

// Whether a bound argument lets the call skip the dispatcher (plain_tensors' test, one argument at a time).
inline bool plain_arg(const std::reference_wrapper<const at::Tensor>& t) { return not t.get().defined() or api::is_plain_tensor(t.get()); }
inline bool plain_arg(const std::optional<at::Tensor>& t) { return not t.has_value() or plain_arg(std::cref(*t)); }
template <class Held>
bool plain_arg(const Held&) { return true; }

inline PyObject* to_python(at::Tensor t) { return THPVariable_Wrap(std::move(t)); }
inline PyObject* to_python(std::tuple<at::Tensor, at::Tensor, at::Tensor> t) {
    PyObject* out = PyTuple_New(3);
    if (out == nullptr) return nullptr;
    PyTuple_SET_ITEM(out, 0, THPVariable_Wrap(std::move(std::get<0>(t))));
    PyTuple_SET_ITEM(out, 1, THPVariable_Wrap(std::move(std::get<1>(t))));
    PyTuple_SET_ITEM(out, 2, THPVariable_Wrap(std::move(std::get<2>(t))));
    return out;
}

// Adds a METH_FASTCALL function to `m`; `text_signature` ("(a, b=None)") becomes its __text_signature__.
void add_fastcall(py::module_& m, const char* name, PyObject* (*fn)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) noexcept,
                  const std::string& text_signature, std::string_view doc);

// ---- the op ---------------------------------------------------------------------------------------

template <size_t kRow, auto kApi, class Signature = RowSignature<kRow>>
struct TableOp;

template <size_t kRow, auto kApi, class Ret, class... Args>
struct TableOp<kRow, kApi, Ret(Args...)> {
    static constexpr const OpTableRow& row = table_row<kRow>;
    static constexpr size_t kCount = sizeof...(Args);

    template <bool kFake>
    static Ret kernel(Args... args) {
        return kApi(args..., kFake);
    }

    static void define(torch::Library& m) {
        def_op(m, schema_text(row), TORCH_FN(kernel<false>), TORCH_FN(kernel<true>));
    }

    static void add_entry(py::module_& m, std::string_view doc) {
        static_assert(std::string_view(row.entry).size() > 0, "the row names no fast entry");
        add_fastcall(m, row.entry, &entry, python_signature(row), doc);
    }

private:
    template <size_t... I>
    static PyObject* call(const FastArgs& args, std::index_sequence<I...>) {
        // Braced initialisation binds the arguments in order, so the first bad one is the one reported.
        std::tuple<typename ParamTraits<param_type<kRow, I>>::Held...> held{bind_param<kRow, I>(row.name, args[I])...};
        const bool plain = api::no_dispatch_mode_active() and (plain_arg(std::get<I>(held)) and ...);
        const auto run = [&]() -> Ret {
            if (plain) {
                py::gil_scoped_release no_gil;
                return kernel<false>(std::get<I>(held)...);
            }
            static const auto op = c10::Dispatcher::singleton()
                                       .findSchemaOrThrow((std::string("deep_gemm::") + row.name).c_str(), "")
                                       .template typed<Ret(Args...)>();
            return op.call(std::get<I>(held)...);
        };
        if constexpr (std::is_void_v<Ret>) {
            run();
            Py_RETURN_NONE;
        } else {
            return to_python(run());
        }
    }

    static PyObject* entry(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
        static_assert(kCount <= FastArgs::kMax);
        try {
            const FastArgs args(row.entry, row.params, argv, nargs, kwnames);
            return call(args, std::make_index_sequence<kCount>());
        } catch (...) {
            set_python_error();
            return nullptr;
        }
    }
};

}  // namespace deep_gemm::python
