// The einsum and fp8_einsum ops: their torch.library registration (einsum_ops.cpp, a library fragment of its own) and its
// fast-path entry on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C._einsum(expr, a, b, d, c=None, use_cublaslt=False) and _C._fp8_einsum(expr, a, sfa, b, sfb, d, c=None, recipe).
void register_einsum_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
