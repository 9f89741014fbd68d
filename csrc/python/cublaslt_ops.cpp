// torch.library ops and fast-path entries of cublaslt_gemm_* (csrc/apis/cublaslt.hpp). The schema
// matches the bf16_gemm_* ops without compiled_dims: d is mutated in place, c may alias d.
#include "python/cublaslt_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>

#include <optional>
#include <string>

#include "apis/common.hpp"
#include "apis/cublaslt.hpp"
#include "python/op_table.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using api::CublasLtLayout;
using Opt = std::optional<at::Tensor>;

template <CublasLtLayout kLayout, bool kFake>
void kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c) {
    api::cublaslt_gemm(kLayout, a, b, d, c, kFake);
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
template <CublasLtLayout kLayout>
void entry(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c) {
    if (plain_tensors({&a, &b, &d, opt_ptr(c)})) {
        py::gil_scoped_release no_gil;
        api::cublaslt_gemm(kLayout, a, b, d, c, false);
        return;
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow((std::string("deep_gemm::") + api::cublaslt_op_name(kLayout)).c_str(), "")
                               .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&)>();
    op.call(a, b, d, c);
}

// d = c + alpha * (a @ b) for the bf16_gemm_* ops called with an alpha other than 1 (deep_gemm/_compat28.py);
// `layout` is the CublasLtLayout (0 nt, 1 nn, 2 tn, 3 tt). Not a public name.
CublasLtLayout layout_of(int64_t layout) {
    if (layout < 0 or layout > 3) api::throw_value_error(fmt::format("_cublaslt_gemm_scaled: layout must be 0..3; got {}", layout));
    return static_cast<CublasLtLayout>(layout);
}

template <bool kFake>
void scaled_kernel(int64_t layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c, double alpha) {
    api::bf16_gemm_cublaslt(layout_of(layout), a, b, d, c, kFake, static_cast<float>(alpha));
}

void scaled_entry(int64_t layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c, double alpha) {
    if (plain_tensors({&a, &b, &d, opt_ptr(c)})) {
        py::gil_scoped_release no_gil;
        scaled_kernel<false>(layout, a, b, d, c, alpha);
        return;
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::_cublaslt_gemm_scaled", "")
                               .typed<void(int64_t, const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, double)>();
    op.call(layout, a, b, d, c, alpha);
}

py::dict library_info() {
    const api::CublasLtInfo info = api::cublaslt_library_info();
    py::dict result;
    result["path"] = info.path;
    result["version"] = info.version;
    return result;
}

template <CublasLtLayout kLayout>
void def_entry(py::module_& m, const char* doc) {
    m.def(api::cublaslt_op_name(kLayout), &entry<kLayout>, py::arg("a"), py::arg("b"), py::arg("d"), py::arg("c") = py::none(), doc);
}

}  // namespace

void register_cublaslt_entries(py::module_& m) {
    def_entry<CublasLtLayout::kNt>(m, "d = c + a @ b.T (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_nt.");
    def_entry<CublasLtLayout::kNn>(m, "d = c + a @ b (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_nn.");
    def_entry<CublasLtLayout::kTn>(m, "d = c + a.T @ b (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_tn.");
    def_entry<CublasLtLayout::kTt>(m, "d = c + a.T @ b.T (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_tt.");
    m.def("_cublaslt_gemm_scaled", &scaled_entry, py::arg("layout"), py::arg("a"), py::arg("b"), py::arg("d"), py::arg("c"),
          py::arg("alpha"), "d = c + alpha * (a @ b) through cuBLASLt (the bf16_gemm_* ops with alpha != 1).");
    m.def("_cublaslt_shutdown", &api::cublaslt_shutdown,
          "Releases the cuBLASLt handles, workspaces and plans (deep_gemm.shutdown); later calls create them again.");
    m.def("_cublaslt_library", &library_info,
          "Loads cuBLASLt (no GPU needed) and returns {'path', 'version'}; RuntimeError when it cannot be found.");
}

}  // namespace deep_gemm::python

// CUDA runs cuBLASLt; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor under
// torch.compile): validation only.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    using deep_gemm::api::CublasLtLayout;
    def_op(m, table::schema_of("cublaslt_gemm_nt"), TORCH_FN((kernel<CublasLtLayout::kNt, false>)),
           TORCH_FN((kernel<CublasLtLayout::kNt, true>)));
    def_op(m, table::schema_of("cublaslt_gemm_nn"), TORCH_FN((kernel<CublasLtLayout::kNn, false>)),
           TORCH_FN((kernel<CublasLtLayout::kNn, true>)));
    def_op(m, table::schema_of("cublaslt_gemm_tn"), TORCH_FN((kernel<CublasLtLayout::kTn, false>)),
           TORCH_FN((kernel<CublasLtLayout::kTn, true>)));
    def_op(m, table::schema_of("cublaslt_gemm_tt"), TORCH_FN((kernel<CublasLtLayout::kTt, false>)),
           TORCH_FN((kernel<CublasLtLayout::kTt, true>)));
    def_op(m, table::schema_of("_cublaslt_gemm_scaled"),
           TORCH_FN(scaled_kernel<false>), TORCH_FN(scaled_kernel<true>));
}
