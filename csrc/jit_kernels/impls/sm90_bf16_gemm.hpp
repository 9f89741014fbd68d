// Host side of the SM90 BF16 GEMM:  D[M, N] = (C +) A @ B^T  with A logically [M, K], B logically [N, K],
// FP32 accumulation, D bfloat16 or float32; dense, M-grouped (contiguous, psum layout, masked) and K-grouped
// contiguous. Its part of the GEMM launch path (sm90_gemm_launch.hpp). Torch-free.
//
// Layout names of the torch ops (BLAS / DeepGEMM letters for D = A @ B: first letter A, second B;
// 'n' = as in the product, 't' = stored transposed; all tensors row-major):
//   bf16_gemm_nt(a [M,K], b [N,K])  a_k_major = true,  b_k_major = true
//   bf16_gemm_nn(a [M,K], b [K,N])  a_k_major = true,  b_k_major = false
//   bf16_gemm_tn(a [K,M], b [K,N])  a_k_major = false, b_k_major = false
//   bf16_gemm_tt(a [K,M], b [N,K])  a_k_major = false, b_k_major = true
// i.e. a_k_major = (first letter == 'n'), b_k_major = (second letter == 't'). lda / ldb are the outer (row)
// strides of the tensors as stored, in elements (multiples of 8).
//
// Grouped modes (GemmOperands): M-grouped B is [G, N, K] (K-major) or [G, K, N], b_group_stride apart;
//   contiguous: m = sum of M, groups start at multiples of 128 rows (psum layout: `grouped` holds group ends).
//   masked:     m = max_m; a [G, max_m, K] (or M-major [G, K, max_m]) a_group_stride apart; d [G, max_m, N]
//               with d_group_stride == max_m * ldd (and c likewise); expected_m is the config hint.
//   K-grouped (k_grouped_bf16_gemm_tn_contiguous): m = M, n = N, k = sum of the groups' K; a [sum_K, M] and
//               b [sum_K, N] MN-major, group g owning K rows [k_g, k_g + ks[g]); d float32 [G, M, N] with
//               d_group_stride == M * ldd (and c likewise); `grouped` = ks int32 [G] on the GPU, each a
//               multiple of 64 (BLOCK_K; the caller checks this: the kernel cannot) and possibly 0 (d[g] =
//               c[g] or zeros).
#pragma once

#include <cuda.h>

#include "../heuristics/sm90_bf16.hpp"
#include "sm90_gemm_launch.hpp"

namespace deep_gemm::kernels {

// The BF16 kernel's part of the GEMM launch path (see sm90_gemm_launch.hpp for the interface).
struct Bf16GemmTraits {
    // The config; its multicast is the request DG_BF16_GEMM_CONFIG forced (bf16_knobs(); 0 = none: the
    // caller's GemmProblem::multicast), resolved by the key.
    using Config = heuristics::Sm90GemmConfig;
    static constexpr bool kSfbInTensorMap = false, kDInTensorMap = true;
    static const char* op_name(const GemmProblem& p);
    static void set_override(const char* op, const jit::Settings& settings, gemm_launch::ConfigQuery& query);
    DG_SM90_GEMM_TRAITS_FUNCTIONS;
};

// DG_BF16_GEMM_CONFIG's knobs, in the order of its fields. The multicast knob sets the config's multicast to a
// GemmProblem::multicast request: 0 = field absent (the caller's request), 1 = off, 2 = on when legal.
const knobs::KnobTable& bf16_knobs();

}  // namespace deep_gemm::kernels
