// torch.library op and fast entry of tf32_hc_prenorm_gemm (csrc/apis/hyperconnection.hpp), bound from its
// op_table.hpp row (table_op.hpp). Kept in its own library fragment so the GEMM registrations stay untouched.
#include "python/hyperconnection_ops.hpp"

#include "apis/hyperconnection.hpp"
#include "python/jit_tools.hpp"
#include "python/table_op.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using HcPrenorm = TableOp<table::row_index("tf32_hc_prenorm_gemm"), &api::tf32_hc_prenorm_gemm>;

// Builds the kernel a shape would use for sm_90a without a GPU (compile-only tests); returns the cache entry.
py::dict compile_hc_kernel(int m, int n, int k, int num_splits, int num_sms) {
    const api::HcPrenormKernelPlan plan = api::hc_prenorm_kernel_plan(m, n, k, num_splits, num_sms);
    py::dict result = build_entry(plan.source, "sm_90a");
    result["block_n"] = plan.block_n;
    result["stages"] = plan.stages;
    result["reduce"] = plan.reduce;
    result["num_units"] = plan.num_units;
    result["smem_bytes"] = plan.smem_bytes;
    return result;
}

}  // namespace

void register_hc_entries(py::module_& m) {
    HcPrenorm::add_entry(m, "TF32 d = a @ b.T and sqr_sum = (a * a).sum(-1); see deep_gemm.tf32_hc_prenorm_gemm.");
    m.def("_compile_hc_prenorm_kernel", &compile_hc_kernel, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("num_splits") = 1,
          py::arg("num_sms") = 132);
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor under
// torch.compile): validation only, the op returns nothing.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    deep_gemm::python::HcPrenorm::define(m);
}
