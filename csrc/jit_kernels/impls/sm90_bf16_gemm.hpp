// Host side of the SM90 BF16 GEMM:  D[M, N] = (C +) A @ B^T  with A logically [M, K], B logically [N, K],
// FP32 accumulation, D bfloat16 or float32. Torch-free: the torch layer (csrc/apis) validates tensors and
// fills the arguments; violated preconditions raise jit::Error here, never crash.
//
// Layout names of the torch ops (BLAS / DeepGEMM letters for D = A @ B: first letter A, second B;
// 'n' = as in the product, 't' = stored transposed; all tensors row-major):
//   bf16_gemm_nt(a [M,K], b [N,K])  a_k_major = true,  b_k_major = true
//   bf16_gemm_nn(a [M,K], b [K,N])  a_k_major = true,  b_k_major = false
//   bf16_gemm_tn(a [K,M], b [K,N])  a_k_major = false, b_k_major = false
//   bf16_gemm_tt(a [K,M], b [N,K])  a_k_major = false, b_k_major = true
// i.e. a_k_major = (first letter == 'n'), b_k_major = (second letter == 't').
// lda / ldb are the outer (row) strides of the tensors as stored, in elements.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../heuristics/sm90_bf16.hpp"
#include "common.hpp"

namespace deep_gemm::kernels {

struct Bf16GemmArgs {
    const void* a = nullptr;  // bfloat16; K-major: [M, K] (row stride lda); else stored [K, M] (row stride lda)
    const void* b = nullptr;  // bfloat16; K-major: [N, K] (row stride ldb); else stored [K, N] (row stride ldb)
    const void* c = nullptr;  // optional, same dtype as d, [M, N] row stride ldc; may alias d
    void* d = nullptr;        // [M, N] row stride ldd; float32 when d_fp32, else bfloat16
    int m = 0, n = 0, k = 0;
    bool a_k_major = true, b_k_major = true;
    int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;  // elements; must be multiples of 8 for a and b
    bool d_fp32 = false;
    // Which of m/n/k are baked into the kernel as constants ("nk" by default); the others are runtime.
    std::string_view compiled_dims = "nk";  // must outlive the call
    int num_sms = 0;  // SMs the persistent grid may use (<= device count; 0 = all)
    // TMA multicast of B over 2-CTA clusters (dense ops only): 0 = heuristic, 1 = off, 2 = on when legal.
    int multicast = 0;
    bool pdl = false;
    int device = 0;
    CUstream stream = nullptr;
};

// Dense GEMM (nt / nn / tn / tt via a_k_major / b_k_major).
void sm90_bf16_gemm(const Bf16GemmArgs& args);

// Extra arguments of the grouped (MoE) ops. In the M-grouped modes B is [G, N, K] (b_k_major) or [G, K, N],
// with b_group_stride elements between groups.
//   contiguous: args.m = sum of M; a [sum_M, K], d [sum_M, N] (and c); `grouped` = grouped_layout int32
//               [sum_M] on the GPU (group per row, -1 = padding row; groups start at multiples of 128 rows).
//   contiguous psum: as contiguous, but `grouped` = int32 [G] group ends: group g owns rows
//               [align(end[g-1], 128k), end[g]) (the contiguous alignment, a multiple of 128).
//   masked:     args.m = max_m; a [G, max_m, K] with a_group_stride elements between groups (K-major only
//               is what the nt op needs, M-major also works: [G, K, max_m]); d [G, max_m, N] with
//               d_group_stride == max_m * ldd (and c likewise); `grouped` = masked_m int32 [G] on the GPU;
//               expected_m is the host-side hint used for the config choice.
//   K-grouped contiguous (k_grouped_bf16_gemm_tn_contiguous): args.m = M, args.n = N, args.k = sum of the
//               groups' K; a [sum_K, M] (a_k_major = false, lda = M) and b [sum_K, N] (b_k_major = false),
//               group g owning K rows [k_g, k_g + ks[g]); d float32 [G, M, N] with d_group_stride == M * ldd
//               (and c likewise); `grouped` = ks int32 [G] on the GPU, each a multiple of 64 (BLOCK_K; the
//               caller checks this: the kernel cannot) and possibly 0 (d[g] = c[g] or zeros).
//               a_group_stride / b_group_stride are unused. K-major operands ([M, sum_K]) also work.
struct Bf16GroupedArgs {
    GemmGroupedMode mode = GemmGroupedMode::kNone;
    const int* grouped = nullptr;
    int num_groups = 0;
    int expected_m = 0;
    int64_t a_group_stride = 0, b_group_stride = 0, d_group_stride = 0, c_group_stride = 0;
};

void sm90_m_grouped_bf16_gemm(const Bf16GemmArgs& args, const Bf16GroupedArgs& grouped);  // M-grouped modes
void sm90_k_grouped_bf16_gemm(const Bf16GemmArgs& args, const Bf16GroupedArgs& grouped);  // kKGroupedContiguous

// The compile-time part of one kernel instance (0 = runtime dim).
struct Sm90Bf16GemmKernelKey {
    int block_m = 128, block_n = 128, num_stages = 4, group_n = 8;
    bool a_mn_major = false, b_mn_major = false;
    int mode = 0;      // GemmGroupedMode
    int epilogue = 0;  // heuristics::Sm90Bf16Epilogue
    bool d_fp32 = false, with_c = false;
    int multicast = 1;  // 1 = off, 2 = B multicast over a 2-CTA cluster (dense only)
    uint32_t m = 0, n = 0, k = 0;
    bool operator==(const Sm90Bf16GemmKernelKey&) const = default;
};

struct Sm90Bf16GemmKernelKeyHash {
    size_t operator()(const Sm90Bf16GemmKernelKey& key) const noexcept {
        uint64_t h = uint64_t(key.block_m) | uint64_t(key.block_n) << 9 | uint64_t(key.num_stages) << 18 |
                     uint64_t(key.group_n) << 24 | uint64_t(key.a_mn_major) << 32 | uint64_t(key.b_mn_major) << 33 |
                     uint64_t(key.mode) << 34 | uint64_t(key.epilogue) << 36 | uint64_t(key.d_fp32) << 38 |
                     uint64_t(key.with_c) << 39 | uint64_t(key.multicast) << 40;
        return hash_with_dims(h, key.m, key.n, key.k);
    }
};

// The kernel key of a config: tile, stages and scheduler group set, every other field at its default.
Sm90Bf16GemmKernelKey sm90_bf16_kernel_key(const heuristics::Sm90Bf16GemmConfig& config);

// Generated translation unit for one kernel instance (used by the ops and the compile-only tests).
using Sm90Bf16GemmSource = GemmKernelSource;
Sm90Bf16GemmSource sm90_bf16_gemm_source(const Sm90Bf16GemmKernelKey& key);

}  // namespace deep_gemm::kernels
