// Which kernels a GEMM op call would compile, from a plain description of the call (op name, sizes, groups,
// output dtype, recipe) and assumed device limits: no tensors and no GPU. For compiling kernels ahead of
// time on a CPU machine (warm-up lists of op + shape). The choice is the one run_gemm makes (same op table,
// same problem description (gemm_problem.hpp), config memo, key and source), for tensors laid out as the ops
// produce them: contiguous, 16-byte aligned outputs. Header-only and torch-free.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../jit/errors.hpp"
#include "../jit_kernels/heuristics/sm90_fp8_config.hpp"
#include "../jit_kernels/impls/sm90_gemm_desc.hpp"
#include "gemm_problem.hpp"

namespace deep_gemm::api {

struct GemmCallShape {
    std::string op;  // public op name, e.g. "fp8_gemm_nt", "m_grouped_bf16_gemm_nt_masked"
    // As the op sees them: M-contiguous m = sum of M, masked m = max_m, K-grouped k = sum of the groups' K.
    int m = 0, n = 0, k = 0;
    int num_groups = 1;
    int expected_m = 0;             // masked (0: max_m) and FP8 psum layout (0: none): the config hint
    std::optional<Recipe> recipe;   // FP8 (nullopt: the op's default); dense (1, 1, 128): the FP32-output kernel,
                                    // (1, 32, 32): the 1D2D kernel with block-32 scales
    bool d_fp32 = false;            // BF16: float32 D
    bool with_c = false;            // a C is given (FP8 dense and BF16)
    bool c_fp32 = false;            // FP8 1D2D with C: C is float32 (else bfloat16)
    bool use_psum_layout = false;   // M-contiguous
    bool ensure_zero_padding = true;
    int mk_alignment = 128;         // get_mk_alignment_for_contiguous_layout()
    int block_m_multiple = 1, block_n_multiple = 1;  // get_block_size_multiple_of()
    std::optional<std::string> compiled_dims;  // nullopt: the op's default
    std::vector<int> ks;            // K-grouped FP8: each group's K (empty: k split evenly)
    bool use_padded_sf_layout = false;  // K-grouped FP8: scales padded to mk_alignment per group (else compact)
    std::vector<int> head_splits;   // fp8_gemm_nt_skip_head_mid: (left, mid, right); n = num_heads * (left + right)
    int max_block_n = 256;          // m_grouped_fp8_gemm_nt_masked: BLOCK_N cap (256 and above: none)
    bool enable_overlap = false;    // m_grouped_fp8_gemm_nt_masked: the tile-signal kernel
};

// The kernel problem of `call`, as the op would describe it (K-grouped FP8: all groups, k their summed K).
// Raises jit::Error for an unknown op or recipe.
inline kernels::GemmProblem call_problem(const GemmCallShape& call) {
    const GemmOpSpec* spec = find_op_spec(call.op);
    if (spec == nullptr) throw jit::Error("plan_gemm_call: unknown GEMM op '" + call.op + "'");

    const Recipe recipe = call.recipe.value_or(default_fp8_recipe(*spec));
    if (spec->family == Family::kFp8 && recipe == kRecipeBlock32 && !block32_supported(*spec))
        throw jit::Error("plan_gemm_call: " + call.op + ": " + block32_unsupported(*spec));
    const std::optional<kernels::GemmKernel> kernel = recipe_kernel(*spec, recipe);
    if (!kernel) throw jit::Error("plan_gemm_call: " + call.op + ": recipe must be " + fp8_recipes_allowed(*spec));

    GemmCallScalars s;
    s.kernel = *kernel;
    s.m = call.m, s.n = call.n, s.k = call.k;
    s.num_groups = call.num_groups;
    s.expected_m = call.expected_m;
    s.use_psum_layout = call.use_psum_layout;
    s.ensure_zero_padding = call.ensure_zero_padding;
    s.mk_alignment = call.mk_alignment;
    s.sf_group_align = call.use_padded_sf_layout ? call.mk_alignment : 128;
    s.d_fp32 = call.d_fp32;
    s.with_c = call.with_c;
    s.c_fp32 = call.c_fp32;
    s.sf_gran_k = recipe_sf_gran_k(recipe);
    s.block_m_multiple = call.block_m_multiple, s.block_n_multiple = call.block_n_multiple;
    s.compiled_dims = call.compiled_dims ? std::string_view(*call.compiled_dims) : spec->default_compiled_dims;
    kernels::GemmProblem p = gemm_problem(*spec, s);

    switch (*kernel) {
        case kernels::GemmKernel::kBf16: p.d_tma_ok = (p.n * (p.d_fp32 ? 4 : 2)) % 16 == 0; break;
        case kernels::GemmKernel::kFp8_1d2d:  // K-major views of every variant; D is bf16
            p.d_tma_ok = p.n % 8 == 0;
            if (spec->op == GemmOp::kFp8NtSkipHeadMid) {
                if (call.head_splits.size() != 3 || call.with_c)
                    throw jit::Error("plan_gemm_call: fp8_gemm_nt_skip_head_mid takes head_splits (left, mid, right), recipe "
                                     "(1, 128, 128) and no C");
                p.head_left = call.head_splits[0], p.head_mid = call.head_splits[1], p.head_right = call.head_splits[2];
            }
            if (call.max_block_n != 256 || call.enable_overlap) {
                if (spec->op != GemmOp::kMGroupedFp8NtMasked || call.max_block_n < 16)
                    throw jit::Error("plan_gemm_call: max_block_n (>= 16) and enable_overlap are m_grouped_fp8_gemm_nt_masked's");
                // As run_gemm (gemm_run.cpp): a cap at or above the kernel's widest tile is none.
                p.max_block_n = call.max_block_n < heuristics::kSm90Fp8MaxBlockN ? call.max_block_n : 0;
                p.tile_signal = call.enable_overlap;
            }
            break;
        case kernels::GemmKernel::kFp8_1d1d:
            if (spec->grouping == Grouping::kKContiguous) p.num_groups = int(call.ks.empty() ? std::max(call.num_groups, 1) : call.ks.size());
            break;
    }
    return p;
}

// The generated sources of the kernels `call` would build (one, or for K-grouped FP8 one per distinct
// per-group kernel). Raises jit::Error for an unknown op and wherever run_gemm would for the config.
inline std::vector<kernels::GemmKernelSource> plan_gemm_call(const GemmCallShape& call,
                                                             const kernels::DeviceLimits& limits = {}) {
    const kernels::GemmProblem p = call_problem(call);
    if (p.kernel != kernels::GemmKernel::kFp8_1d1d || !kernels::is_k_grouped(p)) return {kernels::plan_gemm(p, limits)};
    // K-grouped FP8: one kernel for all groups (kernels::plan_k_grouped_fp8_gemm).
    std::vector<int> ks = call.ks;
    if (ks.empty()) ks.assign(size_t(p.num_groups), call.k / p.num_groups);
    return kernels::plan_k_grouped_fp8_gemm(p, ks, limits);
}

// The tuner's candidate configs of `call` (kernels::gemm_config_candidates).
inline kernels::GemmConfigCandidates gemm_call_candidates(const GemmCallShape& call,
                                                          const kernels::DeviceLimits& limits = {}) {
    return kernels::gemm_config_candidates(call_problem(call), limits);
}

}  // namespace deep_gemm::api
