// The fast-path entries of deep_gemm._C (fast_entries.cpp): the METH_FASTCALL GEMM functions, as a
// method table that PYBIND11_MODULE adds to the module, and the layout entries it binds with pybind11.
#pragma once

#include <torch/extension.h>

#include <optional>

namespace deep_gemm::python {

// The GEMM entries with DeepGEMM's Python signatures, terminated by a {nullptr} sentinel.
extern PyMethodDef g_fast_methods[];

at::Tensor mn_major_entry(const at::Tensor& sf);

at::Tensor transform_sf_entry(const at::Tensor& sf, int64_t mn, int64_t k, const pybind11::object& recipe,
                              std::optional<int64_t> num_groups, bool is_sfa, bool disable_ue8m0_cast);

}  // namespace deep_gemm::python
