// Scale-factor layout utilities (DeepGEMM's get_tma_aligned_size, get_mn_major_tma_aligned_tensor,
// transform_sf_into_required_layout). The CUDA path runs the JIT kernel layout_transpose_sf; CPU tensors
// use a torch fallback; meta/fake tensors get an output of the right shape and strides.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <string_view>

#include "../jit/jit.hpp"

#include "common.hpp"
#include "gemm_ops.hpp"  // Recipe

namespace deep_gemm::api {

// Rounds x up to a whole number of 16-byte TMA units of `element_size`-byte elements.
// ValueError unless element_size divides 16 and x >= 0.
int64_t get_tma_aligned_size(int64_t x, int64_t element_size);

// True when `v` ([M, K'] or [G, M, K'] float32) already has the kernel layout: M-major, the M stride
// (i.e. the stride of K') equal to align(M, 4), groups packed, base 16-byte aligned.
bool is_mn_major_tma_aligned(const View& v, CheckMode mode);

// Returns `sf` itself when it already has the kernel layout (allow_passthrough), else a new tensor of
// the same shape in that layout (padding rows zeroed). 2-D [M, K'] or 3-D [G, M, K'] float32.
// `name`/`op` label errors.
at::Tensor get_mn_major_tma_aligned_tensor(const at::Tensor& sf, bool allow_passthrough = true,
                                           const char* op = "get_mn_major_tma_aligned_tensor", const char* name = "sf");

// The meta/fake implementation: an empty tensor with the kernel layout (symbolic sizes allowed).
at::Tensor get_mn_major_tma_aligned_tensor_meta(const at::Tensor& sf);


// Parses and checks a recipe argument (exactly 3 positive ints); `op` labels the error.
Recipe parse_recipe(const char* op, c10::IntArrayRef recipe);

// DeepGEMM's transform: checks `sf` against (mn, k, recipe, num_groups) and returns it in the layout
// the SM90 kernels read: (1, 128) granularity -> M-major TMA-aligned (get_mn_major_tma_aligned_tensor);
// (128, 128) -> contiguous. `is_sfa` picks recipe[0] (else recipe[1]) as the MN granularity.
// `disable_ue8m0_cast` is accepted for compatibility (SM90 keeps FP32 scales; it changes nothing).
at::Tensor transform_sf_into_required_layout(const at::Tensor& sf, int64_t mn, int64_t k, const Recipe& recipe,
                                             std::optional<int64_t> num_groups, bool is_sfa, bool disable_ue8m0_cast,
                                             bool allow_passthrough = true);
at::Tensor transform_sf_into_required_layout_meta(const at::Tensor& sf, int64_t mn, int64_t k, const Recipe& recipe,
                                                  std::optional<int64_t> num_groups, bool is_sfa);

// The source of a kernel compile_only builds by name (no GPU needed: warm-ups, CI); ValueError for another name.
jit::KernelSource compile_only_kernel_source(std::string_view kernel);

}  // namespace deep_gemm::api
