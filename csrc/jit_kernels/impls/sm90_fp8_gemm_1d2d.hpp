// Host side of the SM90 FP8 1D2D GEMM: D[M,N] (bf16) = A[M,K] @ B[N,K]^T with 1x128 A scales and
// 128x128 B scales. Torch-free: the torch layer (csrc/apis) validates tensors and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../heuristics/sm90_fp8.hpp"
#include "common.hpp"

namespace deep_gemm::kernels {

struct Fp8Gemm1d2dArgs {
    const void* a = nullptr;     // float8_e4m3fn [M, K], row stride lda elements (K-major)
    const void* b = nullptr;     // float8_e4m3fn [N, K], row stride ldb elements (K-major)
    const float* sfa = nullptr;  // float32, M-major: element (m, kb) at sfa[kb * sfa_stride + m]
    const float* sfb = nullptr;  // float32 [ceil(N/128), ceil(K/128)] row-major, contiguous
    void* d = nullptr;           // bfloat16 [M, N], row stride ldd elements
    int m = 0, n = 0, k = 0;
    int64_t lda = 0, ldb = 0, ldd = 0;
    int64_t sfa_stride = 0;      // >= align(M, 4)
    // Which of m/n/k are baked into the kernel as constants ("nk" by default); the others are runtime.
    std::string_view compiled_dims = "nk";  // must outlive the call
    int num_sms = 0;             // SMs the persistent grid may use (<= device count)
    bool pdl = false;            // programmatic dependent launch
    int device = 0;
    CUstream stream = nullptr;
};

// Extra arguments of the M-grouped (MoE) ops; B is [G, N, K] (b_group_stride elements between groups) and
// sfb [G, ceil(N/128), ceil(K/128)] contiguous.
//   contiguous: args.m = sum of M; a [sum_M, K], sfa as for a dense [sum_M, K] A, d [sum_M, N];
//               `grouped` = grouped_layout int32 [sum_M] on the GPU (group per row, -1 = padding row; groups
//               start at multiples of `alignment` rows).
//   contiguous psum: as contiguous, but `grouped` = int32 [G] group ends: group g owns rows
//               [align(end[g-1], alignment), end[g]).
//   masked:     args.m = max_m; a [G, max_m, K] (a_group_stride elements between groups), sfa M-major per
//               group (element (g, m, kb) at sfa[g * sfa_group_stride + kb * sfa_stride + m]), d [G, max_m, N]
//               contiguous across groups (row g * max_m + m); `grouped` = masked_m int32 [G] on the GPU
//               (clamped to [0, max_m] by the kernel); expected_m is the host-side hint for the config.
// Contiguous padding rows (rows of no group): ensure_zero_padding = true writes them as zeros, false never
// writes them. Masked: rows at or past masked_m[g] are never written.
struct Fp8GroupedArgs {
    GemmGroupedMode mode = GemmGroupedMode::kNone;
    const int* grouped = nullptr;
    int num_groups = 0;
    int expected_m = 0;
    int alignment = 128;  // contiguous layouts: row alignment of each group (a multiple of 128)
    bool ensure_zero_padding = true;
    int64_t a_group_stride = 0, b_group_stride = 0, sfa_group_stride = 0;  // elements
};

// M-grouped contiguous (either layout) or masked.
void sm90_m_grouped_fp8_gemm_1d2d(const Fp8Gemm1d2dArgs& args, const Fp8GroupedArgs& grouped);

// The compile-time part of one kernel instance: block config plus the dims baked in (0 = runtime).
// Cheap to hash; the hot path maps it to the loaded kernel.
struct Sm90Fp8GemmKernelKey {
    int block_m = 128, block_n = 128, num_stages = 4, group_n = 8;
    uint32_t m = 0, n = 0, k = 0;
    // Epilogue: false = swizzled smem staging + TMA store (needs a 16-byte aligned D with a row stride
    // that is a multiple of 8 elements); true = direct bounds-checked stores from registers.
    bool direct_store = false;
    // Promotion overlap: 0 none, 1 two scratch accumulators (BLOCK_N <= 128).
    int pipelined = 0;
    // 0 = no cluster; 1 = 2-CTA cluster sharing B (multicast); 2 = 2-CTA cluster sharing A.
    int multicast = 0;
    int mode = 0;        // GemmGroupedMode (M-grouped modes or none)
    int padding = 0;     // contiguous modes: PaddingRows (0 unspecified, 1 zero, 2 untouched)
    int psum_align = 0;  // psum with a padding mode: the group alignment (rows); else 0
    bool operator==(const Sm90Fp8GemmKernelKey&) const = default;
};

struct Sm90Fp8GemmKernelKeyHash {
    size_t operator()(const Sm90Fp8GemmKernelKey& key) const noexcept {
        uint64_t h = uint64_t(key.block_m) | uint64_t(key.block_n) << 9 | uint64_t(key.num_stages) << 18 |
                     uint64_t(key.group_n) << 24 | uint64_t(key.direct_store) << 32 |
                     uint64_t(key.pipelined) << 33 | uint64_t(key.multicast) << 36 | uint64_t(key.mode) << 39 |
                     uint64_t(key.padding) << 42 | uint64_t(uint32_t(key.psum_align)) << 44;
        return hash_with_dims(h, key.m, key.n, key.k);
    }
};

// DG_FP8_GEMM_CONFIG (tuning and sweeps only) forces the config of fp8_gemm_nt (and of the m-grouped FP8
// ops, which drop multicast and reject block_m 256):
//   "block_m,block_n,stages[,pipelined[,multicast]]"
//     block_m    64, 128 or 256 (256: two math warpgroups of 128 rows; block_n <= 128, pipelined 0)
//     block_n    a multiple of 16 in [16, 192]
//     stages     0 = as many as fit in shared memory, else [3, 16]
//     pipelined  0 = off, 1 = two scratch accumulators (block_n <= 128)
//     multicast  0 = off, 1 = 2-CTA cluster sharing B (M-block pairs), 2 = sharing A (N-block pairs)
//   "rules": the previous round's measured rules instead of the config model; "legacy": the first version's
//   choice. Unset or empty = the config model. Part of the config memo key, so a changed value (after
//   reload_settings) takes effect.
struct Sm90Fp8ConfigOverride {
    int block_m = 0, block_n = 0, num_stages = 0, pipelined = 0, multicast = 0;  // block_m -1 legacy, -2 rules
    bool active() const { return block_m > 0; }
    heuristics::Sm90Fp8Chooser chooser() const {
        return block_m == -1 ? heuristics::Sm90Fp8Chooser::kLegacy
               : block_m == -2 ? heuristics::Sm90Fp8Chooser::kRules
                               : heuristics::Sm90Fp8Chooser::kModel;
    }
    bool operator==(const Sm90Fp8ConfigOverride&) const = default;
};

// Parses the variable's value; malformed values raise jit::Error ("fp8_gemm_nt: DG_FP8_GEMM_CONFIG='...': ...").
Sm90Fp8ConfigOverride parse_sm90_fp8_config_override(const std::string& text);

// The kernel key of a config, all dims at run time (compiled_dims and the epilogue are the caller's to set).
Sm90Fp8GemmKernelKey sm90_fp8_kernel_key(const heuristics::Sm90Fp8GemmConfig& config);

// Generated translation unit for one kernel instance (used by the op and by the compile-only tests).
using Sm90Fp8GemmSource = GemmKernelSource;
Sm90Fp8GemmSource sm90_fp8_gemm_1d2d_source(const Sm90Fp8GemmKernelKey& key);

// Chooses a config (memoized per shape), builds/loads the kernel (memoized per config) and launches it.
// Preconditions are checked by the caller; violated ones raise jit::Error here, never crash.
void sm90_fp8_gemm_1d2d(const Fp8Gemm1d2dArgs& args);

}  // namespace deep_gemm::kernels
