// Scale-factor layout kernel: copies FP32 scales sf[g, m, k] (any strides) into the layout the SM90
// FP8 kernels read with TMA: M-major, the M stride padded to a multiple of 4 floats (16 bytes):
//     out[g * (K * aligned_m) + k * aligned_m + m]
// Rows m in [M, aligned_m) are written as zeros so the padding is deterministic.
//
// Device-only code (no host headers), so it compiles with both NVCC and NVRTC. The generated
// translation unit defines the `extern "C" __global__` entry that calls `transpose_sf_into_mn_major`.
#pragma once

#include "layout_transpose_sf_params.hpp"  // the generated entry point's parameters

namespace deep_gemm::layout {

// One block transposes a kTileM x kTileK tile through shared memory: blockDim = (kTileM, kRowsPerIter).
// Reads are coalesced along K (the usual [M, K'] row-major input), writes along M.
// Grid: (ceil(aligned_m / kTileM), ceil(K / kTileK), num_groups).
template <int kTileM, int kTileK, int kRowsPerIter>
__device__ __forceinline__ void transpose_sf_into_mn_major(const float* __restrict__ in, float* __restrict__ out,
                                                           const int m, const int k, const int aligned_m,
                                                           const long long in_stride_g, const long long in_stride_m,
                                                           const long long in_stride_k) {
    static_assert(kTileM == 32 and kTileK == 32, "one warp per tile row");
    // +1 column: the transposed accesses hit 32 different banks
    __shared__ float tile[kTileK][kTileM + 1];

    const int g = blockIdx.z;
    const int m0 = blockIdx.x * kTileM;
    const int k0 = blockIdx.y * kTileK;
    const int tx = threadIdx.x, ty = threadIdx.y;

    const float* src = in + g * in_stride_g;
    #pragma unroll
    for (int i = ty; i < kTileM; i += kRowsPerIter) {
        const int mm = m0 + i, kk = k0 + tx;
        float value = 0.0f;
        if (mm < m and kk < k)
            value = src[mm * in_stride_m + kk * in_stride_k];
        tile[tx][i] = value;
    }
    __syncthreads();

    float* dst = out + static_cast<long long>(g) * k * aligned_m;
    #pragma unroll
    for (int i = ty; i < kTileK; i += kRowsPerIter) {
        const int kk = k0 + i, mm = m0 + tx;
        if (kk < k and mm < aligned_m)
            dst[static_cast<long long>(kk) * aligned_m + mm] = tile[i][tx];
    }
}

}  // namespace deep_gemm::layout
