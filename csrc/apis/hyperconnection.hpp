// tf32_hc_prenorm_gemm (DeepGEMM's hyper-connection pre-norm GEMM): validation and the launch of the JIT
// kernel csrc/jit_kernels/impls/sm90_tf32_hc_prenorm_gemm. The arithmetic is stated in the kernel header.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "../jit/jit.hpp"

namespace deep_gemm::api {

// d = a @ b.T in TF32 and sqr_sum = (a * a).sum(-1), written into the caller's d and sqr_sum:
// a bf16 [m, k], b fp32 [n, k] (1 <= n <= 64); num_splits None: d fp32 [m, n], sqr_sum fp32 [m];
// num_splits S: d [S, m, n] and sqr_sum [S, m] hold the partial sums of S K ranges.
// `fake`: meta/fake tensors (validation only, symbolic m allowed).
void tf32_hc_prenorm_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& sqr_sum,
                          std::optional<int64_t> num_splits, bool fake);

inline constexpr int64_t kHcMaxSplits = 1024;

// The kernel a shape would run (for compile-only builds without a GPU): its source and the plan's figures.
struct HcPrenormKernelPlan {
    jit::KernelSource source;
    int block_n = 0, stages = 0, reduce = 0, num_units = 0, smem_bytes = 0;
};
HcPrenormKernelPlan hc_prenorm_kernel_plan(int m, int n, int k, int num_splits, int num_sms);

}  // namespace deep_gemm::api
