// _plan_gemm_call: a thin binding of api::plan_gemm_call. The arguments say what the op would see (sizes,
// groups, recipe, output and C dtypes); the knobs an op call reads from the process (mk alignment, block size
// multiples, ignore_compile_dims) default to this process's values, the device limits to an H100/H200 SXM's.
#include "python/plan_tools.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "apis/common.hpp"
#include "apis/gemm_plan.hpp"
#include "apis/layout.hpp"
#include "apis/runtime.hpp"
#include "jit/tuning_table.hpp"

namespace deep_gemm::python {

namespace py = pybind11;

namespace {

using PlannedKernel = std::tuple<std::string, std::string, std::string>;  // name, symbol, code

std::string op_names() {
    std::string out;
    for (const api::GemmOpSpec& s : api::kSpecs) out += (out.empty() ? "" : ", ") + std::string(s.name);
    return out;
}

// The recipe of the call (no recipe: the op's default, nullopt); ValueError for one the op does not take
// (NotImplementedError for block-32 scales on an op without them), as the op would raise.
std::optional<api::Recipe> checked_recipe(const api::GemmOpSpec& spec, const std::optional<std::vector<int64_t>>& recipe) {
    const std::optional<api::Recipe> parsed =
        recipe ? std::optional<api::Recipe>(api::parse_recipe(spec.name, *recipe)) : std::nullopt;
    if (spec.family == api::Family::kBf16) {
        if (parsed)
            api::throw_value_error(fmt::format("{}: a BF16 GEMM takes no recipe; got ({}, {}, {})", spec.name,
                                               (*parsed)[0], (*parsed)[1], (*parsed)[2]));
        return std::nullopt;
    }
    const api::Recipe r = parsed ? *parsed : api::default_fp8_recipe(spec);
    if (r == api::kRecipeBlock32 && !api::block32_supported(spec))
        api::throw_not_implemented(fmt::format("{}: {}", spec.name, api::block32_unsupported(spec)));
    if (!api::recipe_kernel(spec, r))
        api::throw_value_error(fmt::format("{}: recipe must be {}; got ({}, {}, {})", spec.name,
                                           api::fp8_recipes_allowed(spec), r[0], r[1], r[2]));
    return parsed;
}

// The checked call of the arguments both entries below take, and the device limits it is planned for.
std::pair<api::GemmCallShape, kernels::DeviceLimits> checked_call(
    const std::string& op, int m, int n, int k, int num_groups, int expected_m, const std::vector<int>& ks,
    const std::optional<std::vector<int64_t>>& recipe, bool d_fp32, bool with_c, bool c_fp32, bool use_psum_layout,
    bool ensure_zero_padding, bool use_padded_sf_layout, std::optional<int> mk_alignment,
    std::optional<std::pair<int, int>> block_size_multiple_of, std::optional<std::string> compiled_dims, int num_sms,
    int smem_optin, int cc_major, const std::vector<int>& head_splits, int clock_mhz,
    int max_block_n, bool enable_overlap) {
    const api::GemmOpSpec* spec = api::find_op_spec(op);
    if (spec == nullptr) api::throw_value_error(fmt::format("unknown GEMM op \"{}\"; known: {}", op, op_names()));
    // A call with an empty dim launches no GEMM kernel, so there is nothing to plan.
    if (m <= 0 || n <= 0 || k <= 0)
        api::throw_value_error(fmt::format("{}: m, n and k must be positive; got m = {}, n = {}, k = {}", op, m, n, k));
    if (num_groups <= 0) api::throw_value_error(fmt::format("{}: num_groups must be positive; got {}", op, num_groups));
    if (expected_m < 0) api::throw_value_error(fmt::format("{}: expected_m must be >= 0; got {}", op, expected_m));
    if (num_sms <= 0 || smem_optin <= 0)
        api::throw_value_error(fmt::format("{}: num_sms and smem_optin must be positive; got {} and {}", op, num_sms, smem_optin));
    if (!ks.empty()) {
        if (spec->grouping != api::Grouping::kKContiguous)
            api::throw_value_error(fmt::format("{}: ks is for the K-grouped ops; got {} values", op, ks.size()));
        const long long sum = std::accumulate(ks.begin(), ks.end(), 0LL);
        if (int(ks.size()) != num_groups || sum != k)
            api::throw_value_error(fmt::format("{}: ks must have num_groups = {} values summing to k = {}; got {} summing to {}",
                                               op, num_groups, k, ks.size(), sum));
    }

    api::GemmCallShape call;
    call.op = op;
    call.m = m, call.n = n, call.k = k;
    call.num_groups = num_groups;
    call.expected_m = expected_m;
    call.ks = ks;
    call.head_splits = head_splits;
    call.max_block_n = max_block_n;
    call.enable_overlap = enable_overlap;
    call.recipe = checked_recipe(*spec, recipe);
    call.d_fp32 = d_fp32;
    call.with_c = with_c;
    call.c_fp32 = c_fp32;
    call.use_psum_layout = use_psum_layout;
    call.ensure_zero_padding = ensure_zero_padding;
    call.use_padded_sf_layout = use_padded_sf_layout;
    call.mk_alignment = mk_alignment.value_or(api::get_mk_alignment_for_contiguous_layout());
    std::tie(call.block_m_multiple, call.block_n_multiple) =
        block_size_multiple_of.value_or(api::get_block_size_multiple_of());
    if (compiled_dims) call.compiled_dims = *compiled_dims;
    else if (api::get_ignore_compile_dims()) call.compiled_dims = "";

    if (clock_mhz <= 0) api::throw_value_error(fmt::format("{}: clock_mhz must be positive; got {}", op, clock_mhz));
    return {call, kernels::DeviceLimits{num_sms, smem_optin, cc_major, clock_mhz}};
}

#define DG_CALL_PARAMS                                                                                                \
    const std::string &op, int m, int n, int k, int num_groups, int expected_m, const std::vector<int>&ks,          \
        const std::optional<std::vector<int64_t>>&recipe, bool d_fp32, bool with_c, bool c_fp32, bool use_psum_layout, \
        bool ensure_zero_padding, bool use_padded_sf_layout, std::optional<int> mk_alignment,                        \
        std::optional<std::pair<int, int>> block_size_multiple_of, std::optional<std::string> compiled_dims,         \
        int num_sms, int smem_optin, int cc_major, const std::vector<int>&head_splits, int clock_mhz, int max_block_n,    \
        bool enable_overlap
#define DG_CALL_ARGS                                                                                                  \
    op, m, n, k, num_groups, expected_m, ks, recipe, d_fp32, with_c, c_fp32, use_psum_layout, ensure_zero_padding,  \
        use_padded_sf_layout, mk_alignment, block_size_multiple_of, compiled_dims, num_sms, smem_optin, cc_major, head_splits, clock_mhz, \
        max_block_n, enable_overlap

std::vector<PlannedKernel> plan_gemm_call_entry(DG_CALL_PARAMS) {
    const auto [call, limits] = checked_call(DG_CALL_ARGS);
    std::vector<kernels::GemmKernelSource> sources;
    {
        py::gil_scoped_release no_gil;  // the config choice may run the cost model
        sources = api::plan_gemm_call(call, limits);
    }
    std::vector<PlannedKernel> out;
    for (auto& s : sources) out.emplace_back(std::move(s.name), std::move(s.symbol), std::move(s.code));
    return out;
}

// {variable, signature, heuristic: (name, symbol, code), candidates: [(config, name, symbol, code)]}.
py::dict gemm_call_candidates_entry(DG_CALL_PARAMS) {
    const auto [call, limits] = checked_call(DG_CALL_ARGS);
    kernels::GemmConfigCandidates found;
    {
        py::gil_scoped_release no_gil;
        found = api::gemm_call_candidates(call, limits);
    }
    py::list candidates;
    for (const auto& c : found.candidates)
        candidates.append(py::make_tuple(c.config, c.kernel.name, c.kernel.symbol, c.kernel.code));
    py::dict out;
    out["variable"] = found.variable;
    out["signature"] = found.signature;
    out["heuristic"] = py::make_tuple(found.heuristic.name, found.heuristic.symbol, found.heuristic.code);
    out["candidates"] = candidates;
    return out;
}

// Registers `f` under `name` with the keyword arguments of a call (_plan_gemm_call's).
template <typename F>
void def_with_call_args(py::module_& m, const char* name, F f, const char* doc) {
    m.def(name, f, py::arg("op"), py::arg("m"), py::arg("n"), py::arg("k"),
          py::arg("num_groups") = 1, py::arg("expected_m") = 0, py::arg("ks") = std::vector<int>{},
          py::arg("recipe") = py::none(), py::arg("d_fp32") = false, py::arg("with_c") = false, py::arg("c_fp32") = false,
          py::arg("use_psum_layout") = false, py::arg("ensure_zero_padding") = true,
          py::arg("use_padded_sf_layout") = false, py::arg("mk_alignment") = py::none(),
          py::arg("block_size_multiple_of") = py::none(), py::arg("compiled_dims") = py::none(),
          py::arg("num_sms") = 132, py::arg("smem_optin") = 232448, py::arg("cc_major") = 9,
          py::arg("head_splits") = std::vector<int>{}, py::arg("clock_mhz") = 1980, py::arg("max_block_n") = 256,
          py::arg("enable_overlap") = false, doc);
}

// The tuning table of a cache root as [(gpu, variable, signature, config, heuristic_us, tuned_us)].
std::vector<std::tuple<std::string, std::string, std::string, std::string, double, double>> tuning_table_entry(
    const std::string& root) {
    std::vector<std::tuple<std::string, std::string, std::string, std::string, double, double>> out;
    for (const jit::TuningEntry& e : jit::read_tuning_table(root))
        out.emplace_back(e.gpu, e.variable, e.signature, e.config, e.heuristic_us, e.tuned_us);
    return out;
}

void merge_tuning_entry(const std::string& root,
                        const std::vector<std::tuple<std::string, std::string, std::string, std::string, double, double>>& rows) {
    std::vector<jit::TuningEntry> entries;
    for (const auto& [gpu, variable, signature, config, heuristic_us, tuned_us] : rows)
        entries.push_back({gpu, variable, signature, config, heuristic_us, tuned_us});
    jit::merge_tuning_entries(root, entries);
}

}  // namespace

void register_plan_tools(py::module_& m) {
    def_with_call_args(m, "_plan_gemm_call", &plan_gemm_call_entry,
                       "The kernels a GEMM op call would compile, as [(name, symbol, code)], planned without tensors or a GPU for "
          "a device with num_sms SMs and smem_optin bytes of shared memory per block. m/n/k as the op sees them "
          "(masked: max_m; M-contiguous: the sum of M; K-grouped: the sum of K). Knobs left None take this "
          "process's values (set_mk_alignment_for_contiguous_layout, set_block_size_multiple_of, "
          "set_ignore_compile_dims); compiled_dims None is the op's default. num_sms and clock_mhz name the GPU model whose "
                       "tuned picks (the cache's tuning table) the plan takes.");
    def_with_call_args(m, "_gemm_call_candidates", &gemm_call_candidates_entry,
                       "The tuner's candidate configs of a GEMM op call (arguments as _plan_gemm_call): a dict with the "
                       "kernel's forced-config variable, the call's tuning-table signature, the heuristic's kernel "
                       "(name, symbol, code) and the candidates [(config, name, symbol, code)], each a distinct kernel.");
    m.def("_tuning_table", &tuning_table_entry, py::arg("root"),
          "The tuning table of a cache root: [(gpu, variable, signature, config, heuristic_us, tuned_us)] ([] when "
          "absent). Raises RuntimeError for a table that cannot be trusted or is damaged.");
    m.def("_tuning_table_merge", &merge_tuning_entry, py::arg("root"), py::arg("entries"),
          "Adds entries (as _tuning_table returns them) to the root's tuning table, replacing those of the same GPU, "
          "variable and signature; written atomically under the table's lock.");
    m.def("_gpu_model", [](int device) { return jit::gpu_model(jit::device_info(device)); }, py::arg("device") = 0,
          "The tuning table's model of a GPU (SM count and clocks class), e.g. 'sm132-1900mhz'.");
}

}  // namespace deep_gemm::python
