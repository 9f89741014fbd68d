// tf32_hc_prenorm_gemm (csrc/apis/hyperconnection.hpp): its torch.library registration (hyperconnection_ops.cpp,
// a library fragment) and its fast-path entry on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C.tf32_hc_prenorm_gemm and _C._compile_hc_prenorm_kernel.
void register_hc_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
