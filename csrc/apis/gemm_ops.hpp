// The GEMM ops of the public API as a table (GemmOpSpec per GemmOp): name, dtype family, grouping, operand
// transposes and default compiled dims. Torch-free, so the CPU-only planning (gemm_plan.hpp) and its tests
// read the same table as validation and dispatch.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace deep_gemm::api {

enum class Family { kFp8, kBf16 };
enum class Grouping { kNone, kMContiguous, kMMasked, kKContiguous };

enum class GemmOp : int {
    kFp8Nt, kFp8Nn, kFp8Tn, kFp8Tt,
    kMGroupedFp8NtContiguous, kMGroupedFp8NtMasked, kKGroupedFp8NtContiguous,
    kBf16Nt, kBf16Nn, kBf16Tn, kBf16Tt,
    kMGroupedBf16NtContiguous, kMGroupedBf16NtMasked, kKGroupedBf16TnContiguous,
    kFp8NtSkipHeadMid,  // fp8_gemm_nt with a head-split D (its own row: the head_splits parameter)
    kCount
};

struct GemmOpSpec {
    GemmOp op;
    const char* name;  // the public name, also the torch.library op name
    Family family;
    Grouping grouping;
    bool trans_a;      // the API takes A as [K, M] ("t" first letter): the kernel sees a.transpose(-2, -1)
    bool trans_b;      // the API takes B as [K, N] ("n" second letter)
                       // (K-grouped ops: false; their operands are validated as given, see gemm_validation.cpp)
    const char* default_compiled_dims;
};

// Indexed by GemmOp. Inline here so that run_gemm (gemm_run.cpp) reads it without a call.
inline constexpr std::array<GemmOpSpec, static_cast<int>(GemmOp::kCount)> kSpecs = {{
    {GemmOp::kFp8Nt, "fp8_gemm_nt", Family::kFp8, Grouping::kNone, false, false, "nk"},
    {GemmOp::kFp8Nn, "fp8_gemm_nn", Family::kFp8, Grouping::kNone, false, true, "nk"},
    {GemmOp::kFp8Tn, "fp8_gemm_tn", Family::kFp8, Grouping::kNone, true, true, "mn"},
    {GemmOp::kFp8Tt, "fp8_gemm_tt", Family::kFp8, Grouping::kNone, true, false, "mn"},
    {GemmOp::kMGroupedFp8NtContiguous, "m_grouped_fp8_gemm_nt_contiguous", Family::kFp8, Grouping::kMContiguous, false, false, "nk"},
    {GemmOp::kMGroupedFp8NtMasked, "m_grouped_fp8_gemm_nt_masked", Family::kFp8, Grouping::kMMasked, false, false, "nk"},
    {GemmOp::kKGroupedFp8NtContiguous, "k_grouped_fp8_gemm_nt_contiguous", Family::kFp8, Grouping::kKContiguous, false, false, "mn"},
    {GemmOp::kBf16Nt, "bf16_gemm_nt", Family::kBf16, Grouping::kNone, false, false, "nk"},
    {GemmOp::kBf16Nn, "bf16_gemm_nn", Family::kBf16, Grouping::kNone, false, true, "nk"},
    {GemmOp::kBf16Tn, "bf16_gemm_tn", Family::kBf16, Grouping::kNone, true, true, "mn"},
    {GemmOp::kBf16Tt, "bf16_gemm_tt", Family::kBf16, Grouping::kNone, true, false, "mn"},
    {GemmOp::kMGroupedBf16NtContiguous, "m_grouped_bf16_gemm_nt_contiguous", Family::kBf16, Grouping::kMContiguous, false, false, "nk"},
    {GemmOp::kMGroupedBf16NtMasked, "m_grouped_bf16_gemm_nt_masked", Family::kBf16, Grouping::kMMasked, false, false, "nk"},
    {GemmOp::kKGroupedBf16TnContiguous, "k_grouped_bf16_gemm_tn_contiguous", Family::kBf16, Grouping::kKContiguous, false, false, "mn"},
    {GemmOp::kFp8NtSkipHeadMid, "fp8_gemm_nt_skip_head_mid", Family::kFp8, Grouping::kNone, false, false, "nk"},
}};

// The spec of an op, inline (gemm_op_spec() is the public, out-of-line form).
inline const GemmOpSpec& op_spec(GemmOp op) { return kSpecs[static_cast<int>(op)]; }

// The spec of the op named `name`; nullptr when there is none.
inline const GemmOpSpec* find_op_spec(std::string_view name) {
    for (const GemmOpSpec& s : kSpecs)
        if (name == s.name) return &s;
    return nullptr;
}

// FP8 scale granularities (g_mn_a, g_mn_b, g_k).
using Recipe = std::array<int64_t, 3>;
inline constexpr Recipe kRecipe1D2D = {1, 128, 128};
inline constexpr Recipe kRecipe1D1D = {1, 1, 128};
// Block-32 scales (sgl-deep-gemm 0.2.5): A per row per 32 K, B per 32x32 block; the 1D2D kernel, dense ops only.
inline constexpr Recipe kRecipeBlock32 = {1, 32, 32};

// The recipe of an FP8 op called without one.
inline Recipe default_fp8_recipe(const GemmOpSpec& spec) {
    return spec.grouping == Grouping::kKContiguous ? kRecipe1D1D : kRecipe1D2D;
}

// The recipes an FP8 op takes (recipe_kernel() in gemm_problem.hpp maps each to its kernel).
inline const char* fp8_recipes_allowed(const GemmOpSpec& spec) {
    switch (spec.grouping) {
        case Grouping::kKContiguous: return "(1, 1, 128) (the 1D1D kernel)";
        case Grouping::kNone:
            return "(1, 128, 128) (1D2D kernel, BF16 output), (1, 32, 32) (1D2D kernel, block-32 scales) or (1, 1, 128) "
                   "(1D1D kernel, FP32 output) on SM90";
        default: return "(1, 128, 128) on SM90";
    }
}

}  // namespace deep_gemm::api
