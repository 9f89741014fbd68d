// The torch.library side of deep_gemm: the schema of every op and its CUDA, CPU and Meta kernels, so
// torch.ops.deep_gemm.<op> runs eagerly and traces under torch.compile(fullgraph=True) and FakeTensor.
// The kernels share the validation and launch code of csrc/apis with the fast path (fast_entries.cpp).
#include <torch/library.h>

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "apis/gemm.hpp"
#include "apis/layout.hpp"

using namespace deep_gemm;
using api::GemmCall;
using api::GemmOp;

namespace {

const at::Tensor* opt_ptr(const std::optional<at::Tensor>& t) { return t.has_value() and t->defined() ? &*t : nullptr; }

// ---- torch.library kernels (one per signature family; the op is a template parameter) -----------

template <GemmOp kOp, bool kFake>
void gemm_kernel(const GemmCall& call) {
    if constexpr (kFake)
        api::check_gemm_fake(kOp, call);
    else
        api::run_gemm(kOp, call);
}

template <GemmOp kOp, bool kFake>
void fp8_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                const std::optional<at::Tensor>& c, at::OptionalIntArrayRef recipe, std::string_view compiled_dims,
                bool disable_ue8m0_cast) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.c = opt_ptr(c);
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_m_contiguous_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb,
                             const at::Tensor& d, const at::Tensor& grouped_layout, at::OptionalIntArrayRef recipe,
                             std::string_view compiled_dims, bool disable_ue8m0_cast, bool use_psum_layout, bool ensure_zero_padding,
                             std::optional<int64_t> expected_m_for_psum_layout) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &grouped_layout;
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    call.use_psum_layout = use_psum_layout;
    call.ensure_zero_padding = ensure_zero_padding;
    call.expected_m_for_psum_layout = expected_m_for_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_masked_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                       const at::Tensor& masked_m, int64_t expected_m, at::OptionalIntArrayRef recipe, std::string_view compiled_dims,
                       bool disable_ue8m0_cast) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &masked_m;
    call.expected_m = expected_m;
    if (recipe.has_value()) call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, *recipe);
    call.compiled_dims = compiled_dims;
    call.disable_ue8m0_cast = disable_ue8m0_cast;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void fp8_k_grouped_kernel(const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb, const at::Tensor& d,
                          at::IntArrayRef ks, const at::Tensor& ks_tensor, const std::optional<at::Tensor>& c, at::IntArrayRef recipe,
                          std::string_view compiled_dims, bool use_psum_layout) {
    GemmCall call;
    call.a = &a, call.sfa = &sfa, call.b = &b, call.sfb = &sfb, call.d = &d, call.layout = &ks_tensor, call.c = opt_ptr(c);
    call.ks = ks;
    call.recipe = api::parse_recipe(api::gemm_op_spec(kOp).name, recipe);
    call.compiled_dims = compiled_dims;
    call.use_psum_layout = use_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const std::optional<at::Tensor>& c,
                 std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.c = opt_ptr(c);
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_m_contiguous_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& grouped_layout,
                              std::string_view compiled_dims, bool use_psum_layout, bool ensure_zero_padding,
                              std::optional<int64_t> expected_m_for_psum_layout) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &grouped_layout;
    call.compiled_dims = compiled_dims;
    call.use_psum_layout = use_psum_layout;
    call.ensure_zero_padding = ensure_zero_padding;
    call.expected_m_for_psum_layout = expected_m_for_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_masked_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& masked_m, int64_t expected_m,
                        std::string_view compiled_dims) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &masked_m;
    call.expected_m = expected_m;
    call.compiled_dims = compiled_dims;
    gemm_kernel<kOp, kFake>(call);
}

template <GemmOp kOp, bool kFake>
void bf16_k_grouped_kernel(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, at::IntArrayRef ks, const at::Tensor& ks_tensor,
                           const std::optional<at::Tensor>& c, std::string_view compiled_dims, bool use_psum_layout) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.layout = &ks_tensor, call.c = opt_ptr(c);
    call.ks = ks;
    call.compiled_dims = compiled_dims;
    call.use_psum_layout = use_psum_layout;
    gemm_kernel<kOp, kFake>(call);
}

// ---- schemas --------------------------------------------------------------------------------------

std::string gemm_schema(GemmOp op) {
    const auto& spec = api::gemm_op_spec(op);
    const std::string dims = spec.default_compiled_dims;
    const bool fp8 = spec.family == api::Family::kFp8;
    const std::string ab = fp8 ? "Tensor a, Tensor sfa, Tensor b, Tensor sfb, Tensor(a!) d" : "Tensor a, Tensor b, Tensor(a!) d";
    std::string rest;
    switch (spec.grouping) {
        case api::Grouping::kNone:
            rest = fp8 ? fmt::format("Tensor? c=None, int[]? recipe=None, str compiled_dims=\"{}\", bool disable_ue8m0_cast=False", dims)
                       : fmt::format("Tensor? c=None, str compiled_dims=\"{}\"", dims);
            break;
        case api::Grouping::kMContiguous:
            rest = fp8 ? fmt::format("Tensor grouped_layout, int[]? recipe=None, str compiled_dims=\"{}\", bool disable_ue8m0_cast=False, "
                                     "bool use_psum_layout=False, bool ensure_zero_padding=True, int? expected_m_for_psum_layout=None", dims)
                       : fmt::format("Tensor grouped_layout, str compiled_dims=\"{}\", bool use_psum_layout=False, "
                                     "bool ensure_zero_padding=True, int? expected_m_for_psum_layout=None", dims);
            break;
        case api::Grouping::kMMasked:
            rest = fp8 ? fmt::format("Tensor masked_m, int expected_m, int[]? recipe=None, str compiled_dims=\"{}\", "
                                     "bool disable_ue8m0_cast=False", dims)
                       : fmt::format("Tensor masked_m, int expected_m, str compiled_dims=\"{}\"", dims);
            break;
        case api::Grouping::kKContiguous:
            rest = fp8 ? fmt::format("int[] ks_cpu, Tensor grouped_layout, Tensor? c=None, int[] recipe=[1, 1, 128], "
                                     "str compiled_dims=\"{}\", bool use_psum_layout=False", dims)
                       : fmt::format("int[] ks_cpu, Tensor grouped_layout, Tensor? c=None, str compiled_dims=\"{}\", "
                                     "bool use_psum_layout=False", dims);
            break;
    }
    return fmt::format("{}({}, {}) -> ()", spec.name, ab, rest);
}

