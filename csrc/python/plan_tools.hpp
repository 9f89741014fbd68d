// deep_gemm._C._plan_gemm_call (plan_tools.cpp): the kernels a GEMM op call would compile, from the op name
// and sizes alone (no tensors, no GPU), for warm-ups planned on a CPU machine.
#pragma once

#include <pybind11/pybind11.h>

namespace deep_gemm::python {

void register_plan_tools(pybind11::module_& m);

}  // namespace deep_gemm::python
