// The op table: every public op of deep_gemm and every torch.ops.deep_gemm op, one row each. The GEMM ops
// (one per api::GemmOp) are the rows of gemm_table.hpp; this file holds the others. A row names the op's
// parameters once (name, schema type, default), its result, the backend that runs it, the Python names
// deep_gemm exports for it, the module defining those and its _C fast entry. From the parameters come the
// torch.library schema (schema_text), the C++ signature of its kernels and dispatcher call, the fast entry's
// argument binding (table_op.hpp: TableOp<row, api function>) and its _C.pyi stub (scripts/gen_stubs.py).
// _C._op_table() and _C._op_entries() give them to Python: deep_gemm.__all__ (through the generated
// deep_gemm/_wrappers.py), the stubs and tests/python/test_op_table.py follow them.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace deep_gemm::python {

// What runs an op.
enum class Backend {
    kJit,       // deep_gemm's JIT-compiled SM90 kernels
    kCublasLt,  // cuBLASLt (the library PyTorch loaded, csrc/apis/cublaslt_lib.cpp)
    kTorch,     // ATen tensor ops on the input's device (no kernel of ours)
    kHost,      // plain host arithmetic, no tensors
    kNone,      // SM100-only in DeepGEMM: kept for its signature, raises NotImplementedError
};

constexpr const char* backend_name(Backend b) {
    switch (b) {
        case Backend::kJit: return "jit";
        case Backend::kCublasLt: return "cublaslt";
        case Backend::kTorch: return "torch";
        case Backend::kHost: return "host";
        case Backend::kNone: return "none";
    }
    return "";
}

// The type of a parameter in the torch.library schema; table_op.hpp maps each to its C++ type.
enum class ParamType {
    kTensor,       // `Tensor`
    kMutTensorA,   // `Tensor(a!)`: written in place
    kMutTensorB,   // `Tensor(b!)`: a second one written in place
    kOptTensor,    // `Tensor?`
    kInt,          // `int`
    kOptInt,       // `int?`
    kSymInt,       // `SymInt`
    kBool,         // `bool`
    kFloat,        // `float`
    kOptFloat,     // `float?`
    kStr,          // `str`
    kIntList,      // `int[]`
    kScalarType,   // `ScalarType` (a torch.dtype in Python)
};

// What an op returns.
enum class Returns { kNothing, kTensor, kThreeTensors };

struct OpParam {
    const char* name;
    ParamType type;
    // nullptr: required. Else the default as text: "None", "True"/"False", an int ("128"), a str's characters
    // ("e4m3"), an int list's items ("1, 128, 128"); op_table.cpp renders it for the schema and for Python.
    const char* default_value = nullptr;
    bool keyword_only = false;  // after the schema's `*`
};

struct OpTableRow {
    const char* name;                 // torch.ops.deep_gemm.<name>, or the Python name of an op that has no torch op
    std::span<const OpParam> params;  // the schema's parameters in order; the schema, the typed kernels, the fast entry and
                                      // its stub are rendered from them (table_op.hpp, op_table.cpp, scripts/gen_stubs.py)
    Returns returns;
    Backend backend;
    const char* public_names;  // the names deep_gemm exports for it, space-separated; "": internal
    const char* wrapper;       // the deep_gemm module that defines those names ("" for the package itself); "_wrappers":
                               // scripts/gen_stubs.py writes a pass-through wrapper from the schema
                               // (docstring in deep_gemm/_gemm_docs.py)
    const char* entry = "";    // the _C fast entry generated from the row (TableOp::add_entry); "": none or hand-written
    bool has_schema = true;    // false: an op that only exists in Python (no torch op)
};

