// The Python logging sink of the JIT core: C++ log records (jit::log) go to logging.getLogger("deep_gemm"),
// taking the GIL only while a record is emitted and never once the interpreter is finalizing.
#include "python/logging_bridge.hpp"

#include <pybind11/pybind11.h>

#include <atomic>
#include <string>

#include "jit/log.hpp"

namespace deep_gemm::python {

namespace py = pybind11;

namespace {

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

}  // namespace

void install_python_logging() {
    if (g_logger == nullptr) g_logger = py::module_::import("logging").attr("getLogger")("deep_gemm").release().ptr();
    g_python_logging.store(true);
    jit::set_log_sink(python_log_sink);
}

void uninstall_python_logging() {
    g_python_logging.store(false);
    jit::set_log_sink({});
}

}  // namespace deep_gemm::python
