// Basic types for the device headers. Compiles under NVCC and NVRTC: no standard or CUDA host headers.
#pragma once

namespace deep_gemm {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using i32 = int;
using u64 = unsigned long long;

// Same size and alignment as the driver's CUtensorMap (an opaque 128-byte, 64-byte aligned object).
// Kernels take it as `const __grid_constant__ TmaDescriptor` so the copy engine reads it from the
// parameter space; the host passes a CUtensorMap built by cuTensorMapEncodeTiled.
struct alignas(64) TmaDescriptor {
    u64 opaque[16];
};
static_assert(sizeof(TmaDescriptor) == 128, "TmaDescriptor must be 128 bytes");

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

// Generic -> shared-window address (32-bit) as used by every shared-memory PTX operand.
__device__ __forceinline__ u32 smem_addr(const void* ptr) {
    return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

}  // namespace deep_gemm
