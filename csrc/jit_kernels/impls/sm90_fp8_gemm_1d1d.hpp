// Host side of the SM90 FP8 1D1D GEMM: D[M,N] (float32) = C + A[M,K] @ B[N,K]^T with 1x128 scales on both
// operands (recipe (1, 1, 128), the weight-gradient GEMM); its part of the GEMM launch path
// (sm90_gemm_launch.hpp), dense and K-grouped (run_k_grouped_fp8_gemm: all groups in one launch per 32).
// Torch-free.
#pragma once

#include <cuda.h>

#include <string>

#include "../heuristics/sm90_fp8_1d1d.hpp"
#include "knob_table.hpp"
#include "sm90_gemm_launch.hpp"

namespace deep_gemm::kernels {

// The FP8 1D1D kernel's part of the GEMM launch path (see sm90_gemm_launch.hpp for the interface). The op
// named in errors is GemmProblem::op (this kernel serves fp8_gemm_{nt,nn,tn,tt} and
// k_grouped_fp8_gemm_nt_contiguous).
struct Fp8Gemm1d1dTraits {
    using Config = heuristics::Sm90GemmConfig;
    static constexpr bool kSfbInTensorMap = true, kDInTensorMap = false;
    static const char* op_name(const GemmProblem& p) { return p.op; }
    static void set_override(const char* op, const jit::Settings& settings, gemm_launch::ConfigQuery& query);
    DG_SM90_GEMM_TRAITS_FUNCTIONS;
};

// DG_FP8_1D1D_GEMM_CONFIG forces the kernel's config: its knobs, legal values and rules are the knob table in
// sm90_fp8_gemm_1d1d.cpp (knob_table.hpp for the syntax).
const knobs::KnobTable& fp8_1d1d_knobs();

}  // namespace deep_gemm::kernels
