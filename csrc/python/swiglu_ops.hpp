// The fused FP8 quantisation ops (swiglu_apply_weight_to_fp8, apply_weight_to_fp8): their torch.library
// registration (swiglu_ops.cpp, a library fragment) and their fast-path entries on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C.swiglu_apply_weight_to_fp8 and _C.apply_weight_to_fp8.
void register_quant_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