namespace table {

using B = Backend;
using T = ParamType;
using R = Returns;

// Parameters several ops share.
inline constexpr OpParam kParamA{"a", T::kTensor}, kParamB{"b", T::kTensor}, kParamD{"d", T::kMutTensorA},
    kParamC{"c", T::kOptTensor, "None"};

// Parameter lists, one per op (DeepGEMM's names and order).
inline constexpr std::array kCublasLtParams{kParamA, kParamB, kParamD, kParamC};
inline constexpr std::array kCublasLtScaledParams{OpParam{"layout", T::kInt}, kParamA, kParamB, kParamD, OpParam{"c", T::kOptTensor},
                                                  OpParam{"alpha", T::kFloat}};
inline constexpr std::array kEinsumParams{OpParam{"expr", T::kStr}, kParamA, kParamB, kParamD, kParamC, OpParam{"use_cublaslt", T::kBool, "False"}};
inline constexpr std::array kFp8EinsumParams{OpParam{"expr", T::kStr}, kParamA, OpParam{"sfa", T::kTensor}, kParamB, OpParam{"sfb", T::kTensor},
                                             kParamD, kParamC, OpParam{"recipe", T::kIntList, "1, 128, 128"}};
inline constexpr std::array kHcPrenormParams{kParamA, kParamB, kParamD, OpParam{"sqr_sum", T::kMutTensorB}, OpParam{"num_splits", T::kOptInt, "None"}};
inline constexpr std::array kMqaLogitsParams{
    OpParam{"q", T::kTensor},          OpParam{"q_sf", T::kOptTensor},         OpParam{"kv", T::kTensor},
    OpParam{"kv_sf", T::kTensor},      OpParam{"weights", T::kTensor},         OpParam{"cu_seq_len_k_start", T::kTensor},
    OpParam{"cu_seq_len_k_end", T::kTensor}, OpParam{"clean_logits", T::kBool}, OpParam{"max_seqlen_k", T::kInt},
    OpParam{"logits_dtype", T::kScalarType}, OpParam{"schedule_meta", T::kOptTensor, "None"}};
inline constexpr std::array kMqaMetadataParams{OpParam{"cu_seq_len_k_start", T::kTensor}, OpParam{"cu_seq_len_k_end", T::kTensor},
                                               OpParam{"num_kv_tokens", T::kInt}, OpParam{"num_heads", T::kInt}};
inline constexpr std::array kPagedMetadataParams{OpParam{"context_lens", T::kTensor}, OpParam{"block_kv", T::kInt},
                                                 OpParam{"num_sms", T::kInt}, OpParam{"indices", T::kOptTensor, "None"}};
inline constexpr std::array kPagedLogitsParams{
    OpParam{"q", T::kTensor},           OpParam{"q_sf", T::kOptTensor},     OpParam{"kv_cache", T::kTensor},
    OpParam{"weights", T::kTensor},     OpParam{"context_lens", T::kTensor}, OpParam{"block_table", T::kTensor},
    OpParam{"schedule_meta", T::kTensor}, OpParam{"max_context_len", T::kInt}, OpParam{"clean_logits", T::kBool, "False"},
    OpParam{"logits_bf16", T::kBool, "False"}, OpParam{"indices", T::kOptTensor, "None"}};
inline constexpr std::array kMnMajorParams{OpParam{"sf", T::kTensor}};
inline constexpr std::array kTransformSfParams{
    OpParam{"sf", T::kTensor},           OpParam{"mn", T::kSymInt},     OpParam{"k", T::kSymInt},
    OpParam{"recipe", T::kIntList},      OpParam{"num_groups", T::kOptInt, "None"}, OpParam{"is_sfa", T::kBool, "False"},
    OpParam{"disable_ue8m0_cast", T::kBool, "False"}};
inline constexpr std::array kSwigluParams{
    OpParam{"x", T::kTensor},                   OpParam{"topk_weights", T::kOptTensor},  OpParam{"avail_tokens", T::kOptTensor},
    OpParam{"num_per_channels", T::kInt},       OpParam{"use_col_major_scales", T::kBool}, OpParam{"round_scale", T::kBool},
    OpParam{"ue8m0_scale", T::kBool},           OpParam{"clamp_value", T::kOptFloat, "None"}, OpParam{"fmt", T::kStr, "e4m3"},
    OpParam{"num_sms", T::kOptInt, "None"},     OpParam{"output_bf16", T::kBool, "False"}, OpParam{"fast_math", T::kBool, "True"}};
inline constexpr std::array kApplyWeightParams{
    OpParam{"x", T::kTensor},
    OpParam{"out", T::kMutTensorA},
    OpParam{"topk_weights", T::kOptTensor, "None", true},
    OpParam{"avail_tokens", T::kOptTensor, "None", true},
    OpParam{"num_per_channels", T::kInt, "128", true},
    OpParam{"use_col_major_scales", T::kBool, "True", true},
    OpParam{"round_scale", T::kBool, "False", true},
    OpParam{"ue8m0_scale", T::kBool, "False", true},
    OpParam{"clamp_value", T::kOptFloat, "None", true},
    OpParam{"fmt", T::kStr, "e4m3", true},
    OpParam{"num_sms", T::kOptInt, "None", true},
    OpParam{"fast_math", T::kBool, "True", true}};

// A row of an op that only exists in Python.
constexpr OpTableRow python_only(const char* name, Backend backend, const char* wrapper) {
    return {name, {}, R::kNothing, backend, name, wrapper, "", false};
}

inline constexpr std::array kOtherOps{
    // BF16 GEMMs through cuBLASLt (csrc/apis/cublaslt.cpp)
    OpTableRow{"cublaslt_gemm_nt", kCublasLtParams, R::kNothing, B::kCublasLt, "cublaslt_gemm_nt", "_wrappers", "cublaslt_gemm_nt"},
    OpTableRow{"cublaslt_gemm_nn", kCublasLtParams, R::kNothing, B::kCublasLt, "cublaslt_gemm_nn", "_wrappers", "cublaslt_gemm_nn"},
    OpTableRow{"cublaslt_gemm_tn", kCublasLtParams, R::kNothing, B::kCublasLt, "cublaslt_gemm_tn", "_wrappers", "cublaslt_gemm_tn"},
    OpTableRow{"cublaslt_gemm_tt", kCublasLtParams, R::kNothing, B::kCublasLt, "cublaslt_gemm_tt", "_wrappers", "cublaslt_gemm_tt"},
    // the bf16_gemm_* ops called with alpha != 1 (deep_gemm/_compat28.py)
    OpTableRow{"_cublaslt_gemm_scaled", kCublasLtScaledParams, R::kNothing, B::kCublasLt, "", "_compat28", "_cublaslt_gemm_scaled"},
    // the "nn" M-grouped GEMMs: the nt table ops on a transposed view of B
    python_only("m_grouped_fp8_gemm_nn_contiguous", B::kJit, ""),
    python_only("m_grouped_bf16_gemm_nn_contiguous", B::kJit, ""),
    python_only("k_grouped_fp8_gemm_tn_contiguous", B::kNone, "_compat"),
    // einsum (csrc/apis/einsum.cpp)
    OpTableRow{"einsum", kEinsumParams, R::kNothing, B::kJit, "einsum", "_compat", "_einsum"},
    OpTableRow{"fp8_einsum", kFp8EinsumParams, R::kNothing, B::kJit, "fp8_einsum", "_compat", "_fp8_einsum"},
    // the mHC pre-norm GEMM (csrc/apis/hyperconnection.cpp)
    OpTableRow{"tf32_hc_prenorm_gemm", kHcPrenormParams, R::kNothing, B::kJit, "tf32_hc_prenorm_gemm", "_compat", "tf32_hc_prenorm_gemm"},
    // MQA logits of the sparse-attention indexer (csrc/apis/attention.cpp, paged_attention.cpp)
    OpTableRow{"fp8_mqa_logits", kMqaLogitsParams, R::kTensor, B::kJit, "fp8_mqa_logits fp8_fp4_mqa_logits", "_mqa_logits",
               "_fp8_mqa_logits_unpacked"},
    OpTableRow{"get_mqa_logits_metadata", kMqaMetadataParams, R::kTensor, B::kTorch, "get_mqa_logits_metadata", "_mqa_logits",
               "get_mqa_logits_metadata"},
    OpTableRow{"get_paged_mqa_logits_metadata", kPagedMetadataParams, R::kTensor, B::kTorch, "get_paged_mqa_logits_metadata",
               "_paged_mqa", "get_paged_mqa_logits_metadata"},
    OpTableRow{"fp8_paged_mqa_logits", kPagedLogitsParams, R::kTensor, B::kJit, "fp8_paged_mqa_logits fp8_fp4_paged_mqa_logits",
               "_paged_mqa", "_fp8_paged_mqa_logits"},
    // layout utilities (csrc/apis/layout.cpp)
    python_only("get_tma_aligned_size", B::kHost, "utils.layout"),
    OpTableRow{"get_mn_major_tma_aligned_tensor", kMnMajorParams, R::kTensor, B::kJit, "get_mn_major_tma_aligned_tensor", "utils.layout"},
    OpTableRow{"transform_sf_into_required_layout", kTransformSfParams, R::kTensor, B::kJit, "transform_sf_into_required_layout", ""},
    // fused FP8 quantisation (csrc/apis/swiglu.cpp)
    OpTableRow{"swiglu_apply_weight_to_fp8", kSwigluParams, R::kThreeTensors, B::kJit, "swiglu_apply_weight_to_fp8", ""},
    OpTableRow{"apply_weight_to_fp8", kApplyWeightParams, R::kTensor, B::kJit, "apply_weight_to_fp8", ""},
};

// The index of the row named `name` that has a schema; a name without one does not compile.
consteval size_t row_index(std::string_view name) {
    for (size_t i = 0; i < kOtherOps.size(); ++i)
        if (name == kOtherOps[i].name and kOtherOps[i].has_schema) return i;
    throw "no row with a schema in csrc/python/op_table.hpp for this op";
}

consteval const OpTableRow& row(std::string_view name) { return kOtherOps[row_index(name)]; }

}  // namespace table

// The torch.library schema of a row, e.g. "einsum(str expr, Tensor a, ..., bool use_cublaslt=False) -> ()".
std::string schema_text(const OpTableRow& row);

// "(expr, a, b, d, c=None, use_cublaslt=False)": the fast entry's Python signature (its __text_signature__).
std::string python_signature(const OpTableRow& row);

}  // namespace deep_gemm::python
