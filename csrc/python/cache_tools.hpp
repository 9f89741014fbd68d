// deep_gemm._C functions behind `python -m deep_gemm cache` and `info` (cache_tools.cpp): the cache
// maintenance of the JIT core, the compiler the JIT would use, and building a recorded kernel source (warmup),
// as plain dicts and lists.
#pragma once

#include <pybind11/pybind11.h>

namespace deep_gemm::python {

void register_cache_tools(pybind11::module_& m);

}  // namespace deep_gemm::python
