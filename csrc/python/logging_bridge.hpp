// Routing of the JIT core's log records to Python's logging module (logging_bridge.cpp); PYBIND11_MODULE
// installs it at import and exposes both functions as _install_python_logging/_uninstall_python_logging.
#pragma once

namespace deep_gemm::python {

void install_python_logging();
void uninstall_python_logging();

}  // namespace deep_gemm::python
