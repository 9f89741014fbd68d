// Basic types for the device headers. Compiles under NVCC and NVRTC: no standard or CUDA host headers.
#pragma once

#include "abi.hpp"  // u8 ... u64 and TmaDescriptor, shared with the host

namespace deep_gemm {

template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
    return (a + b - 1) / b;
}

template <typename T>
__host__ __device__ constexpr T align_up(T a, T b) {
    return ceil_div(a, b) * b;
}

template <typename T>
__host__ __device__ constexpr T min_of(T a, T b) {
    return a < b ? a : b;
}

__host__ __device__ constexpr u32 gcd_u32(u32 a, u32 b) { return b == 0 ? a : gcd_u32(b, a % b); }

// A u32 as a type, for passing a compile-time value into a generic lambda.
template <u32 kValue>
struct U32Constant {
    static constexpr u32 value = kValue;
};

// Run-time value -> compile-time constant: calls f(U32Constant<i * kStep>{}) for the i in [0, kCount) with
// i * kStep == value. The last candidate is the fallback, so `value` must be one of the candidates.
template <u32 kStep, u32 kCount, u32 kI = 0, typename F>
__device__ __forceinline__ void dispatch_multiple_of(u32 value, F&& f) {
    if constexpr (kI + 1 >= kCount) {
        f(U32Constant<kI * kStep>{});
    } else {
        if (value == kI * kStep) {
            f(U32Constant<kI * kStep>{});
        } else {
            dispatch_multiple_of<kStep, kCount, kI + 1>(value, f);
        }
    }
}

// Generic -> shared-window address (32-bit) as used by every shared-memory PTX operand.
__device__ __forceinline__ u32 smem_addr(const void* ptr) {
    return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

}  // namespace deep_gemm
