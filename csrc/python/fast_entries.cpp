// The fast path of deep_gemm._C: the METH_FASTCALL GEMM entries, generated from the op table
// (gemm_table.hpp), and the layout entries. Plain CPU/CUDA tensors run directly without the GIL;
// anything else (meta, fake, subclasses, a dispatch mode) goes through the torch.ops dispatcher op.
#include "python/fast_entries.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <array>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apis/gemm.hpp"
#include "apis/layout.hpp"
#include "python/fast_args.hpp"
#include "python/gemm_table.hpp"
#include "python/op_table.hpp"
#include "python/table_op.hpp"
#include "python/torch_ops.hpp"

namespace deep_gemm::python {

using api::GemmCall;
using api::GemmOp;

namespace {

// ---- the dispatcher route -------------------------------------------------------------------------

const c10::OperatorHandle& op_handle(GemmOp op) {
    static std::array<std::optional<c10::OperatorHandle>, static_cast<int>(GemmOp::kCount)> handles;
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    auto& h = handles[static_cast<int>(op)];
    if (not h) h = c10::Dispatcher::singleton().findSchemaOrThrow(fmt::format("deep_gemm::{}", api::gemm_op_spec(op).name).c_str(), "");
    return *h;
}

c10::IValue int_list(c10::ArrayRef<int64_t> v) { return c10::IValue(std::vector<int64_t>(v.begin(), v.end())); }

// Calls the torch.ops form of `op` with the arguments of `call`, in the schema's order (gemm_table.hpp).
void call_op(GemmOp op, const GemmCall& call) {
    const OpRow& row = gemm_op_row(op);
    torch::jit::Stack stack;
    stack.reserve(schema_arg_count(row));
    const auto optional = [](const auto& v) { return v ? c10::IValue(*v) : c10::IValue(); };
    for (const OpArg& arg : row.args) {
        switch (arg.slot) {
            case Slot::kA:
                stack.emplace_back(*call.a);
                if (arg.kind == ArgKind::kOperand) stack.emplace_back(*call.sfa);
                break;
            case Slot::kB:
                stack.emplace_back(*call.b);
                if (arg.kind == ArgKind::kOperand) stack.emplace_back(*call.sfb);
                break;
            case Slot::kD: stack.emplace_back(*call.d); break;
            case Slot::kC: stack.push_back(optional(call.c)); break;
            case Slot::kLayout: stack.emplace_back(*call.layout); break;
            case Slot::kExpectedM: stack.emplace_back(call.expected_m); break;
            case Slot::kKs: stack.push_back(int_list(call.ks)); break;
            case Slot::kHeadSplits: stack.push_back(int_list(call.head_splits)); break;
            case Slot::kRecipe:
                if (call.recipe) stack.push_back(int_list(*call.recipe));
                // A schema int-list recipe (K-grouped) has a default value: the op's default recipe.
                else if (arg.kind == ArgKind::kIntList) stack.push_back(int_list(api::default_fp8_recipe(api::gemm_op_spec(op))));
                else stack.emplace_back();
                break;
            case Slot::kRecipeA:
            case Slot::kRecipeB: break;  // merged into the recipe
            case Slot::kCompiledDims: stack.emplace_back(std::string(call.compiled_dims)); break;
            case Slot::kDisableUe8m0Cast: stack.emplace_back(call.disable_ue8m0_cast); break;
            case Slot::kUsePsumLayout: stack.emplace_back(call.use_psum_layout); break;
            case Slot::kUsePaddedSfLayout: stack.emplace_back(call.use_padded_sf_layout); break;
            case Slot::kEnsureZeroPadding: stack.emplace_back(call.ensure_zero_padding); break;
            case Slot::kExpectedMForPsumLayout: stack.push_back(optional(call.expected_m_for_psum_layout)); break;
            case Slot::kMaxBlockN: stack.emplace_back(call.max_block_n); break;
            case Slot::kEnableOverlap: stack.emplace_back(call.enable_overlap); break;
            case Slot::kSignal: stack.push_back(optional(call.signal)); break;
        }
    }
    op_handle(op).callBoxed(stack);
}

// ---- the GEMM entries -----------------------------------------------------------------------------
// Plain CPython METH_FASTCALL functions rather than pybind11 ones: no argument tuple, no at::Tensor
// copies (each copy of a Python-owned tensor costs a refcount round trip under the GIL), which keeps
// the eager per-call overhead to a few hundred nanoseconds.

// An operand: a (tensor, scales) pair for FP8 ops, a tensor for BF16 ones.
void bind_operand(const char* op, const OpArg& arg, PyObject* o, const at::Tensor*& t, const at::Tensor*& sf) {
    if (arg.kind == ArgKind::kOperand)
        std::tie(t, sf) = pair_arg(op, arg.name, o);
    else
        t = &tensor_arg(op, arg.name, o);
}

// The index of the parameter with `slot` in `row` (row.args.size() when the op has none).
constexpr size_t slot_index(const OpRow& row, Slot slot) {
    for (size_t i = 0; i < row.args.size(); ++i)
        if (row.args[i].slot == slot) return i;
    return row.args.size();
}

// Converts parameter I of the op's row into `call`. A template with `if constexpr` on the parameter's
// slot, so each entry compiles to the straight-line code a hand-written one would be. `ks` owns the
// K-grouped ops' ks_cpu, which call.ks refers to.
template <GemmOp kOp, size_t I>
void bind_arg(const char* op, const FastArgs& args, GemmCall& call, std::vector<int64_t>& ks) {
    constexpr const OpRow& row = gemm_op_row(kOp);
    constexpr const OpArg& arg = row.args[I];
    constexpr Slot slot = arg.slot;
    PyObject* o = args[I];
    if constexpr (slot == Slot::kA) {
        bind_operand(op, arg, o, call.a, call.sfa);
    } else if constexpr (slot == Slot::kB) {
        bind_operand(op, arg, o, call.b, call.sfb);
    } else if constexpr (slot == Slot::kD) {
        call.d = &tensor_arg(op, arg.name, o);
    } else if constexpr (slot == Slot::kC) {
        call.c = opt_tensor_arg(op, arg.name, o);
    } else if constexpr (slot == Slot::kLayout) {
        call.layout = &tensor_arg(op, arg.name, o);
    } else if constexpr (slot == Slot::kExpectedM) {
        call.expected_m = int_arg(op, arg.name, o);
    } else if constexpr (slot == Slot::kKs) {
        ks = int_list_arg(op, arg.name, o);
        call.ks = ks;
    } else if constexpr (slot == Slot::kHeadSplits) {  // no op has both: `ks` owns these
        ks = int_list_arg(op, arg.name, o);
        call.head_splits = ks;
    } else if constexpr (slot == Slot::kRecipe or slot == Slot::kRecipeA or slot == Slot::kRecipeB) {
        // recipe, recipe_a and recipe_b are resolved together, at the last of them that the op has
        constexpr size_t kRecipeB = slot_index(row, Slot::kRecipeB);
        if constexpr (slot == Slot::kRecipe and kRecipeB == row.args.size())
            call.recipe = resolve_recipe_objects(op, o, nullptr, nullptr);
        else if constexpr (slot == Slot::kRecipeB)
            call.recipe = resolve_recipe_objects(op, args[slot_index(row, Slot::kRecipe)], args[slot_index(row, Slot::kRecipeA)], o);
    } else if constexpr (slot == Slot::kCompiledDims) {
        call.compiled_dims = str_arg(op, arg.name, o, arg.default_value);
    } else if constexpr (slot == Slot::kDisableUe8m0Cast) {
        call.disable_ue8m0_cast = bool_arg(op, arg.name, o, bool_default(arg));
    } else if constexpr (slot == Slot::kUsePsumLayout) {
        call.use_psum_layout = bool_arg(op, arg.name, o, bool_default(arg));
    } else if constexpr (slot == Slot::kUsePaddedSfLayout) {
        call.use_padded_sf_layout = bool_arg(op, arg.name, o, bool_default(arg));
    } else if constexpr (slot == Slot::kEnsureZeroPadding) {
        call.ensure_zero_padding = bool_arg(op, arg.name, o, bool_default(arg));
    } else if constexpr (slot == Slot::kMaxBlockN) {
        if (o != nullptr) call.max_block_n = int_arg(op, arg.name, o);  // absent: GemmCall's default, the row's
    } else if constexpr (slot == Slot::kEnableOverlap) {
        call.enable_overlap = bool_arg(op, arg.name, o, bool_default(arg));
    } else if constexpr (slot == Slot::kSignal) {
        call.signal = opt_tensor_arg(op, arg.name, o);
    } else {
        static_assert(slot == Slot::kExpectedMForPsumLayout);
        call.expected_m_for_psum_layout = opt_int_arg(op, arg.name, o);
    }
}

// Converts the arguments into `call` in the row's order, so the first bad one is the one reported.
template <GemmOp kOp, size_t... I>
void bind(const char* op, const FastArgs& args, GemmCall& call, std::vector<int64_t>& ks, std::index_sequence<I...>) {
    (bind_arg<kOp, I>(op, args, call, ks), ...);
}

enum class Entry { kRun, kValidateOnly };

// Returns None, or for an op with enable_overlap (gemm_table.hpp's has_overlap) called with it the tuple
// (BLOCK_M, threshold) that a consumer of the signal needs.
template <GemmOp kOp, Entry kEntry>
PyObject* gemm_entry(PyObject*, PyObject* const* argv, Py_ssize_t nargs, PyObject* kwnames) noexcept {
    return guarded_value([&]() -> PyObject* {
        constexpr const OpRow& row = gemm_op_row(kOp);
        static_assert(row.args.size() <= FastArgs::kMax);
        const char* op = api::gemm_op_spec(kOp).name;
        const FastArgs args(op, row, argv, nargs, kwnames);
        GemmCall call;
        std::vector<int64_t> ks;
        bind<kOp>(op, args, call, ks, std::make_index_sequence<row.args.size()>());
        GemmCall::OverlapTile tile;
        if constexpr (has_overlap(row)) call.overlap_out = &tile;
        if constexpr (kEntry == Entry::kValidateOnly) {
            api::check_gemm_real_for_benchmark(kOp, call);
        } else if (plain_tensors({call.a, call.sfa, call.b, call.sfb, call.d, call.c, call.layout, call.signal})) {
            py::gil_scoped_release no_gil;
            api::run_gemm(kOp, call);
        } else {
            call_op(kOp, call);  // (the torch.library form takes no enable_overlap=True: it raises)
        }
        if constexpr (has_overlap(row)) {
            if (call.enable_overlap) return Py_BuildValue("(LL)", static_cast<long long>(tile.block_m), static_cast<long long>(tile.threshold));
        }
        Py_RETURN_NONE;
    });
}

using EntryFn = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) noexcept;

template <size_t... I>
constexpr std::array<EntryFn, sizeof...(I)> run_entries(std::index_sequence<I...>) {
    return {&gemm_entry<static_cast<GemmOp>(I), Entry::kRun>...};
}

const char* kind_name(ArgKind kind) {
    switch (kind) {
        case ArgKind::kOperand: return "operand";
        case ArgKind::kTensor: return "tensor";
        case ArgKind::kOutTensor: return "out_tensor";
        case ArgKind::kOptTensor: return "opt_tensor";
        case ArgKind::kOptOutTensor: return "opt_out_tensor";
        case ArgKind::kInt: return "int";
        case ArgKind::kOptInt: return "opt_int";
        case ArgKind::kBool: return "bool";
        case ArgKind::kStr: return "str";
        case ArgKind::kIntList: return "int_list";
        case ArgKind::kRecipe: return "recipe";
        case ArgKind::kHalfRecipe: return "half_recipe";
    }
    return "";
}

// _C._gemm_op_table(): [(name, [(parameter, kind, default as a Python literal or None when required)])].
py::list op_table_for_python() {
    py::list rows;
    for (const OpRow& row : table::kRows) {
        py::list params;
        for (const OpArg& arg : row.args)
            params.append(py::make_tuple(arg.name, kind_name(arg.kind), arg.default_value ? py::object(py::str(python_default(arg))) : py::none()));
        rows.append(py::make_tuple(api::gemm_op_spec(row.op).name, params));
    }
    return rows;
}

// _C._op_table(): [(name, schema or None, backend, [public names], wrapper module)]: the GEMM rows
// (gemm_table.hpp, whose wrappers deep_gemm/_wrappers.py holds), then the others (op_table.hpp).
py::list full_op_table_for_python() {
    py::list rows;
    for (const OpRow& row : table::kRows) {
        const char* name = api::gemm_op_spec(row.op).name;
        rows.append(py::make_tuple(name, torch_schema(row), backend_name(Backend::kJit), py::make_tuple(name), "_wrappers"));
    }
    for (const OpTableRow& row : table::kOtherOps) {
        py::list names;
        for (const auto& word : py::str(row.public_names).attr("split")()) names.append(word);
        rows.append(py::make_tuple(row.name, row.has_schema ? py::object(py::str(schema_text(row))) : py::none(),
                                   backend_name(row.backend), py::tuple(names), row.wrapper));
    }
    return rows;
}

// _C._op_entries(): [(entry, op name)]: the _C fast entries generated from rows of op_table.hpp (their stubs in
// _C.pyi are generated from the op's schema by scripts/gen_stubs.py).
py::list op_entries_for_python() {
    py::list entries;
    for (const OpTableRow& row : table::kOtherOps)
        if (*row.entry != 0) entries.append(py::make_tuple(row.entry, row.name));
    return entries;
}

}  // namespace

