// Fused (SwiGLU ->) per-token, per-channel-group FP8 quantisation: one pass over x.
//
// For token t < n (n = min(*avail_tokens, T), or T without avail_tokens) and column j < H, in FP32:
//   kSwiGLU:  g = x[t, j], u = x[t, H + j]; with a clamp c: u = clamp(u, -c, c), g = min(g, c);
//             v = (g / (1 + exp(-g))) * u * w[t]
//   else:     v = x[t, j]; with a clamp c: v = clamp(v, -c, c); v = v * w[t]
// (w[t] = 1 without weights). Per group of kGroup columns (the last one may be shorter):
//   amax = max(max |v|, 1e-4); scale = amax / 448; kRoundScale: scale = 2^ceil(log2(scale)) (exact);
//   y = e4m3_satfinite(v * (1 / scale)); optionally y_bf16 = bf16(v).
// Scale storage (kSfLayout): FP32 column-major sf[g * sf_stride + t], FP32 row-major sf[t * sf_stride + g],
// or UE8M0 bytes (the exponent of the power-of-two scale) at byte (g / 4) * 4 * sf_stride + 4 * t + g % 4;
// the last packed word's unused bytes are zeroed. Rows at or past n are not touched at all.
//
// Work split: one "segment" of kLanes = kGroup / 16 lanes per (token, group); each lane owns 16
// consecutive columns (16-byte vector loads/stores), the segment reduces its amax with xor shuffles.
// Grid-stride loop over (token, group) items, block-uniform, so every lane reaches every shuffle.
//
// Device-only code, compiles with NVCC and NVRTC.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "swiglu_fp8_quant_params.hpp"  // the generated entry point's parameters

