// The Python surface of every GEMM op in one table: a row per op names its parameters in order, each with
// its kind, where its value goes in api::GemmCall and its default. Everything that spells a signature is
// generated from it:
//  * the METH_FASTCALL entry's argument binding and __text_signature__ (fast_entries.cpp),
//  * the torch.library schema and the boxed CUDA/CPU/Meta kernels (torch_library.cpp),
//  * through _C._gemm_op_table(), the Python wrappers with their torch.ops route under tracing and the
//    _C.pyi lines (deep_gemm/_gemm_surface.py, scripts/gen_stubs.py).
// A new GEMM op is a GemmOp (csrc/apis/gemm.hpp), a row here and a docstring in deep_gemm/_gemm_docs.py.
#pragma once

#include <array>
#include <span>
#include <string>

#include "apis/gemm.hpp"

namespace deep_gemm::python {

// What a parameter is in Python and in the schema.
enum class ArgKind {
    kOperand,     // FP8 operand: a (tensor, scales) pair; two schema tensors `x` and `sfx`
    kTensor,
    kOutTensor,   // the output, written in place: `Tensor(a!)`
    kOptTensor,   // `Tensor?`
    kOptOutTensor,  // `Tensor(b!)?`: an optional tensor the op writes (the masked op's signal)
    kInt,
    kOptInt,      // `int?`
    kBool,
    kStr,
    kIntList,     // `int[]`: any sequence of ints in Python
    kRecipe,      // `int[]?`: None or 3 ints
    kHalfRecipe,  // recipe_a / recipe_b: Python only; merged into the recipe before the schema (fast_args.hpp)
};

// Where a parameter's value goes in api::GemmCall.
enum class Slot {
    kA, kB, kD, kC, kLayout, kExpectedM, kKs, kRecipe, kRecipeA, kRecipeB, kCompiledDims, kDisableUe8m0Cast, kUsePsumLayout,
    kEnsureZeroPadding, kExpectedMForPsumLayout, kHeadSplits, kUsePaddedSfLayout, kMaxBlockN, kEnableOverlap, kSignal,
};

struct OpArg {
    const char* name;
    ArgKind kind;
    Slot slot;
    // nullptr: required. Else the default as text: "None", "True"/"False", a str's characters ("nk"), an
    // int list's items ("1, 1, 128"); gemm_table.cpp renders it for Python and for the schema.
    const char* default_value = nullptr;
};

struct OpRow {
    api::GemmOp op;
    std::span<const OpArg> args;
};

namespace table {

using K = ArgKind;
using S = Slot;

// The parameters the ops share.
inline constexpr OpArg kA8{"a", K::kOperand, S::kA}, kB8{"b", K::kOperand, S::kB};
inline constexpr OpArg kA16{"a", K::kTensor, S::kA}, kB16{"b", K::kTensor, S::kB};
inline constexpr OpArg kD{"d", K::kOutTensor, S::kD};
inline constexpr OpArg kC{"c", K::kOptTensor, S::kC, "None"};
inline constexpr OpArg kGroupedLayout{"grouped_layout", K::kTensor, S::kLayout};
inline constexpr OpArg kMaskedM{"masked_m", K::kTensor, S::kLayout}, kExpectedM{"expected_m", K::kInt, S::kExpectedM};
inline constexpr OpArg kKs{"ks_cpu", K::kIntList, S::kKs};
inline constexpr OpArg kRecipe{"recipe", K::kRecipe, S::kRecipe, "None"};
inline constexpr OpArg kRecipeA{"recipe_a", K::kHalfRecipe, S::kRecipeA, "None"}, kRecipeB{"recipe_b", K::kHalfRecipe, S::kRecipeB, "None"};
inline constexpr OpArg kKGroupedRecipe{"recipe", K::kIntList, S::kRecipe, "1, 1, 128"};
inline constexpr OpArg kUe8m0{"disable_ue8m0_cast", K::kBool, S::kDisableUe8m0Cast, "False"};
inline constexpr OpArg kPsum{"use_psum_layout", K::kBool, S::kUsePsumLayout, "False"};
inline constexpr OpArg kPaddedSf{"use_padded_sf_layout", K::kBool, S::kUsePaddedSfLayout, "False"};
inline constexpr OpArg kZeroPadding{"ensure_zero_padding", K::kBool, S::kEnsureZeroPadding, "True"};
inline constexpr OpArg kHeadSplits{"head_splits", K::kIntList, S::kHeadSplits};
inline constexpr OpArg kExpectedMPsum{"expected_m_for_psum_layout", K::kOptInt, S::kExpectedMForPsumLayout, "None"};
// The SGLang fork's overlapped masked GEMM (after every DeepGEMM parameter): api::GemmCall says what they do.
inline constexpr OpArg kMaxBlockN{"max_block_n", K::kInt, S::kMaxBlockN, "256"};
inline constexpr OpArg kEnableOverlap{"enable_overlap", K::kBool, S::kEnableOverlap, "False"};
inline constexpr OpArg kSignal{"signal", K::kOptOutTensor, S::kSignal, "None"};

constexpr OpArg dims(const char* default_dims) { return {"compiled_dims", K::kStr, S::kCompiledDims, default_dims}; }

// Parameter lists (DeepGEMM's order), by family and grouping; `d` is the op's default compiled_dims.
constexpr auto fp8_dense(const char* d) { return std::array{kA8, kB8, kD, kC, kRecipe, kRecipeA, kRecipeB, dims(d), kUe8m0}; }
inline constexpr auto kFp8DenseNk = fp8_dense("nk"), kFp8DenseMn = fp8_dense("mn");
inline constexpr std::array kFp8MContiguous{kA8, kB8, kD, kGroupedLayout, kRecipe, kRecipeA, kRecipeB, dims("nk"), kUe8m0, kPsum,
                                            kZeroPadding, kExpectedMPsum};
inline constexpr std::array kFp8Masked{kA8, kB8, kD, kMaskedM, kExpectedM, kRecipe, kRecipeA, kRecipeB, dims("nk"), kUe8m0,
                                        kMaxBlockN, kEnableOverlap, kSignal};
inline constexpr std::array kFp8KGrouped{kA8, kB8, kD, kKs, kGroupedLayout, kC, kKGroupedRecipe, dims("mn"), kPsum, kPaddedSf};

constexpr auto bf16_dense(const char* d) { return std::array{kA16, kB16, kD, kC, dims(d)}; }
inline constexpr auto kBf16DenseNk = bf16_dense("nk"), kBf16DenseMn = bf16_dense("mn");
inline constexpr std::array kBf16MContiguous{kA16, kB16, kD, kGroupedLayout, dims("nk"), kPsum, kZeroPadding, kExpectedMPsum};
inline constexpr std::array kBf16Masked{kA16, kB16, kD, kMaskedM, kExpectedM, dims("nk")};
inline constexpr std::array kBf16KGrouped{kA16, kB16, kD, kKs, kGroupedLayout, kC, dims("mn"), kPsum};
inline constexpr std::array kFp8SkipHeadMid{kA8, kB8, kD, kHeadSplits, kRecipe, dims("nk"), kUe8m0};

using api::GemmOp;

// Indexed by GemmOp (checked below); the public name is api::gemm_op_spec(op).name.
inline constexpr std::array<OpRow, static_cast<int>(GemmOp::kCount)> kRows{{
    {GemmOp::kFp8Nt, kFp8DenseNk},
    {GemmOp::kFp8Nn, kFp8DenseNk},
    {GemmOp::kFp8Tn, kFp8DenseMn},
    {GemmOp::kFp8Tt, kFp8DenseMn},
    {GemmOp::kMGroupedFp8NtContiguous, kFp8MContiguous},
    {GemmOp::kMGroupedFp8NtMasked, kFp8Masked},
    {GemmOp::kKGroupedFp8NtContiguous, kFp8KGrouped},
    {GemmOp::kBf16Nt, kBf16DenseNk},
    {GemmOp::kBf16Nn, kBf16DenseNk},
    {GemmOp::kBf16Tn, kBf16DenseMn},
    {GemmOp::kBf16Tt, kBf16DenseMn},
    {GemmOp::kMGroupedBf16NtContiguous, kBf16MContiguous},
    {GemmOp::kMGroupedBf16NtMasked, kBf16Masked},
    {GemmOp::kKGroupedBf16TnContiguous, kBf16KGrouped},
    {GemmOp::kFp8NtSkipHeadMid, kFp8SkipHeadMid},
}};

constexpr bool rows_in_op_order() {
    for (size_t i = 0; i < kRows.size(); ++i)
        if (static_cast<size_t>(kRows[i].op) != i) return false;
    return true;
}
static_assert(rows_in_op_order(), "kRows must list the ops in GemmOp order");

constexpr bool same_text(const char* x, const char* y) {
    while (*x != 0 and *x == *y) ++x, ++y;
    return *x == *y;
}
// The compiled_dims default of each row is the op spec's (which CPU planning, csrc/apis/gemm_plan.hpp, uses).
constexpr bool dims_defaults_match_specs() {
    for (const OpRow& row : kRows)
        for (const OpArg& arg : row.args)
            if (arg.slot == Slot::kCompiledDims and
                not same_text(arg.default_value, api::kSpecs[static_cast<int>(row.op)].default_compiled_dims))
                return false;
    return true;
}
static_assert(dims_defaults_match_specs(), "compiled_dims defaults must equal api::kSpecs' default_compiled_dims");

}  // namespace table

// The row of an op (constexpr, so the fast entries' loops over it unroll).
constexpr const OpRow& gemm_op_row(api::GemmOp op) { return table::kRows[static_cast<int>(op)]; }

// How many leading parameters are required (they precede every defaulted one).
constexpr int required_count(const OpRow& row) {
    int n = 0;
    while (n < static_cast<int>(row.args.size()) and row.args[n].default_value == nullptr) ++n;
    return n;
}

// Whether the op's Python entry returns what enable_overlap asks for (else it returns None).
constexpr bool has_overlap(const OpRow& row) {
    for (const OpArg& arg : row.args)
        if (arg.slot == Slot::kEnableOverlap) return true;
    return false;
}

// The default of a bool parameter.
constexpr bool bool_default(const OpArg& arg) { return arg.default_value[0] == 'T'; }

// The default rendered as a Python literal ('nk', (1, 1, 128), None, False); "" when required.
std::string python_default(const OpArg& arg);

// "(a, b, d, c=None, ...)": the entry's Python signature (its __text_signature__).
std::string python_signature(const OpRow& row);

// The torch.library schema, e.g. "bf16_gemm_nt(Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None, ...) -> ()".
std::string torch_schema(const OpRow& row);

// The number of schema arguments (an FP8 operand counts twice, half recipes not at all).
size_t schema_arg_count(const OpRow& row);

}  // namespace deep_gemm::python
