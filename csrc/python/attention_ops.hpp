// The MQA-logits ops (fp8_mqa_logits, get_mqa_logits_metadata): their torch.library registration
// (attention_ops.cpp, a library fragment) and their fast-path entries on deep_gemm._C.
#pragma once

#include <torch/extension.h>

namespace deep_gemm::python {

// Adds _C._fp8_mqa_logits_unpacked (the public wrappers are in deep_gemm/_mqa_logits.py),
// _C.get_mqa_logits_metadata and _C._compile_mqa_logits_kernel.
void register_attention_entries(pybind11::module_& m);

}  // namespace deep_gemm::python
