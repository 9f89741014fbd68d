// torch.library ops and fast entries of cublaslt_gemm_* and _cublaslt_gemm_scaled (csrc/apis/cublaslt.hpp),
// bound from their op_table.hpp rows (table_op.hpp). The schema matches the bf16_gemm_* ops without
// compiled_dims: d is mutated in place, c may alias d.
#include "python/cublaslt_ops.hpp"

#include "apis/cublaslt.hpp"
#include "python/table_op.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using api::CublasLtLayout;

// api::cublaslt_gemm for one layout: the row's parameters (a, b, d, c), then `fake`.
template <CublasLtLayout kLayout>
constexpr auto gemm_in_layout = [](const auto&... args) { api::cublaslt_gemm(kLayout, args...); };

using Nt = TableOp<table::row_index("cublaslt_gemm_nt"), gemm_in_layout<CublasLtLayout::kNt>>;
using Nn = TableOp<table::row_index("cublaslt_gemm_nn"), gemm_in_layout<CublasLtLayout::kNn>>;
using Tn = TableOp<table::row_index("cublaslt_gemm_tn"), gemm_in_layout<CublasLtLayout::kTn>>;
using Tt = TableOp<table::row_index("cublaslt_gemm_tt"), gemm_in_layout<CublasLtLayout::kTt>>;
using Scaled = TableOp<table::row_index("_cublaslt_gemm_scaled"), &api::cublaslt_gemm_scaled>;

py::dict library_info() {
    const api::CublasLtInfo info = api::cublaslt_library_info();
    py::dict result;
    result["path"] = info.path;
    result["version"] = info.version;
    return result;
}

}  // namespace

void register_cublaslt_entries(py::module_& m) {
    Nt::add_entry(m, "d = c + a @ b.T (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_nt.");
    Nn::add_entry(m, "d = c + a @ b (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_nn.");
    Tn::add_entry(m, "d = c + a.T @ b (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_tn.");
    Tt::add_entry(m, "d = c + a.T @ b.T (BF16 or float8_e4m3fn, cuBLASLt); see deep_gemm.cublaslt_gemm_tt.");
    Scaled::add_entry(m, "d = c + alpha * (a @ b) through cuBLASLt (the bf16_gemm_* ops with alpha != 1).");
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
    Nt::define(m);
    Nn::define(m);
    Tn::define(m);
    Tt::define(m);
    Scaled::define(m);
}
