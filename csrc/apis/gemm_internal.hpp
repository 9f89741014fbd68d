// What the GEMM sources share (internal to csrc/apis; the public interface is gemm.hpp): the op spec
// table, the recipe constants, the kernel choice and the Problem that validate() builds from a call.
// gemm_validation.cpp validates calls; gemm_run.cpp runs them.
#pragma once

#include <array>

#include "gemm.hpp"

namespace deep_gemm::api {

// Short names for the table and the per-op rules.
using F = Family;
using G = Grouping;

// Indexed by GemmOp. Inline here so that run_gemm (gemm_run.cpp) reads it without a call.
inline constexpr std::array<GemmOpSpec, static_cast<int>(GemmOp::kCount)> kSpecs = {{
    {GemmOp::kFp8Nt, "fp8_gemm_nt", F::kFp8, G::kNone, false, false},
    {GemmOp::kFp8Nn, "fp8_gemm_nn", F::kFp8, G::kNone, false, true},
    {GemmOp::kFp8Tn, "fp8_gemm_tn", F::kFp8, G::kNone, true, true},
    {GemmOp::kFp8Tt, "fp8_gemm_tt", F::kFp8, G::kNone, true, false},
    {GemmOp::kMGroupedFp8NtContiguous, "m_grouped_fp8_gemm_nt_contiguous", F::kFp8, G::kMContiguous, false, false},
    {GemmOp::kMGroupedFp8NtMasked, "m_grouped_fp8_gemm_nt_masked", F::kFp8, G::kMMasked, false, false},
    {GemmOp::kKGroupedFp8NtContiguous, "k_grouped_fp8_gemm_nt_contiguous", F::kFp8, G::kKContiguous, false, false},
    {GemmOp::kBf16Nt, "bf16_gemm_nt", F::kBf16, G::kNone, false, false},
    {GemmOp::kBf16Nn, "bf16_gemm_nn", F::kBf16, G::kNone, false, true},
    {GemmOp::kBf16Tn, "bf16_gemm_tn", F::kBf16, G::kNone, true, true},
    {GemmOp::kBf16Tt, "bf16_gemm_tt", F::kBf16, G::kNone, true, false},
    {GemmOp::kMGroupedBf16NtContiguous, "m_grouped_bf16_gemm_nt_contiguous", F::kBf16, G::kMContiguous, false, false},
    {GemmOp::kMGroupedBf16NtMasked, "m_grouped_bf16_gemm_nt_masked", F::kBf16, G::kMMasked, false, false},
    {GemmOp::kKGroupedBf16TnContiguous, "k_grouped_bf16_gemm_tn_contiguous", F::kBf16, G::kKContiguous, false, false},
}};

// The spec of an op, inline (gemm_op_spec() is the public, out-of-line form).
inline const GemmOpSpec& op_spec(GemmOp op) { return kSpecs[static_cast<int>(op)]; }

inline constexpr Recipe kRecipe1D2D = {1, 128, 128};
inline constexpr Recipe kRecipe1D1D = {1, 1, 128};

enum class Kernel { kNone, kFp8_1D2D, kFp8_1D1D, kBf16 };

// Everything validation learned about a call.
struct Problem {
    int64_t m = 0, n = 0, k = 0, groups = 1;
    View a, b, d, sfa, sfb, c, layout;
    bool has_sf = false, has_c = false, has_layout = false;
    bool c_is_d = false;  // c and d are the same memory with the same layout (accumulate in place)
    Recipe recipe = kRecipe1D2D;
    Kernel kernel = Kernel::kNone;
};

// Validates every argument of `call` against the op's rules (raising through `check`) and returns what
// it learned. Shared by run_gemm, check_gemm_fake and check_gemm_real_for_benchmark.
Problem validate(const GemmOpSpec& spec, const GemmCall& call, const Checker& check);

}  // namespace deep_gemm::api
