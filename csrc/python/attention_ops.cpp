// torch.library ops and fast-path entries of the MQA-logits ops (csrc/apis/attention.hpp). Kept in its own
// library fragment so the other registrations stay untouched.
#include "python/attention_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Dtype.h>

#include <optional>
#include <string>

#include "apis/attention.hpp"
#include "apis/common.hpp"
#include "jit_kernels/impls/sm90_fp8_mqa_logits.hpp"
#include "python/jit_tools.hpp"
#include "python/op_table.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Opt = std::optional<at::Tensor>;

template <bool kFake>
at::Tensor logits_kernel(const at::Tensor& q, const Opt& q_sf, const at::Tensor& kv, const at::Tensor& kv_sf, const at::Tensor& weights,
                         const at::Tensor& ks, const at::Tensor& ke, bool clean_logits, int64_t max_seqlen_k, at::ScalarType logits_dtype,
                         const Opt& schedule_meta) {
    return api::fp8_mqa_logits(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits, max_seqlen_k, logits_dtype, schedule_meta, kFake);
}

template <bool kFake>
at::Tensor metadata_kernel(const at::Tensor& ks, const at::Tensor& ke, int64_t num_kv_tokens, int64_t num_heads) {
    return api::get_mqa_logits_metadata(ks, ke, num_kv_tokens, num_heads, kFake);
}

at::ScalarType dtype_of(const py::handle& obj) {
    if (not THPDtype_Check(obj.ptr()))
        api::throw_type_error("fp8_mqa_logits: logits_dtype must be a torch.dtype (torch.float32 or torch.bfloat16); got " +
                              std::string(py::str(py::type::of(obj))));
    return reinterpret_cast<THPDtype*>(obj.ptr())->scalar_type;
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
at::Tensor logits_entry(const at::Tensor& q, const Opt& q_sf, const at::Tensor& kv, const at::Tensor& kv_sf, const at::Tensor& weights,
                        const at::Tensor& ks, const at::Tensor& ke, bool clean_logits, int64_t max_seqlen_k, const py::handle& dtype,
                        const Opt& schedule_meta) {
    const at::ScalarType logits_dtype = dtype_of(dtype);
    if (plain_tensors({&q, opt_ptr(q_sf), &kv, &kv_sf, &weights, &ks, &ke, opt_ptr(schedule_meta)})) {
        py::gil_scoped_release no_gil;
        return logits_kernel<false>(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits, max_seqlen_k, logits_dtype, schedule_meta);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::fp8_mqa_logits", "")
                               .typed<at::Tensor(const at::Tensor&, const Opt&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, const at::Tensor&, bool, int64_t, at::ScalarType, const Opt&)>();
    return op.call(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits, max_seqlen_k, logits_dtype, schedule_meta);
}

at::Tensor metadata_entry(const at::Tensor& ks, const at::Tensor& ke, int64_t num_kv_tokens, int64_t num_heads) {
    if (plain_tensors({&ks, &ke})) return metadata_kernel<false>(ks, ke, num_kv_tokens, num_heads);
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::get_mqa_logits_metadata", "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&, int64_t, int64_t)>();
    return op.call(ks, ke, num_kv_tokens, num_heads);
}

// Builds one kernel config for sm_90a without a GPU (the compile-only tests); returns the cache entry.
py::dict compile_kernel(int num_heads, int head_dim, bool bf16_logits, bool compressed, bool clean) {
    kernels::MqaLogitsConfig c;
    c.num_heads = num_heads;
    c.head_dim = head_dim;
    c.bf16_logits = bf16_logits;
    c.compressed = compressed;
    c.clean = clean;
    const jit::KernelSource src = kernels::sm90_fp8_mqa_logits_source(c);
    return build_entry(src, "sm_90a");
}

}  // namespace

void register_attention_entries(py::module_& m) {
    m.def("_compile_mqa_logits_kernel", &compile_kernel, py::arg("num_heads"), py::arg("head_dim"), py::arg("bf16_logits"),
          py::arg("compressed"), py::arg("clean"));
    m.def("_fp8_mqa_logits_unpacked", &logits_entry, py::arg("q"), py::arg("q_sf"), py::arg("kv"), py::arg("kv_sf"), py::arg("weights"),
          py::arg("cu_seq_len_k_start"), py::arg("cu_seq_len_k_end"), py::arg("clean_logits"), py::arg("max_seqlen_k"),
          py::arg("logits_dtype"), py::arg("schedule_meta") = py::none(),
          "MQA logits with unpacked operands; see deep_gemm.fp8_fp4_mqa_logits.");
    m.def("get_mqa_logits_metadata", &metadata_entry, py::arg("cu_seq_len_k_start"), py::arg("cu_seq_len_k_end"),
          py::arg("num_kv_tokens"), py::arg("num_heads"), "Per-CTA kv ranges; see deep_gemm.get_mqa_logits_metadata.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors" (the metadata runs anywhere);
// Meta (FakeTensor under torch.compile): validation and the output's shape.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    def_op(m, table::schema_of("fp8_mqa_logits"),
           TORCH_FN(logits_kernel<false>), TORCH_FN(logits_kernel<true>));
    def_op(m, table::schema_of("get_mqa_logits_metadata"),
           TORCH_FN(metadata_kernel<false>), TORCH_FN(metadata_kernel<true>));
}
