// JIT and runtime tools of deep_gemm._C (jit_tools.cpp): the functions behind compile_only, get_settings,
// setting_registry and device_info, returning plain Python dicts and lists.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "jit/jit.hpp"

namespace deep_gemm::python {

// Builds `src` for `arch` into the cache with the GIL released (the compile-only entries of every kernel
// family): {name, symbol, dir, compiled, cubin_size}.
pybind11::dict build_entry(const jit::KernelSource& src, const std::string& arch);
pybind11::dict compile_only(const std::string& kernel, const std::string& arch);
// (name, symbol, code) of a compile_only kernel, for warm-ups that build it with others.
pybind11::tuple compile_only_kernel_source(const std::string& kernel);
pybind11::dict settings_dict();
pybind11::list setting_registry();
pybind11::dict device_info(int device);

}  // namespace deep_gemm::python
