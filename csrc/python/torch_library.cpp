// The torch.library side of deep_gemm: the schema of every op and its CUDA, CPU and Meta kernels, so
// torch.ops.deep_gemm.<op> runs eagerly and traces under torch.compile(fullgraph=True) and FakeTensor.
// The GEMM schemas and kernels come from the op table (gemm_table.hpp); the kernels share the validation
// and launch code of csrc/apis with the fast path (fast_entries.cpp).
#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "apis/gemm.hpp"
#include "apis/layout.hpp"
#include "python/gemm_table.hpp"
#include "python/op_table.hpp"
#include "python/torch_ops.hpp"

using namespace deep_gemm;
using api::GemmCall;
using api::GemmOp;

namespace {

using python::ArgKind;
using python::OpArg;
using python::OpRow;
using python::Slot;

// ---- GEMM kernels: one boxed function per op, reading its arguments as the table lays them out -----

// The GemmCall of the schema arguments `args` (gemm_table.hpp gives their order). `ks` owns call.ks.
GemmCall call_from_stack(const OpRow& row, c10::ArrayRef<c10::IValue> args, std::vector<int64_t>& ks) {
    const char* op = api::gemm_op_spec(row.op).name;
    GemmCall call;
    size_t i = 0;
    const auto tensor = [&] { return &args[i++].toTensor(); };
    const auto opt_tensor = [&]() -> const at::Tensor* {
        const c10::IValue& v = args[i++];
        return v.isNone() or not v.toTensor().defined() ? nullptr : &v.toTensor();
    };
    for (const OpArg& arg : row.args) {
        switch (arg.slot) {
            case Slot::kA:
                call.a = tensor();
                if (arg.kind == ArgKind::kOperand) call.sfa = tensor();
                break;
            case Slot::kB:
                call.b = tensor();
                if (arg.kind == ArgKind::kOperand) call.sfb = tensor();
                break;
            case Slot::kD: call.d = tensor(); break;
            case Slot::kC: call.c = opt_tensor(); break;
            case Slot::kLayout: call.layout = tensor(); break;
            case Slot::kExpectedM: call.expected_m = args[i++].toInt(); break;
            case Slot::kKs:
                ks = args[i++].toIntVector();
                call.ks = ks;
                break;
            case Slot::kHeadSplits:  // no op has both: `ks` owns these
                ks = args[i++].toIntVector();
                call.head_splits = ks;
                break;
            case Slot::kRecipe: {
                const c10::IValue& v = args[i++];
                if (not v.isNone()) call.recipe = api::parse_recipe(op, v.toIntVector());
                break;
            }
            case Slot::kRecipeA:
            case Slot::kRecipeB: break;  // not in the schema: the fast path and the wrappers merge them into the recipe
            case Slot::kCompiledDims: call.compiled_dims = args[i++].toStringView(); break;
            case Slot::kDisableUe8m0Cast: call.disable_ue8m0_cast = args[i++].toBool(); break;
            case Slot::kUsePsumLayout: call.use_psum_layout = args[i++].toBool(); break;
            case Slot::kUsePaddedSfLayout: call.use_padded_sf_layout = args[i++].toBool(); break;
            case Slot::kEnsureZeroPadding: call.ensure_zero_padding = args[i++].toBool(); break;
            case Slot::kExpectedMForPsumLayout: {
                const c10::IValue& v = args[i++];
                if (not v.isNone()) call.expected_m_for_psum_layout = v.toInt();
                break;
            }
            case Slot::kMaxBlockN: call.max_block_n = args[i++].toInt(); break;
            case Slot::kEnableOverlap: call.enable_overlap = args[i++].toBool(); break;
            case Slot::kSignal: call.signal = opt_tensor(); break;
        }
    }
    return call;
}

// The CUDA and CPU kernel (kFake = false: validation, then the launch or "requires CUDA tensors") and
// the Meta kernel (kFake = true: validation only, as FakeTensor runs it under torch.compile).
template <GemmOp kOp, bool kFake>
void gemm_kernel(const c10::OperatorHandle&, torch::jit::Stack* stack) {
    const OpRow& row = python::gemm_op_row(kOp);
    const size_t n = python::schema_arg_count(row);
    std::vector<int64_t> ks;
    const GemmCall call = call_from_stack(row, torch::jit::last(*stack, n), ks);
    // enable_overlap's result, the tile's (BLOCK_M, threshold), is a host value of the config choice that the schema
    // (no return) cannot carry: the overlapped form runs through the eager entry only.
    if (call.enable_overlap) {
        api::check_gemm_fake(kOp, call);  // a wrong argument first: the message the eager entry gives
        api::throw_not_implemented(fmt::format("{}: enable_overlap=True runs eagerly only (deep_gemm.{}), not through torch.ops or "
                                               "torch.compile, which cannot return its (block_m, threshold)",
                                               api::gemm_op_spec(kOp).name, api::gemm_op_spec(kOp).name));
    }
    if constexpr (kFake)
        api::check_gemm_fake(kOp, call);
    else
        api::run_gemm(kOp, call);
    torch::jit::drop(*stack, n);
}

template <size_t... I>
void register_gemm_ops(torch::Library& m, std::index_sequence<I...>) {
    (python::def_op(m, python::torch_schema(python::gemm_op_row(static_cast<GemmOp>(I))),
                    [] { return torch::CppFunction::makeFromBoxedFunction<&gemm_kernel<static_cast<GemmOp>(I), false>>(); },
                    [] { return torch::CppFunction::makeFromBoxedFunction<&gemm_kernel<static_cast<GemmOp>(I), true>>(); }),
     ...);
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

// CUDA and CPU kernels: validation, then the launch or "requires CUDA tensors" (the layout utilities have a CPU
// fallback); Meta (also what FakeTensor runs under torch.compile): validation and output shapes only.
TORCH_LIBRARY(deep_gemm, m) {
    register_gemm_ops(m, std::make_index_sequence<static_cast<size_t>(GemmOp::kCount)>());
    python::def_op(m, python::schema_text(python::table::row("get_mn_major_tma_aligned_tensor")), TORCH_FN(mn_major_op),
                   TORCH_FN(api::get_mn_major_tma_aligned_tensor_meta));
    python::def_op(m, python::schema_text(python::table::row("transform_sf_into_required_layout")),
                   TORCH_FN(transform_sf_op), TORCH_FN(transform_sf_meta));
}
