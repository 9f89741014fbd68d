// The out-of-line half of table_op.hpp: argument conversions off the per-call hot path and the registration of
// a fast entry.
#include "python/table_op.hpp"

#include <charconv>

namespace deep_gemm::python {

std::vector<int64_t> parse_int_list(std::string_view text) {
    std::vector<int64_t> out;
    while (not text.empty()) {
        const size_t skip = text.find_first_not_of(", ");
        if (skip == std::string_view::npos) break;
        text.remove_prefix(skip);
        int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc()) throw std::logic_error(fmt::format("op_table.hpp: malformed int default \"{}\"", text));
        out.push_back(value);
        text.remove_prefix(static_cast<size_t>(end - text.data()));
    }
    return out;
}

double float_arg(const char* op, const char* name, PyObject* o) {
    if (o != nullptr and not PyBool_Check(o) and (PyFloat_Check(o) or PyLong_Check(o) or PyNumber_Check(o))) {
        const double v = PyFloat_AsDouble(o);
        if (not (v == -1.0 and PyErr_Occurred())) return v;
        PyErr_Clear();
    }
    api::throw_type_error(fmt::format("{}: {} must be a float; got {}", op, name, o ? type_name(o) : "nothing"));
}

at::ScalarType dtype_arg(const char* op, const char* name, PyObject* o) {
    if (o == nullptr or not THPDtype_Check(o))
        api::throw_type_error(fmt::format("{}: {} must be a torch.dtype; got {}", op, name, o ? type_name(o) : "nothing"));
    return reinterpret_cast<THPDtype*>(o)->scalar_type;
}

void add_fastcall(py::module_& m, const char* name, PyObject* (*fn)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) noexcept,
                  const std::string& text_signature, std::string_view doc) {
    // CPython keeps pointers to the method definition and its docstring: both live as long as the process.
    static std::deque<std::string> docs;
    static std::deque<PyMethodDef> defs;
    // "name(a, b, ...)\n--\n\n" at the start of the docstring becomes the function's __text_signature__.
    docs.push_back(fmt::format("{}{}\n--\n\n{}", name, text_signature, doc));
    defs.push_back({name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn)), METH_FASTCALL | METH_KEYWORDS, docs.back().c_str()});
    PyObject* f = PyCFunction_NewEx(&defs.back(), nullptr, m.attr("__name__").ptr());
    if (f == nullptr) throw py::error_already_set();
    m.add_object(name, py::reinterpret_steal<py::object>(f));
}

}  // namespace deep_gemm::python
