// Argument binding of the METH_FASTCALL entries (FastArgs, tensor/str/bool/int helpers) and the mapping
// of C++ exceptions onto Python errors (set_python_error, guarded, the pybind11 translator). The helpers
// that run on every call are inline here so the fast path compiles as it did in one file.
#pragma once

#include <torch/extension.h>

#include <fmt/format.h>

#include <limits>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apis/common.hpp"
#include "apis/layout.hpp"
#include "python/gemm_table.hpp"

namespace deep_gemm::python {

namespace py = pybind11;

using OptTensor = std::optional<at::Tensor>;

// ---- exception translation ------------------------------------------------------------------------

// Sets the Python error for the exception in flight (the same mapping as the pybind11 translator).
void set_python_error() noexcept;

// Registers the pybind11 translator of python_error, the c10 error types and jit::Error.
void translate_exceptions();

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

// As guarded(), for a body that returns the entry's result (a new reference).
template <typename Body>
PyObject* guarded_value(Body&& body) noexcept {
    try {
        return body();
    } catch (...) {
        set_python_error();
        return nullptr;
    }
}

// ---- arguments ------------------------------------------------------------------------------------

std::string type_name(PyObject* o);

// Binds positional and keyword arguments to the parameters of a table row (borrowed references; nullptr =
// not given): an OpArg row of gemm_table.hpp or an OpParam row of op_table.hpp.
class FastArgs {
public:
    static constexpr int kMax = 13;
    FastArgs(const char* fname, const OpRow& row, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames)
        : FastArgs(fname, row.args, args, nargs, kwnames) {}
    template <class Param>
    FastArgs(const char* fname, std::span<const Param> params, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
        const int n = static_cast<int>(params.size());
        int positional = n;  // parameters that may be given by position (those before a keyword-only one)
        if constexpr (requires { params[0].keyword_only; })
            for (int k = n - 1; k >= 0; --k)
                if (params[k].keyword_only) positional = k;
        if (nargs > positional)
            api::throw_type_error(fmt::format("{}() takes at most {} arguments ({} given)", fname, positional, nargs));
        for (Py_ssize_t j = 0; j < nargs; ++j) slots_[j] = args[j];
        if (kwnames != nullptr) {
            const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
            for (Py_ssize_t j = 0; j < nkw; ++j) {
                PyObject* key = PyTuple_GET_ITEM(kwnames, j);
                int slot = -1;
                for (int k = 0; k < n; ++k)
                    if (PyUnicode_CompareWithASCIIString(key, params[k].name) == 0) slot = k;
                if (slot < 0)
                    api::throw_type_error(fmt::format("{}() got an unexpected keyword argument '{}'", fname, PyUnicode_AsUTF8(key)));
                if (slots_[slot] != nullptr)
                    api::throw_type_error(fmt::format("{}() got multiple values for argument '{}'", fname, params[slot].name));
                slots_[slot] = args[nargs + j];
            }
        }
        for (int k = 0; k < n and params[k].default_value == nullptr; ++k)
            if (slots_[k] == nullptr) api::throw_type_error(fmt::format("{}() missing required argument '{}'", fname, params[k].name));
    }
    PyObject* operator[](size_t i) const { return slots_[i]; }

private:
    PyObject* slots_[kMax] = {};
};

inline const at::Tensor& tensor_arg(const char* op, const char* name, PyObject* o) {
    if (C10_UNLIKELY(o == nullptr or not THPVariable_Check(o)))
        api::throw_type_error(fmt::format("{}: {} must be a torch.Tensor; got {}", op, name, o ? type_name(o) : "nothing"));
    return THPVariable_Unpack(o);
}

inline const at::Tensor* opt_tensor_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or o == Py_None) return nullptr;
    return &tensor_arg(op, name, o);
}

// A DeepGEMM operand: a (tensor, scales) tuple or list.
inline std::pair<const at::Tensor*, const at::Tensor*> pair_arg(const char* op, const char* name, PyObject* o) {
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

inline std::string_view str_arg(const char* op, const char* name, PyObject* o, std::string_view fallback) {
    if (o == nullptr) return fallback;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &size) : nullptr;
    if (data == nullptr) {
        PyErr_Clear();
        api::throw_type_error(fmt::format("{}: {} must be a str; got {}", op, name, type_name(o)));
    }
    return {data, static_cast<size_t>(size)};
}

inline bool bool_arg(const char* op, const char* name, PyObject* o, bool fallback) {
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

// ValueError for an int argument outside [lo, hi] (also one beyond 64 bits), naming the op, the argument and
// the value.
[[noreturn]] void int_range_error(const char* op, const char* name, PyObject* o, int64_t lo, int64_t hi);

inline int64_t int_arg(const char* op, const char* name, PyObject* o, int64_t lo = std::numeric_limits<int64_t>::min(),
                       int64_t hi = std::numeric_limits<int64_t>::max()) {
    if (o == nullptr or not PyLong_Check(o) or PyBool_Check(o))
        api::throw_type_error(fmt::format("{}: {} must be an int; got {}", op, name, o ? type_name(o) : "nothing"));
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (C10_UNLIKELY(overflow != 0 or v < lo or v > hi)) int_range_error(op, name, o, lo, hi);
    return v;
}

// The int parameters of the pybind11 functions are taken as Python objects and converted here: pybind11's
// own conversion rejects an int too large for the C++ type with a message that names neither the op nor the
// argument ("incompatible function arguments", "C++ type '?'"). Like pybind11, these accept any object with
// __index__ (numpy ints), but not bool or float.
int64_t index_arg(const char* op, const char* name, const py::handle& o, int64_t lo, int64_t hi);
inline int int32_arg(const char* op, const char* name, const py::handle& o) {
    return static_cast<int>(index_arg(op, name, o, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}
inline int64_t int64_arg(const char* op, const char* name, const py::handle& o) {
    return index_arg(op, name, o, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
}

std::vector<int64_t> int_list_arg(const char* op, const char* name, PyObject* o);

inline OptTensor to_optional(const at::Tensor* t) { return t ? OptTensor(*t) : OptTensor(); }

// A recipe argument: None, or a sequence of 3 ints (api::parse_recipe checks the values).
std::optional<api::Recipe> parse_recipe_object(const char* op, const py::handle& obj);

// DeepGEMM's recipe / recipe_a / recipe_b triple as one recipe. recipe_a = (mn_gran_a, k_gran) and
// recipe_b = (mn_gran_b, k_gran) name the A and B scale granularities separately; given, they define
// (mn_gran_a, mn_gran_b, k_gran), and a recipe passed as well must say the same (else ValueError).
// Null pointers are absent arguments. deep_gemm/__init__.py has the same rule for the traced path.
std::optional<api::Recipe> resolve_recipe_objects(const char* op, PyObject* recipe, PyObject* recipe_a, PyObject* recipe_b);

// An optional int argument: absent or None -> nullopt.
inline std::optional<int64_t> opt_int_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or o == Py_None) return std::nullopt;
    return int_arg(op, name, o);
}
inline std::optional<int64_t> opt_int64_arg(const char* op, const char* name, const py::handle& o) {
    if (o.is_none()) return std::nullopt;
    return int64_arg(op, name, o);
}
inline std::optional<int> opt_int32_arg(const char* op, const char* name, const py::handle& o) {
    if (o.is_none()) return std::nullopt;
    return int32_arg(op, name, o);
}

}  // namespace deep_gemm::python
