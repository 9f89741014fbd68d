// torch.library ops and fast-path entries of einsum and fp8_einsum (csrc/apis/einsum.hpp): d is mutated in place,
// c may alias d.
#include "python/einsum_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apis/common.hpp"
#include "apis/einsum.hpp"
#include "python/op_table.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Opt = std::optional<at::Tensor>;

template <bool kFake>
void einsum_kernel(std::string_view expr, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c,
                   bool use_cublaslt) {
    api::einsum(expr, a, b, d, c, use_cublaslt, kFake);
}

template <bool kFake>
void fp8_einsum_kernel(std::string_view expr, const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b,
                       const at::Tensor& sfb, const at::Tensor& d, const Opt& c, c10::IntArrayRef recipe) {
    api::fp8_einsum(expr, a, sfa, b, sfb, d, c, recipe, kFake);
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
void einsum_entry(const std::string& expr, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c,
                  bool use_cublaslt) {
    if (plain_tensors({&a, &b, &d, opt_ptr(c)})) {
        py::gil_scoped_release no_gil;
        api::einsum(expr, a, b, d, c, use_cublaslt, false);
        return;
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::einsum", "")
                               .typed<void(std::string_view, const at::Tensor&, const at::Tensor&, const at::Tensor&, const Opt&, bool)>();
    op.call(expr, a, b, d, c, use_cublaslt);
}

void fp8_einsum_entry(const std::string& expr, const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b,
                      const at::Tensor& sfb, const at::Tensor& d, const Opt& c, const std::vector<int64_t>& recipe) {
    if (plain_tensors({&a, &sfa, &b, &sfb, &d, opt_ptr(c)})) {
        py::gil_scoped_release no_gil;
        api::fp8_einsum(expr, a, sfa, b, sfb, d, c, recipe, false);
        return;
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::fp8_einsum", "")
                               .typed<void(std::string_view, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const at::Tensor&, const Opt&, c10::IntArrayRef)>();
    op.call(expr, a, sfa, b, sfb, d, c, recipe);
}

}  // namespace

void register_einsum_entries(py::module_& m) {
    m.def("_einsum", &einsum_entry, py::arg("expr"), py::arg("a"), py::arg("b"), py::arg("d"), py::arg("c") = py::none(),
          py::arg("use_cublaslt") = false, "BF16 einsum into d in place; see deep_gemm.einsum.");
    m.def("_fp8_einsum", &fp8_einsum_entry, py::arg("expr"), py::arg("a"), py::arg("sfa"), py::arg("b"), py::arg("sfb"),
          py::arg("d"), py::arg("c") = py::none(), py::arg("recipe") = std::vector<int64_t>{1, 128, 128},
          "FP8 einsum ('bhr,hdr->bhd') into d in place; see deep_gemm.fp8_einsum.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor
// under torch.compile) validates only.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    def_op(m, table::schema_of("einsum"),
           TORCH_FN(einsum_kernel<false>), TORCH_FN(einsum_kernel<true>));
    def_op(m, table::schema_of("fp8_einsum"),
           TORCH_FN(fp8_einsum_kernel<false>), TORCH_FN(fp8_einsum_kernel<true>));
}
