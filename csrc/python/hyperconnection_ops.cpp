// torch.library op and fast-path entry of tf32_hc_prenorm_gemm (csrc/apis/hyperconnection.hpp). Kept in its
// own library fragment so the GEMM registrations (torch_library.cpp) stay untouched.
#include "python/hyperconnection_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>

#include "apis/common.hpp"
#include "apis/hyperconnection.hpp"
#include "jit_kernels/impls/sm90_tf32_hc_prenorm_gemm.hpp"
#include "python/jit_tools.hpp"
#include "python/op_table.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

template <bool kFake>
void hc_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& sqr_sum,
               std::optional<int64_t> num_splits) {
    api::tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits, kFake);
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
void hc_entry(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& sqr_sum,
              std::optional<int64_t> num_splits) {
    if (plain_tensors({&a, &b, &d, &sqr_sum})) {
        py::gil_scoped_release no_gil;
        hc_kernel<false>(a, b, d, sqr_sum, num_splits);
        return;
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::tf32_hc_prenorm_gemm", "")
                               .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           std::optional<int64_t>)>();
    op.call(a, b, d, sqr_sum, num_splits);
}

// Builds the kernel a shape would use for sm_90a without a GPU (compile-only tests); returns the cache entry.
py::dict compile_hc_kernel(int m, int n, int k, int num_splits, int num_sms) {
    const kernels::HcPrenormPlan plan = kernels::plan_hc_prenorm(m, n, k, num_splits, num_sms);
    const kernels::GemmKernelSource src = kernels::hc_prenorm_source(plan.config);
    py::dict result = build_entry(src.kernel_source(), "sm_90a");
    result["block_n"] = plan.config.block_n;
    result["stages"] = plan.config.stages;
    result["reduce"] = plan.reduce;
    result["num_units"] = plan.num_units;
    result["smem_bytes"] = plan.smem_bytes;
    return result;
}

}  // namespace

void register_hc_entries(py::module_& m) {
    m.def("tf32_hc_prenorm_gemm", &hc_entry, py::arg("a"), py::arg("b"), py::arg("d"), py::arg("sqr_sum"),
          py::arg("num_splits") = py::none(), "TF32 d = a @ b.T and sqr_sum = (a * a).sum(-1); see deep_gemm.tf32_hc_prenorm_gemm.");
    m.def("_compile_hc_prenorm_kernel", &compile_hc_kernel, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("num_splits") = 1,
          py::arg("num_sms") = 132);
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor under
// torch.compile): validation only, the op returns nothing.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    def_op(m, table::schema_of("tf32_hc_prenorm_gemm"),
           TORCH_FN(hc_kernel<false>), TORCH_FN(hc_kernel<true>));
}
