// torch.library ops and fast entries of einsum and fp8_einsum (csrc/apis/einsum.hpp), bound from their
// op_table.hpp rows (table_op.hpp): d is mutated in place, c may alias d.
#include "python/einsum_ops.hpp"

#include "apis/einsum.hpp"
#include "python/table_op.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Einsum = TableOp<table::row_index("einsum"), &api::einsum>;
using Fp8Einsum = TableOp<table::row_index("fp8_einsum"), &api::fp8_einsum>;

}  // namespace

void register_einsum_entries(py::module_& m) {
    Einsum::add_entry(m, "BF16 einsum into d in place; see deep_gemm.einsum.");
    Fp8Einsum::add_entry(m, "FP8 einsum ('bhr,hdr->bhd') into d in place; see deep_gemm.fp8_einsum.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor
// under torch.compile) validates only.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    Einsum::define(m);
    Fp8Einsum::define(m);
}
