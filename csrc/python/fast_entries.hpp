// The fast-path entries of deep_gemm._C (fast_entries.cpp): the METH_FASTCALL GEMM functions generated
// from the op table (gemm_table.hpp), and the layout entries that PYBIND11_MODULE binds with pybind11.
#pragma once

#include <torch/extension.h>

#include <optional>

namespace deep_gemm::python {

// Adds one METH_FASTCALL entry per GEMM op of the table (DeepGEMM's Python signatures), the
// validation-only _validate_fp8_gemm_nt (host-overhead microbenchmark) and _gemm_op_table() (the table
// for deep_gemm/_gemm_surface.py and scripts/gen_stubs.py).
void register_gemm_entries(pybind11::module_& m);

at::Tensor mn_major_entry(const at::Tensor& sf);

at::Tensor transform_sf_entry(const at::Tensor& sf, int64_t mn, int64_t k, const pybind11::object& recipe,
                              std::optional<int64_t> num_groups, bool is_sfa, bool disable_ue8m0_cast);

}  // namespace deep_gemm::python
