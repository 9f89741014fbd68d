// torch.library ops and fast entries of the paged MQA logits (csrc/apis/paged_attention.hpp), bound from their
// op_table.hpp rows (table_op.hpp). The Python wrappers (deep_gemm/_paged_mqa.py) resolve DeepGEMM's call forms
// (2.6.1 clean_logits, 2.8.1 logits_dtype, sgl-deep-gemm 0.2.5 indices) and pass plain arguments here.
#include "python/paged_mqa_ops.hpp"

#include "apis/paged_attention.hpp"
#include "python/jit_tools.hpp"
#include "python/table_op.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Metadata = TableOp<table::row_index("get_paged_mqa_logits_metadata"), &api::get_paged_mqa_logits_metadata>;
using Logits = TableOp<table::row_index("fp8_paged_mqa_logits"), &api::fp8_paged_mqa_logits>;

// Builds one kernel config for sm_90a without a GPU; returns the cache entry.
py::dict compile_paged_mqa_kernel(int num_heads, int next_n, bool lens_2d, bool clean, bool bf16_logits, int block_kv) {
    return build_entry(api::paged_mqa_logits_kernel_source(num_heads, next_n, lens_2d, clean, bf16_logits, block_kv), "sm_90a");
}

}  // namespace

void register_paged_mqa_entries(py::module_& m) {
    m.def("_compile_paged_mqa_kernel", &compile_paged_mqa_kernel, py::arg("num_heads"), py::arg("next_n"), py::arg("lens_2d"),
          py::arg("clean"), py::arg("bf16_logits"), py::arg("block_kv") = 64);
    Metadata::add_entry(m, "Paged MQA-logits schedule; see deep_gemm.get_paged_mqa_logits_metadata.");
    Logits::add_entry(m, "Paged MQA logits; see deep_gemm.fp8_paged_mqa_logits.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors" (the metadata op runs
// on CPU as well: it is tensor arithmetic); Meta (FakeTensor under torch.compile): validation and the output's shape.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    Metadata::define(m);
    Logits::define(m);
}
