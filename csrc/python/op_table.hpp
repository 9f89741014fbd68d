// The op table: every public op of deep_gemm and every torch.ops.deep_gemm op, one row each. The GEMM ops
// (one per api::GemmOp) are the rows of gemm_table.hpp, whose parameter lists generate their signatures; this
// file holds the others: their torch.library schema (registered with def_op(m, table::schema_of("name"), ...)),
// the backend that runs them, the Python names deep_gemm exports for them and the module defining those.
// _C._op_table() gives both parts to Python: deep_gemm.__all__ (through the generated deep_gemm/_wrappers.py)
// and tests/python/test_op_table.py follow it.
#pragma once

#include <array>
#include <string_view>

#include "python/torch_ops.hpp"

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

struct OpTableRow {
    const char* name;          // torch.ops.deep_gemm.<name>, or the Python name of an op that has no torch op
    const char* schema;        // the torch.library schema (name first); nullptr: Python only
    Backend backend;
    const char* public_names;  // the names deep_gemm exports for it, space-separated; "": internal
    const char* wrapper;       // the deep_gemm module that defines those names ("" for the package itself); "_wrappers":
                               // scripts/gen_stubs.py writes a pass-through wrapper from the schema
                               // (docstring in deep_gemm/_gemm_docs.py)
};

