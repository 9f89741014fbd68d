// torch.library ops and fast entries of the MQA-logits ops (csrc/apis/attention.hpp), bound from their
// op_table.hpp rows (table_op.hpp). Kept in its own library fragment so the other registrations stay untouched.
#include "python/attention_ops.hpp"

#include "apis/attention.hpp"
#include "python/jit_tools.hpp"
#include "python/table_op.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Logits = TableOp<table::row_index("fp8_mqa_logits"), &api::fp8_mqa_logits>;
using Metadata = TableOp<table::row_index("get_mqa_logits_metadata"), &api::get_mqa_logits_metadata>;

// Builds one kernel config for sm_90a without a GPU (the compile-only tests); returns the cache entry.
py::dict compile_kernel(int num_heads, int head_dim, bool bf16_logits, bool compressed, bool clean) {
    return build_entry(api::mqa_logits_kernel_source(num_heads, head_dim, bf16_logits, compressed, clean), "sm_90a");
}

}  // namespace

void register_attention_entries(py::module_& m) {
    m.def("_compile_mqa_logits_kernel", &compile_kernel, py::arg("num_heads"), py::arg("head_dim"), py::arg("bf16_logits"),
          py::arg("compressed"), py::arg("clean"));
    Logits::add_entry(m, "MQA logits with unpacked operands; see deep_gemm.fp8_fp4_mqa_logits.");
    Metadata::add_entry(m, "Per-CTA kv ranges; see deep_gemm.get_mqa_logits_metadata.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors" (the metadata runs anywhere);
// Meta (FakeTensor under torch.compile): validation and the output's shape.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    Logits::define(m);
    Metadata::define(m);
}
