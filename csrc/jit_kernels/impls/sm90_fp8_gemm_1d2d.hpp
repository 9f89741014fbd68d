// Host side of the SM90 FP8 1D2D GEMM: D[M,N] (bf16) = A[M,K] @ B[N,K]^T with 1x128 A scales and 128x128 B
// scales, dense and M-grouped (contiguous, psum layout, masked). Its part of the GEMM launch path
// (sm90_gemm_launch.hpp): config choice, kernel key, generated source, tensor maps and arguments.
// Torch-free.
#pragma once

#include <cuda.h>

#include <string>

#include "../heuristics/sm90_fp8_config.hpp"
#include "../heuristics/sm90_fp8_cost_model.hpp"
#include "sm90_gemm_launch.hpp"

namespace deep_gemm::kernels {

// DG_FP8_GEMM_CONFIG (tuning and sweeps only) forces the config of fp8_gemm_nt (and of the m-grouped FP8
// ops, which drop multicast; the contiguous ones reject block_m 192):
//   "block_m,block_n,stages[,pipelined[,multicast[,group_n[,split_k]]]]"
//     block_m    64, 128, 192 or 256 (192: three math warpgroups of 64 rows, block_n <= 128, pipelined only
//                with block_n <= 80, not for the contiguous layouts; 256: two math warpgroups of 128 rows,
//                block_n <= 128, pipelined 0)
//     block_n    a multiple of 16 in [16, 192]
//     stages     0 = as many as fit in shared memory, else [3, 16]
//     pipelined  0 = off, 1 = two scratch accumulators (block_n <= 128)
//     multicast  0 = off, 1 = 2-CTA cluster sharing B (M-block pairs), 2 = sharing A (N-block pairs)
//     group_n    tile order: a group of group_n N blocks (with multicast 2: N-block pairs) is walked row by
//                row over all M blocks before the next group; 0 = the default (8)
//     split_k    0 or 1 = off; 2..16 = each tile's K blocks split over that many units (dense fp8_gemm_nt
//                only; block_m 64 or 128, no multicast, no C; at most one split per 128-K block)
//   Blanks around the value and its fields are ignored (the syntax of DG_BF16_GEMM_CONFIG, config_fields.hpp).
//   "rules": the fixed rules that preceded the config model (a tuning tool for A/B runs); "legacy": the first version's
//   choice. Unset or empty = the config model. Part of the config memo key, so a changed value (after
//   reload_settings) takes effect.
struct Sm90Fp8ConfigOverride {
    int block_m = 0, block_n = 0, num_stages = 0, pipelined = 0, multicast = 0, group_n = 0, split_k = 0;  // block_m -1 legacy, -2 rules
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

// The FP8 1D2D kernel's part of the GEMM launch path (see sm90_gemm_launch.hpp for the interface).
struct Fp8Gemm1d2dTraits {
    using Config = heuristics::Sm90GemmConfig;
    static constexpr bool kSfbInTensorMap = false, kDInTensorMap = true;
    static const char* op_name(const GemmProblem& p);
    static void set_override(const char* op, const jit::Settings& settings, gemm_launch::ConfigQuery& query);
    DG_SM90_GEMM_TRAITS_FUNCTIONS;
};

}  // namespace deep_gemm::kernels
