// Host side of the SM90 FP8 1D2D GEMM: D[M,N] (bf16) = A[M,K] @ B[N,K]^T with 1x128 A scales and 128x128 B
// scales, dense and M-grouped (contiguous, psum layout, masked). Its part of the GEMM launch path
// (sm90_gemm_launch.hpp): config choice, kernel key, generated source, tensor maps and arguments.
// Torch-free.
#pragma once

#include <cuda.h>

#include <string>

#include "../heuristics/sm90_fp8_config.hpp"
#include "../heuristics/sm90_fp8_cost_model.hpp"
#include "knob_table.hpp"
#include "sm90_gemm_launch.hpp"

namespace deep_gemm::kernels {

// DG_FP8_GEMM_CONFIG (tuning, sweeps and tuned picks) forces the config of fp8_gemm_nt and of the m-grouped FP8
// ops (which drop multicast where their scheduler pairs no blocks; the contiguous ones reject block_m 192). Its
// knobs, legal values and rules: the knob table in sm90_fp8_gemm_1d2d.cpp (knob_table.hpp for the syntax).
// Besides a config, "rules": the fixed rules that preceded the config model (a tuning tool for A/B runs);
// "legacy": the first version's choice. Unset or empty = the config model. Part of the config memo key, so a
// changed value (after reload_settings) takes effect.
const knobs::KnobTable& fp8_1d2d_knobs();

// The FP8 1D2D kernel's part of the GEMM launch path (see sm90_gemm_launch.hpp for the interface).
struct Fp8Gemm1d2dTraits {
    using Config = heuristics::Sm90GemmConfig;
    static constexpr bool kSfbInTensorMap = false, kDInTensorMap = true;
    static const char* op_name(const GemmProblem& p);
    static void set_override(const char* op, const jit::Settings& settings, gemm_launch::ConfigQuery& query);
    DG_SM90_GEMM_TRAITS_FUNCTIONS;
};

}  // namespace deep_gemm::kernels