void register_gemm_entries(py::module_& m) {
    const auto add = [&](const char* name, EntryFn fn, const OpRow& row, std::string_view doc) {
        add_fastcall(m, name, fn, python_signature(row), doc);
    };
    static constexpr auto kEntries = run_entries(std::make_index_sequence<static_cast<size_t>(GemmOp::kCount)>());
    for (const OpRow& row : table::kRows) {
        const char* name = api::gemm_op_spec(row.op).name;
        add(name, kEntries[static_cast<int>(row.op)], row, fmt::format("The fast path of deep_gemm.{} (same arguments).", name));
    }
    add("_validate_fp8_gemm_nt", &gemm_entry<GemmOp::kFp8Nt, Entry::kValidateOnly>, gemm_op_row(GemmOp::kFp8Nt),
        "fp8_gemm_nt's fast path without the device work (host-overhead microbenchmark).");
    m.def("_gemm_op_table", &op_table_for_python,
          "The GEMM op table (csrc/python/gemm_table.hpp): [(name, [(parameter, kind, default or None)])].");
    m.def("_op_table", &full_op_table_for_python,
          "Every op (csrc/python/gemm_table.hpp, then op_table.hpp): [(name, schema or None, backend, public names, module)].");
    m.def("_op_entries", &op_entries_for_python,
          "The _C fast entries generated from rows of csrc/python/op_table.hpp: [(entry, op name)].");
}

