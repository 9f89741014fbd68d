// torch.library ops and fast-path entries of einsum and fp8_einsum (csrc/apis/einsum.hpp): d is mutated in place,
// c may alias d.
#include "python/einsum_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apis/common.hpp"
#include "apis/einsum.hpp"

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

bool plain(std::initializer_list<const at::Tensor*> tensors) {
    if (not api::no_dispatch_mode_active()) return false;
    for (const at::Tensor* t : tensors)
        if (t != nullptr and t->defined() and not api::is_plain_tensor(*t)) return false;
    return true;
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
void einsum_entry(const std::string& expr, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const Opt& c,
                  bool use_cublaslt) {
    if (plain({&a, &b, &d, c.has_value() ? &*c : nullptr})) {
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
    if (plain({&a, &sfa, &b, &sfb, &d, c.has_value() ? &*c : nullptr})) {
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

TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    m.def("einsum(str expr, Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None, bool use_cublaslt=False) -> ()");
    m.def("fp8_einsum(str expr, Tensor a, Tensor sfa, Tensor b, Tensor sfb, Tensor(a!) d, Tensor? c=None, "
          "int[] recipe=[1, 128, 128]) -> ()");
}

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors"; Meta (FakeTensor
// under torch.compile) validates only.
#define DG_EINSUM_IMPLS(fake)                                                         \
    m.impl("einsum", TORCH_FN(deep_gemm::python::einsum_kernel<fake>));              \
    m.impl("fp8_einsum", TORCH_FN(deep_gemm::python::fp8_einsum_kernel<fake>));
TORCH_LIBRARY_IMPL(deep_gemm, CUDA, m) { DG_EINSUM_IMPLS(false) }
TORCH_LIBRARY_IMPL(deep_gemm, CPU, m) { DG_EINSUM_IMPLS(false) }
TORCH_LIBRARY_IMPL(deep_gemm, Meta, m) { DG_EINSUM_IMPLS(true) }
#undef DG_EINSUM_IMPLS
