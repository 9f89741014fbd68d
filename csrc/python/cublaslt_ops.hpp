// The cublaslt_gemm_{nt,nn,tn,tt} ops: their torch.library registration (cublaslt_ops.cpp, a library
// fragment of its own) and their fast-path entries on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C.cublaslt_gemm_{nt,nn,tn,tt} and _C._cublaslt_library (which cuBLASLt file was loaded).
void register_cublaslt_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