// ---- layout entries --------------------------------------------------------------------------------

at::Tensor mn_major_entry(const at::Tensor& sf) {
    if (plain_tensors({&sf})) {
        py::gil_scoped_release no_gil;
        return api::get_mn_major_tma_aligned_tensor(sf);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::get_mn_major_tma_aligned_tensor", "")
                               .typed<at::Tensor(const at::Tensor&)>();
    return op.call(sf);
}

at::Tensor transform_sf_entry(const at::Tensor& sf, int64_t mn, int64_t k, const py::object& recipe, std::optional<int64_t> num_groups,
                              bool is_sfa, bool disable_ue8m0_cast) {
    const char* name = "transform_sf_into_required_layout";
    const auto r = parse_recipe_object(name, recipe);
    if (not r) api::throw_type_error(fmt::format("{}: recipe is required (a tuple of 3 ints, e.g. (1, 128, 128))", name));
    if (plain_tensors({&sf})) {
        py::gil_scoped_release no_gil;
        return api::transform_sf_into_required_layout(sf, mn, k, *r, num_groups, is_sfa, disable_ue8m0_cast);
    }
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("deep_gemm::transform_sf_into_required_layout", "")
                               .typed<at::Tensor(const at::Tensor&, c10::SymInt, c10::SymInt, at::IntArrayRef, std::optional<int64_t>,
                                                 bool, bool)>();
    const std::vector<int64_t> rv(r->begin(), r->end());
    return op.call(sf, c10::SymInt(mn), c10::SymInt(k), rv, num_groups, is_sfa, disable_ue8m0_cast);
}

}  // namespace deep_gemm::python