namespace table {

using B = Backend;

inline constexpr std::array kOtherOps{
    // BF16 GEMMs through cuBLASLt (csrc/apis/cublaslt.cpp)
    OpTableRow{"cublaslt_gemm_nt", "cublaslt_gemm_nt(Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None) -> ()", B::kCublasLt,
               "cublaslt_gemm_nt", "_wrappers"},
    OpTableRow{"cublaslt_gemm_nn", "cublaslt_gemm_nn(Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None) -> ()", B::kCublasLt,
               "cublaslt_gemm_nn", "_wrappers"},
    OpTableRow{"cublaslt_gemm_tn", "cublaslt_gemm_tn(Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None) -> ()", B::kCublasLt,
               "cublaslt_gemm_tn", "_wrappers"},
    OpTableRow{"cublaslt_gemm_tt", "cublaslt_gemm_tt(Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None) -> ()", B::kCublasLt,
               "cublaslt_gemm_tt", "_wrappers"},
    // the bf16_gemm_* ops called with alpha != 1 (deep_gemm/_compat28.py)
    OpTableRow{"_cublaslt_gemm_scaled", "_cublaslt_gemm_scaled(int layout, Tensor a, Tensor b, Tensor(a!) d, Tensor? c, float alpha) -> ()",
               B::kCublasLt, "", "_compat28"},
    // the "nn" M-grouped GEMMs: the nt table ops on a transposed view of B
    OpTableRow{"m_grouped_fp8_gemm_nn_contiguous", nullptr, B::kJit, "m_grouped_fp8_gemm_nn_contiguous", ""},
    OpTableRow{"m_grouped_bf16_gemm_nn_contiguous", nullptr, B::kJit, "m_grouped_bf16_gemm_nn_contiguous", ""},
    OpTableRow{"k_grouped_fp8_gemm_tn_contiguous", nullptr, B::kNone, "k_grouped_fp8_gemm_tn_contiguous", "_compat"},
    // einsum (csrc/apis/einsum.cpp)
    OpTableRow{"einsum", "einsum(str expr, Tensor a, Tensor b, Tensor(a!) d, Tensor? c=None, bool use_cublaslt=False) -> ()", B::kJit,
               "einsum", "_compat"},
    OpTableRow{"fp8_einsum",
               "fp8_einsum(str expr, Tensor a, Tensor sfa, Tensor b, Tensor sfb, Tensor(a!) d, Tensor? c=None, "
               "int[] recipe=[1, 128, 128]) -> ()",
               B::kJit, "fp8_einsum", "_compat"},
    // the mHC pre-norm GEMM (csrc/apis/hyperconnection.cpp)
    OpTableRow{"tf32_hc_prenorm_gemm", "tf32_hc_prenorm_gemm(Tensor a, Tensor b, Tensor(a!) d, Tensor(b!) sqr_sum, int? num_splits=None) -> ()",
               B::kJit, "tf32_hc_prenorm_gemm", "_compat"},
    // MQA logits of the sparse-attention indexer (csrc/apis/attention.cpp, paged_attention.cpp)
    OpTableRow{"fp8_mqa_logits",
               "fp8_mqa_logits(Tensor q, Tensor? q_sf, Tensor kv, Tensor kv_sf, Tensor weights, Tensor cu_seq_len_k_start, "
               "Tensor cu_seq_len_k_end, bool clean_logits, int max_seqlen_k, ScalarType logits_dtype, Tensor? schedule_meta=None) -> Tensor",
               B::kJit, "fp8_mqa_logits fp8_fp4_mqa_logits", "_mqa_logits"},
    OpTableRow{"get_mqa_logits_metadata",
               "get_mqa_logits_metadata(Tensor cu_seq_len_k_start, Tensor cu_seq_len_k_end, int num_kv_tokens, int num_heads) -> Tensor",
               B::kTorch, "get_mqa_logits_metadata", "_mqa_logits"},
    OpTableRow{"get_paged_mqa_logits_metadata",
               "get_paged_mqa_logits_metadata(Tensor context_lens, int block_kv, int num_sms, Tensor? indices=None) -> Tensor", B::kTorch,
               "get_paged_mqa_logits_metadata", "_paged_mqa"},
    OpTableRow{"fp8_paged_mqa_logits",
               "fp8_paged_mqa_logits(Tensor q, Tensor? q_sf, Tensor kv_cache, Tensor weights, Tensor context_lens, Tensor block_table, "
               "Tensor schedule_meta, int max_context_len, bool clean_logits=False, bool logits_bf16=False, Tensor? indices=None) -> Tensor",
               B::kJit, "fp8_paged_mqa_logits fp8_fp4_paged_mqa_logits", "_paged_mqa"},
    // layout utilities (csrc/apis/layout.cpp)
    OpTableRow{"get_tma_aligned_size", nullptr, B::kHost, "get_tma_aligned_size", "utils.layout"},
    OpTableRow{"get_mn_major_tma_aligned_tensor", "get_mn_major_tma_aligned_tensor(Tensor sf) -> Tensor", B::kJit,
               "get_mn_major_tma_aligned_tensor", "utils.layout"},
    OpTableRow{"transform_sf_into_required_layout",
               "transform_sf_into_required_layout(Tensor sf, SymInt mn, SymInt k, int[] recipe, int? num_groups=None, bool is_sfa=False, "
               "bool disable_ue8m0_cast=False) -> Tensor",
               B::kJit, "transform_sf_into_required_layout", ""},
    // fused FP8 quantisation (csrc/apis/swiglu.cpp)
    OpTableRow{"swiglu_apply_weight_to_fp8",
               "swiglu_apply_weight_to_fp8(Tensor x, Tensor? topk_weights, Tensor? avail_tokens, int num_per_channels, "
               "bool use_col_major_scales, bool round_scale, bool ue8m0_scale, float? clamp_value=None, str fmt=\"e4m3\", "
               "int? num_sms=None, bool output_bf16=False, bool fast_math=True) -> (Tensor, Tensor, Tensor)",
               B::kJit, "swiglu_apply_weight_to_fp8", ""},
    OpTableRow{"apply_weight_to_fp8",
               "apply_weight_to_fp8(Tensor x, Tensor(a!) out, *, Tensor? topk_weights=None, Tensor? avail_tokens=None, "
               "int num_per_channels=128, bool use_col_major_scales=True, bool round_scale=False, bool ue8m0_scale=False, "
               "float? clamp_value=None, str fmt=\"e4m3\", int? num_sms=None, bool fast_math=True) -> Tensor",
               B::kJit, "apply_weight_to_fp8", ""},
};

// The schema of the row named `name`; a name without a row (or without a schema) does not compile.
consteval const char* schema_of(std::string_view name) {
    for (const OpTableRow& row : kOtherOps)
        if (name == row.name and row.schema != nullptr) return row.schema;
    throw "no row with a schema in csrc/python/op_table.hpp for this op";
}

}  // namespace table

}  // namespace deep_gemm::python
