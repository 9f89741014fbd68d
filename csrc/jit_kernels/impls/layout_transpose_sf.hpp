// Host side of the scale-factor layout kernel (deep_gemm/include/deep_gemm/impls/layout_transpose_sf.cuh):
// FP32 sf[G, M, K'] with any strides -> M-major, M stride aligned to 4 (TMA), padding rows zeroed.
// Torch-free: the torch layer (csrc/apis/layout.cpp) allocates the output and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

struct TransposeSfArgs {
    const float* in = nullptr;   // element (g, m, k) at in[g * stride_g + m * stride_m + k * stride_k]
    float* out = nullptr;        // element (g, m, k) at out[g * k_total * aligned_m + k * aligned_m + m]
    int num_groups = 1, m = 0, k = 0;
    int aligned_m = 0;           // >= m, a multiple of 4
    int64_t stride_g = 0, stride_m = 0, stride_k = 0;
    int device = 0;
    CUstream stream = nullptr;
};

// The generated translation unit (one kernel serves every shape).
jit::KernelSource layout_transpose_sf_source();

// Builds/loads the kernel once per device (memoized), then launches it on args.stream.
void layout_transpose_sf(const TransposeSfArgs& args);

}  // namespace deep_gemm::kernels
