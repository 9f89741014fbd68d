// torch.library ops and fast-path entries of the paged MQA logits (csrc/apis/paged_attention.hpp). The Python
// wrappers (deep_gemm/_paged_mqa.py) resolve DeepGEMM's call forms (2.6 clean_logits / 2.8 logits_dtype) and
// pass plain arguments here.
#include "python/paged_mqa_ops.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>

#include "apis/common.hpp"
#include "apis/paged_attention.hpp"
#include "jit_kernels/impls/sm90_fp8_paged_mqa_logits.hpp"
#include "python/jit_tools.hpp"
#include "python/op_table.hpp"

namespace py = pybind11;

namespace deep_gemm::python {

namespace {

using Opt = std::optional<at::Tensor>;

template <bool kFake>
at::Tensor metadata_kernel(const at::Tensor& context_lens, int64_t block_kv, int64_t num_sms, const Opt& indices) {
    return api::get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms, indices, kFake);
}

template <bool kFake>
at::Tensor logits_kernel(const at::Tensor& q, const Opt& q_sf, const at::Tensor& kv_cache, const at::Tensor& weights,
                         const at::Tensor& context_lens, const at::Tensor& block_table, const at::Tensor& schedule_meta,
                         int64_t max_context_len, bool clean_logits, bool logits_bf16, const Opt& indices) {
    return api::fp8_paged_mqa_logits("fp8_paged_mqa_logits", q, q_sf, kv_cache, weights, context_lens, block_table, schedule_meta,
                                     max_context_len, clean_logits, logits_bf16, indices, kFake);
}

// Plain CPU/CUDA tensors run directly (GIL released); anything else goes through the dispatcher op.
at::Tensor metadata_entry(const at::Tensor& context_lens, int64_t block_kv, int64_t num_sms, const Opt& indices) {
    if (plain_tensors({&context_lens, opt_ptr(indices)})) {
        py::gil_scoped_release no_gil;
        return metadata_kernel<false>(context_lens, block_kv, num_sms, indices);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::get_paged_mqa_logits_metadata", "")
                               .typed<at::Tensor(const at::Tensor&, int64_t, int64_t, const Opt&)>();
    return op.call(context_lens, block_kv, num_sms, indices);
}

at::Tensor logits_entry(const at::Tensor& q, const Opt& q_sf, const at::Tensor& kv_cache, const at::Tensor& weights,
                        const at::Tensor& context_lens, const at::Tensor& block_table, const at::Tensor& schedule_meta,
                        int64_t max_context_len, bool clean_logits, bool logits_bf16, const Opt& indices) {
    if (plain_tensors({&q, opt_ptr(q_sf), &kv_cache, &weights, &context_lens, &block_table, &schedule_meta, opt_ptr(indices)})) {
        py::gil_scoped_release no_gil;
        return logits_kernel<false>(q, q_sf, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits,
                                    logits_bf16, indices);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::fp8_paged_mqa_logits", "")
                               .typed<at::Tensor(const at::Tensor&, const Opt&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, const at::Tensor&, int64_t, bool, bool, const Opt&)>();
    return op.call(q, q_sf, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, logits_bf16,
                   indices);
}

// Builds one kernel config for sm_90a without a GPU; returns the cache entry.
py::dict compile_paged_mqa_kernel(int num_heads, int next_n, bool lens_2d, bool clean, bool bf16_logits, int block_kv) {
    kernels::PagedMqaConfig c;
    c.num_heads = num_heads, c.next_n = next_n, c.lens_2d = lens_2d, c.clean = clean, c.bf16_logits = bf16_logits;
    c.block_kv = block_kv;
    const jit::KernelSource src = kernels::paged_mqa_logits_source(c);
    return build_entry(src, "sm_90a");
}

}  // namespace

void register_paged_mqa_entries(py::module_& m) {
    m.def("_compile_paged_mqa_kernel", &compile_paged_mqa_kernel, py::arg("num_heads"), py::arg("next_n"), py::arg("lens_2d"),
          py::arg("clean"), py::arg("bf16_logits"), py::arg("block_kv") = 64);
    m.def("get_paged_mqa_logits_metadata", &metadata_entry, py::arg("context_lens"), py::arg("block_kv"), py::arg("num_sms"),
          py::arg("indices") = py::none(), "Paged MQA-logits schedule; see deep_gemm.get_paged_mqa_logits_metadata.");
    m.def("_fp8_paged_mqa_logits", &logits_entry, py::arg("q"), py::arg("q_sf"), py::arg("kv_cache"), py::arg("weights"),
          py::arg("context_lens"), py::arg("block_table"), py::arg("schedule_meta"), py::arg("max_context_len"), py::arg("clean_logits"),
          py::arg("logits_bf16"), py::arg("indices") = py::none(), "Paged MQA logits; see deep_gemm.fp8_paged_mqa_logits.");
}

}  // namespace deep_gemm::python

// CUDA runs the kernel; CPU gets the same validation and then "requires CUDA tensors" (the metadata op runs
// on CPU as well: it is tensor arithmetic); Meta (FakeTensor under torch.compile): validation and the output's shape.
TORCH_LIBRARY_FRAGMENT(deep_gemm, m) {
    using namespace deep_gemm::python;
    def_op(m, table::schema_of("get_paged_mqa_logits_metadata"),
           TORCH_FN(metadata_kernel<false>), TORCH_FN(metadata_kernel<true>));
    def_op(m, table::schema_of("fp8_paged_mqa_logits"),
           TORCH_FN(logits_kernel<false>), TORCH_FN(logits_kernel<true>));
}
