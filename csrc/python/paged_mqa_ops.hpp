// The paged MQA-logits ops (get_paged_mqa_logits_metadata, fp8_paged_mqa_logits): their torch.library
// registration (paged_mqa_ops.cpp, a library fragment) and their fast-path entries on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C.get_paged_mqa_logits_metadata, _C._fp8_paged_mqa_logits and _C._compile_paged_mqa_kernel.
void register_paged_mqa_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