namespace deep_gemm::quant {

enum SfLayout : int { kSfColMajor = 0, kSfRowMajor = 1, kSfUe8m0 = 2 };

constexpr int kColsPerLane = 16;

template <typename T> struct Vec16;  // 16 elements of T loaded as 16-byte chunks
template <> struct Vec16<float> { static constexpr int kChunks = 4; };
template <> struct Vec16<__nv_bfloat16> { static constexpr int kChunks = 2; };
template <> struct Vec16<__half> { static constexpr int kChunks = 2; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// Reads 16 consecutive elements (16-byte aligned) into FP32.
template <typename T>
__device__ __forceinline__ void load16(const T* __restrict__ p, float (&out)[kColsPerLane]) {
    constexpr int kChunks = Vec16<T>::kChunks, kPerChunk = kColsPerLane / kChunks;
    uint4 raw[kChunks];
    #pragma unroll
    for (int c = 0; c < kChunks; ++c) raw[c] = __ldg(reinterpret_cast<const uint4*>(p) + c);
    #pragma unroll
    for (int c = 0; c < kChunks; ++c) {
        const T* e = reinterpret_cast<const T*>(&raw[c]);
        #pragma unroll
        for (int i = 0; i < kPerChunk; ++i) out[c * kPerChunk + i] = to_float(e[i]);
    }
}

// Two FP32 -> two e4m3 (round to nearest even, saturating to +-448), `lo` in the low byte.
__device__ __forceinline__ unsigned short cvt_e4m3x2(float lo, float hi) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

// The smallest power of two >= s (s a positive normal float): exact, no log2/exp2 rounding.
__device__ __forceinline__ float ceil_pow2(float s) {
    const unsigned bits = __float_as_uint(s);
    return (bits & 0x7fffffu) == 0 ? s : __uint_as_float((bits & 0x7f800000u) + 0x800000u);
}

template <typename T, bool kSwiGLU, int kGroup, int kSfLayout, bool kRoundScale, bool kHasWeights, bool kHasClamp,
          bool kOutputBf16, bool kFastMath, int kThreads>
__device__ __forceinline__ void fp8_quant(const T* __restrict__ x, long long x_stride, unsigned char* __restrict__ y,
                                          long long y_stride, void* __restrict__ sf, long long sf_stride,
                                          __nv_bfloat16* __restrict__ y_bf16, long long y_bf16_stride,
                                          const float* __restrict__ weights, const int* __restrict__ avail_tokens,
                                          const int num_tokens, const int hidden, const int num_groups, const float clamp) {
    constexpr int kLanes = kGroup / kColsPerLane;
    static_assert(kGroup % kColsPerLane == 0 and kLanes >= 1 and kLanes <= 32 and (kLanes & (kLanes - 1)) == 0,
                  "a group is 1..32 lanes (a power of two) of 16 columns");
    static_assert(kThreads % 32 == 0, "whole warps");
    constexpr int kItemsPerBlock = kThreads / kLanes;

    // Rows past avail_tokens are not written; a bad device value is clamped to [0, num_tokens].
    int rows = num_tokens;
    if (avail_tokens != nullptr) rows = min(max(*avail_tokens, 0), num_tokens);
    const long long num_items = static_cast<long long>(rows) * num_groups;

    const int lane_in_seg = threadIdx.x % kLanes;
    const int seg = threadIdx.x / kLanes;
    for (long long base = static_cast<long long>(blockIdx.x) * kItemsPerBlock; base < num_items;
         base += static_cast<long long>(gridDim.x) * kItemsPerBlock) {
        const long long item = base + seg;
        const bool item_ok = item < num_items;
        const int t = item_ok ? static_cast<int>(item / num_groups) : 0;
        const int g = item_ok ? static_cast<int>(item % num_groups) : 0;
        const int col = g * kGroup + lane_in_seg * kColsPerLane;
        const bool active = item_ok and col < hidden;  // lanes past a trailing partial group idle

        float v[kColsPerLane];
        float amax = 0.0f;
        if (active) {
            const T* row = x + t * x_stride;
            load16(row + col, v);
            if constexpr (kSwiGLU) {
                float up[kColsPerLane];
                load16(row + hidden + col, up);
                #pragma unroll
                for (int i = 0; i < kColsPerLane; ++i) {
                    float gate = v[i], u = up[i];
                    if constexpr (kHasClamp) {
                        u = fminf(fmaxf(u, -clamp), clamp);
                        gate = fminf(gate, clamp);
                    }
                    float silu;
                    if constexpr (kFastMath)
                        silu = __fdividef(gate, 1.0f + __expf(-gate));
                    else
                        silu = gate / (1.0f + expf(-gate));
                    v[i] = silu * u;
                }
            } else if constexpr (kHasClamp) {
                #pragma unroll
                for (int i = 0; i < kColsPerLane; ++i) v[i] = fminf(fmaxf(v[i], -clamp), clamp);
            }
            if constexpr (kHasWeights) {
                const float w = __ldg(weights + t);
                #pragma unroll
                for (int i = 0; i < kColsPerLane; ++i) v[i] *= w;
            }
            #pragma unroll
            for (int i = 0; i < kColsPerLane; ++i) amax = fmaxf(amax, fabsf(v[i]));
        }
        // Segments are aligned power-of-two lane ranges, so xor offsets < kLanes stay inside them.
        #pragma unroll
        for (int offset = kLanes / 2; offset > 0; offset /= 2)
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
        if (not active) continue;

        amax = fmaxf(amax, 1e-4f);
        float scale = amax / 448.0f;
        if constexpr (kRoundScale) scale = ceil_pow2(scale);
        const float inv_scale = 1.0f / scale;

        uint4 packed;
        unsigned* words = reinterpret_cast<unsigned*>(&packed);
        #pragma unroll
        for (int i = 0; i < 4; ++i)
            words[i] = cvt_e4m3x2(v[4 * i] * inv_scale, v[4 * i + 1] * inv_scale) |
                       (static_cast<unsigned>(cvt_e4m3x2(v[4 * i + 2] * inv_scale, v[4 * i + 3] * inv_scale)) << 16);
        *reinterpret_cast<uint4*>(y + t * y_stride + col) = packed;

        if constexpr (kOutputBf16) {
            uint4 out[2];
            __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(out);
            #pragma unroll
            for (int i = 0; i < kColsPerLane / 2; ++i) pairs[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
            uint4* dst = reinterpret_cast<uint4*>(y_bf16 + t * y_bf16_stride + col);
            dst[0] = out[0];
            dst[1] = out[1];
        }

        if (lane_in_seg == 0) {
            if constexpr (kSfLayout == kSfColMajor) {
                static_cast<float*>(sf)[g * sf_stride + t] = scale;
            } else if constexpr (kSfLayout == kSfRowMajor) {
                static_cast<float*>(sf)[t * sf_stride + g] = scale;
            } else {
                // UE8M0: the biased exponent of the power-of-two scale (kRoundScale is required).
                unsigned char* word = static_cast<unsigned char*>(sf) + (g / 4) * 4 * sf_stride + 4 * t;
                word[g % 4] = static_cast<unsigned char>(__float_as_uint(scale) >> 23);
                if (g == num_groups - 1)
                    for (int k = g % 4 + 1; k < 4; ++k) word[k] = 0;
            }
        }
    }
}

}  // namespace deep_gemm::quant
