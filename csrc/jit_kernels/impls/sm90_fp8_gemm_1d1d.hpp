// Host side of the SM90 FP8 1D1D GEMM: D[M,N] (float32) = C + A[M,K] @ B[N,K]^T with 1x128 scales on both
// operands (recipe (1, 1, 128), the weight-gradient GEMM). Torch-free: the torch layer (csrc/apis)
// validates tensors, converts the scales and fills the arguments; K-grouped calls run one launch per
// group through the same entry (see run_fp8_k_grouped in csrc/apis/gemm_run.cpp).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../heuristics/sm90_fp8_1d1d.hpp"
#include "common.hpp"

namespace deep_gemm::kernels {

struct Fp8Gemm1d1dArgs {
    const void* a = nullptr;     // float8_e4m3fn [M, K], row stride lda elements (K-major)
    const void* b = nullptr;     // float8_e4m3fn [N, K], row stride ldb elements (K-major)
    const float* sfa = nullptr;  // float32, M-major: element (m, kb) at sfa[kb * sfa_stride + m]
    const float* sfb = nullptr;  // float32, N-major: element (n, kb) at sfb[kb * sfb_stride + n]
    float* d = nullptr;          // float32 [M, N], row stride ldd elements
    const float* c = nullptr;    // optional float32 [M, N], row stride ldc; may be d (accumulate in place)
    int m = 0, n = 0, k = 0;
    int64_t lda = 0, ldb = 0, ldd = 0, ldc = 0;
    int64_t sfa_stride = 0, sfb_stride = 0;  // >= M (N) and multiples of 4 (16-byte TMA rows)
    std::string_view compiled_dims = "nk";    // must outlive the call
    const char* op = "fp8_gemm_nt";           // the calling op, for errors and logs (a string literal)
    int num_sms = 0;                          // SMs the persistent grid may use (<= device count)
    bool pdl = false;                         // programmatic dependent launch
    int device = 0;
    CUstream stream = nullptr;
};

// The compile-time part of one kernel instance.
struct Sm90Fp8Gemm1d1dKernelKey {
    int block_m = 128, block_n = 128, num_stages = 4, group_n = 8;
    uint32_t m = 0, n = 0, k = 0;
    bool with_c = false;
    bool operator==(const Sm90Fp8Gemm1d1dKernelKey&) const = default;
};

struct Sm90Fp8Gemm1d1dKernelKeyHash {
    size_t operator()(const Sm90Fp8Gemm1d1dKernelKey& key) const noexcept {
        const uint64_t h = uint64_t(key.block_m) | uint64_t(key.block_n) << 9 | uint64_t(key.num_stages) << 18 |
                           uint64_t(key.group_n) << 24 | uint64_t(key.with_c) << 32;
        return hash_with_dims(h, key.m, key.n, key.k);
    }
};

// The kernel key of a config, all dims at run time, no C.
Sm90Fp8Gemm1d1dKernelKey sm90_fp8_1d1d_kernel_key(const heuristics::Sm90Fp8Gemm1d1dConfig& config);

// Generated translation unit for one kernel instance (used by the op and by the compile-only tests).
GemmKernelSource sm90_fp8_gemm_1d1d_source(const Sm90Fp8Gemm1d1dKernelKey& key);

// Chooses a config (memoized per shape), builds/loads the kernel (memoized per key) and launches it.
// Preconditions are checked by the caller; violated ones raise jit::Error here, never crash. K == 0 is
// the caller's (D = C or zeros).
void sm90_fp8_gemm_1d1d(const Fp8Gemm1d1dArgs& args);

}  // namespace deep_gemm::kernels
