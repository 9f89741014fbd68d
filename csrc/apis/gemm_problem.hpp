// The one description of a GEMM op call that picks its kernel and config: the op's kernel for a recipe and the
// kernels::GemmProblem of a call's sizes, grouping, hints and epilogue. The run path (gemm_run.cpp, from a
// validated call) and the planner (gemm_plan.hpp, from a plain description) both build their problem here,
// so a warm-up compiles what the op runs. Torch-free.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../jit_kernels/impls/sm90_gemm_desc.hpp"
#include "gemm_ops.hpp"

namespace deep_gemm::api {

// Whether an op takes block-32 scales (kRecipeBlock32): the dense fp8_gemm_{nt,nn,tn,tt}. The grouped ops, the
// head-split GEMM and the K-grouped one have no block-32 kernel here (block32_unsupported() says so).
inline bool block32_supported(const GemmOpSpec& spec) {
    return spec.family == Family::kFp8 && spec.grouping == Grouping::kNone && spec.op != GemmOp::kFp8NtSkipHeadMid;
}
inline std::string block32_unsupported(const GemmOpSpec& spec) {
    return std::string("recipe (1, 32, 32) (block-32 scales) is implemented for the dense fp8_gemm_nt / nn / tn / tt only on "
                       "SM90 in deep_gemm; ") +
           spec.name + " takes " + (spec.grouping == Grouping::kKContiguous ? "(1, 1, 128)" : "(1, 128, 128)");
}

// The kernel an op runs `recipe` on (BF16 ops: the BF16 kernel, no recipe); nullopt for an FP8 recipe the op
// does not take (fp8_recipes_allowed() says which it takes).
inline std::optional<kernels::GemmKernel> recipe_kernel(const GemmOpSpec& spec, const Recipe& recipe) {
    if (spec.family == Family::kBf16) return kernels::GemmKernel::kBf16;
    const bool k_grouped = spec.grouping == Grouping::kKContiguous;
    if (recipe == kRecipe1D1D && (k_grouped || spec.grouping == Grouping::kNone)) return kernels::GemmKernel::kFp8_1d1d;
    if (recipe == kRecipe1D2D && !k_grouped) return kernels::GemmKernel::kFp8_1d2d;
    if (recipe == kRecipeBlock32 && block32_supported(spec)) return kernels::GemmKernel::kFp8_1d2d;
    return std::nullopt;
}

// The scales' K granularity the 1D2D kernel runs a recipe with (GemmProblem::sf_gran_k).
inline int recipe_sf_gran_k(const Recipe& recipe) { return recipe == kRecipeBlock32 ? 32 : 128; }

// What an op call fixes about its problem besides the op: sizes as the op sees them (M-contiguous m = sum of
// M, masked m = max_m, K-grouped k = sum of K), the grouping's hints, the epilogue's dtypes and the knobs.
struct GemmCallScalars {
    kernels::GemmKernel kernel = kernels::GemmKernel::kFp8_1d2d;  // recipe_kernel()
    int m = 0, n = 0, k = 0;
    int num_groups = 1;
    // Masked: the rows per group the config is chosen for (0: max_m). M-contiguous with the psum layout:
    // expected_m_for_psum_layout (0: none). Unused otherwise.
    int expected_m = 0;
    bool use_psum_layout = false;      // M-contiguous
    bool ensure_zero_padding = true;   // M-contiguous: padding rows written as zeros (else DeepGEMM's SM90
                                       // rows: computed in alignment blocks that start in a group)
    int mk_alignment = 128;            // M-contiguous: get_mk_alignment_for_contiguous_layout()
    int sf_group_align = 128;          // K-grouped FP8: kernels::GemmProblem::sf_group_align (128: compact scales)
    bool d_fp32 = false;               // BF16: float32 D (the K-grouped op's always is)
    bool with_c = false;               // a C is added in the epilogue
    bool c_fp32 = false;               // FP8 1D2D with C: C is float32 (else bfloat16)
    int sf_gran_k = 128;               // FP8 1D2D: recipe_sf_gran_k() of the recipe
    int block_m_multiple = 1, block_n_multiple = 1;  // get_block_size_multiple_of()
    std::string_view compiled_dims;    // after set_ignore_compile_dims; must outlive the problem
};

// The problem of an op call. BF16 operands are taken as the op hands them to the kernel when they are
// contiguous (A / B stored transposed = MN-major; the run path sets the majors of the memory it gets).
// The operands' memory sets the rest (run_gemm: d_tma_ok, with_c; the caller: device, SMs, PDL, head splits).
// A K-grouped FP8 problem runs through kernels::run_k_grouped_fp8_gemm / plan_k_grouped_fp8_gemm.
inline kernels::GemmProblem gemm_problem(const GemmOpSpec& spec, const GemmCallScalars& s) {
    kernels::GemmProblem p;
    p.kernel = s.kernel;
    p.op = spec.name;
    p.m = s.m, p.n = s.n, p.k = s.k;
    p.compiled_dims = s.compiled_dims;
    p.block_m_multiple = s.block_m_multiple, p.block_n_multiple = s.block_n_multiple;
    p.with_c = s.with_c;
    if (spec.grouping != Grouping::kNone) p.num_groups = s.num_groups;
    switch (spec.grouping) {
        case Grouping::kMContiguous:
            p.mode = s.use_psum_layout ? kernels::GemmGroupedMode::kMGroupedContiguousPsum
                                       : kernels::GemmGroupedMode::kMGroupedContiguous;
            p.alignment = s.mk_alignment;
            p.ensure_zero_padding = s.ensure_zero_padding;
            if (s.use_psum_layout) p.expected_m = s.expected_m;
            break;
        case Grouping::kMMasked:
            p.mode = kernels::GemmGroupedMode::kMGroupedMasked;
            p.expected_m = s.expected_m;
            break;
        case Grouping::kKContiguous:
            p.mode = kernels::GemmGroupedMode::kKGroupedContiguous;
            p.sf_group_align = s.sf_group_align;
            break;
        case Grouping::kNone: break;
    }
    if (s.kernel == kernels::GemmKernel::kBf16) {
        const bool k_grouped = spec.grouping == Grouping::kKContiguous;  // a [sum K, M], b [sum K, N]
        p.a_k_major = !spec.trans_a && !k_grouped;
        p.b_k_major = !spec.trans_b && !k_grouped;
        p.d_fp32 = s.d_fp32 || k_grouped;
    }
    if (s.kernel == kernels::GemmKernel::kFp8_1d2d) {
        p.c_fp32 = s.with_c && s.c_fp32;
        p.sf_gran_k = s.sf_gran_k;
    }
    return p;
}

}  // namespace deep_gemm::api