// ---- layout ops -----------------------------------------------------------------------------------

// torch.ops form: always a fresh tensor (an op may not return an alias of its input).
at::Tensor mn_major_op(const at::Tensor& sf) { return api::get_mn_major_tma_aligned_tensor(sf, /*allow_passthrough=*/false); }

at::Tensor transform_sf_op(const at::Tensor& sf, c10::SymInt mn, c10::SymInt k, at::IntArrayRef recipe, std::optional<int64_t> num_groups,
                           bool is_sfa, bool disable_ue8m0_cast) {
    return api::transform_sf_into_required_layout(sf, mn.guard_int(__FILE__, __LINE__), k.guard_int(__FILE__, __LINE__),
                                                  api::parse_recipe("transform_sf_into_required_layout", recipe), num_groups, is_sfa,
                                                  disable_ue8m0_cast, /*allow_passthrough=*/false);
}

at::Tensor transform_sf_meta(const at::Tensor& sf, c10::SymInt mn, c10::SymInt k, at::IntArrayRef recipe, std::optional<int64_t> num_groups,
                             bool is_sfa, bool /*disable_ue8m0_cast*/) {
    return api::transform_sf_into_required_layout_meta(sf, mn.maybe_as_int().value_or(api::kUnknown),
                                                       k.maybe_as_int().value_or(api::kUnknown),
                                                       api::parse_recipe("transform_sf_into_required_layout", recipe), num_groups, is_sfa);
}

}  // namespace

// ---- torch.library registration -------------------------------------------------------------------

#define DG_FOR_EACH_GEMM(X)                                              \
    X(GemmOp::kFp8Nt, fp8_kernel)                                        \
    X(GemmOp::kFp8Nn, fp8_kernel)                                        \
    X(GemmOp::kFp8Tn, fp8_kernel)                                        \
    X(GemmOp::kFp8Tt, fp8_kernel)                                        \
    X(GemmOp::kMGroupedFp8NtContiguous, fp8_m_contiguous_kernel)         \
    X(GemmOp::kMGroupedFp8NtMasked, fp8_masked_kernel)                   \
    X(GemmOp::kKGroupedFp8NtContiguous, fp8_k_grouped_kernel)            \
    X(GemmOp::kBf16Nt, bf16_kernel)                                      \
    X(GemmOp::kBf16Nn, bf16_kernel)                                      \
    X(GemmOp::kBf16Tn, bf16_kernel)                                      \
    X(GemmOp::kBf16Tt, bf16_kernel)                                      \
    X(GemmOp::kMGroupedBf16NtContiguous, bf16_m_contiguous_kernel)       \
    X(GemmOp::kMGroupedBf16NtMasked, bf16_masked_kernel)                 \
    X(GemmOp::kKGroupedBf16TnContiguous, bf16_k_grouped_kernel)

TORCH_LIBRARY(deep_gemm, m) {
#define DG_DEF(op, kernel) m.def(gemm_schema(op).c_str());
    DG_FOR_EACH_GEMM(DG_DEF)
#undef DG_DEF
    m.def("get_mn_major_tma_aligned_tensor(Tensor sf) -> Tensor");
    m.def("transform_sf_into_required_layout(Tensor sf, SymInt mn, SymInt k, int[] recipe, int? num_groups=None, bool is_sfa=False, "
          "bool disable_ue8m0_cast=False) -> Tensor");
}

TORCH_LIBRARY_IMPL(deep_gemm, CUDA, m) {
#define DG_IMPL(op, kernel) m.impl(api::gemm_op_spec(op).name, TORCH_FN((kernel<op, false>)));
    DG_FOR_EACH_GEMM(DG_IMPL)
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(mn_major_op));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_op));
}

// CPU: the same validation, then "requires CUDA tensors" (the layout utilities have a CPU fallback).
TORCH_LIBRARY_IMPL(deep_gemm, CPU, m) {
    DG_FOR_EACH_GEMM(DG_IMPL)
#undef DG_IMPL
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(mn_major_op));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_op));
}

// Meta (also what FakeTensor runs under torch.compile): validation and output shapes only.
TORCH_LIBRARY_IMPL(deep_gemm, Meta, m) {
#define DG_META(op, kernel) m.impl(api::gemm_op_spec(op).name, TORCH_FN((kernel<op, true>)));
    DG_FOR_EACH_GEMM(DG_META)
#undef DG_META
    m.impl("get_mn_major_tma_aligned_tensor", TORCH_FN(api::get_mn_major_tma_aligned_tensor_meta));
    m.impl("transform_sf_into_required_layout", TORCH_FN(transform_sf_meta));
}
