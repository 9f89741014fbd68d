// The out-of-line half of fast_args.hpp: the exception -> Python error mapping (shared by the fast
// entries and the pybind11 translator) and the argument helpers that are off the per-call hot path.
#include "python/fast_args.hpp"

#include <algorithm>
#include <array>

#include "jit/errors.hpp"

namespace deep_gemm::python {

namespace {

// Sets the Python error for the exception in flight when it is python_error, a c10 error or a jit::Error;
// returns false (nothing set) for any other exception.
bool set_known_python_error() {
    try {
        throw;
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
    } catch (const jit::Error& e) {  // ConfigError, CompileError, CudaError
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        return false;
    }
    return true;
}

}  // namespace

void set_python_error() noexcept {
    try {
        throw;
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (...) {
        if (set_known_python_error()) return;
        try {
            throw;
        } catch (const std::exception& e) {  // any other std::exception
            PyErr_SetString(PyExc_RuntimeError, e.what());
        } catch (...) {
            PyErr_SetString(PyExc_RuntimeError, "deep_gemm: unknown C++ exception");
        }
    }
}

void translate_exceptions() {
    py::register_local_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (...) {
            if (not set_known_python_error()) throw;  // left to pybind11's own translators
        }
    });
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

void int_range_error(const char* op, const char* name, PyObject* o, int64_t lo, int64_t hi) {
    PyErr_Clear();
    std::string value = "?";
    if (PyObject* repr = PyObject_Repr(o)) {
        if (const char* text = PyUnicode_AsUTF8(repr)) value = text;
        Py_DECREF(repr);
    }
    PyErr_Clear();
    const bool full = lo == std::numeric_limits<int64_t>::min() and hi == std::numeric_limits<int64_t>::max();
    if (full) api::throw_value_error(fmt::format("{}: {} must fit in a signed 64-bit integer; got {}", op, name, value));
    api::throw_value_error(fmt::format("{}: {} must be in [{}, {}]; got {}", op, name, lo, hi, value));
}

int64_t index_arg(const char* op, const char* name, const py::handle& o, int64_t lo, int64_t hi) {
    PyObject* p = o.ptr();
    if (p == nullptr or PyLong_Check(p) or PyFloat_Check(p) or not PyIndex_Check(p)) return int_arg(op, name, p, lo, hi);
    const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(p));
    if (not index) {
        PyErr_Clear();
        api::throw_type_error(fmt::format("{}: {} must be an int; got {}", op, name, type_name(p)));
    }
    return int_arg(op, name, index.ptr(), lo, hi);
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
        values.push_back(int64_arg(op, "recipe", item));
    }
    return api::parse_recipe(op, values);
}

namespace {

// A recipe_a / recipe_b argument: None or two ints (mn granularity, k granularity).
std::optional<std::array<int64_t, 2>> parse_half_recipe(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or o == Py_None) return std::nullopt;
    const std::vector<int64_t> v = PySequence_Check(o) and not PyUnicode_Check(o) ? int_list_arg(op, name, o) : std::vector<int64_t>{};
    if (v.size() != 2)
        api::throw_type_error(fmt::format("{}: {} must be None or a pair of ints (mn granularity, k granularity); got {}", op, name,
                                          std::string(py::repr(o))));
    return std::array<int64_t, 2>{v[0], v[1]};
}

}  // namespace

std::optional<api::Recipe> resolve_recipe_objects(const char* op, PyObject* recipe, PyObject* recipe_a, PyObject* recipe_b) {
    std::optional<api::Recipe> r = recipe ? parse_recipe_object(op, py::handle(recipe)) : std::nullopt;
    const auto ra = parse_half_recipe(op, "recipe_a", recipe_a), rb = parse_half_recipe(op, "recipe_b", recipe_b);
    if (not ra and not rb) return r;
    if (not ra or not rb)
        api::throw_value_error(fmt::format("{}: recipe_a and recipe_b must be given together; got recipe_a={}, recipe_b={}", op,
                                           ra ? fmt::format("({}, {})", (*ra)[0], (*ra)[1]) : "None",
                                           rb ? fmt::format("({}, {})", (*rb)[0], (*rb)[1]) : "None"));
    if ((*ra)[1] != (*rb)[1])
        api::throw_value_error(fmt::format("{}: recipe_a and recipe_b must have the same k granularity; got {} and {}", op, (*ra)[1],
                                           (*rb)[1]));
    const std::vector<int64_t> merged{(*ra)[0], (*rb)[0], (*ra)[1]};
    if (r and not std::equal(r->begin(), r->end(), merged.begin()))
        api::throw_value_error(fmt::format("{}: recipe ({}, {}, {}) conflicts with recipe_a/recipe_b, which give ({}, {}, {})", op, (*r)[0],
                                           (*r)[1], (*r)[2], merged[0], merged[1], merged[2]));
    return api::parse_recipe(op, merged);
}

}  // namespace deep_gemm::python
