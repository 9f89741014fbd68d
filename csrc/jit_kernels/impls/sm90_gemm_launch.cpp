// The SM90 GEMM launch path's entries (sm90_gemm_desc.hpp): dispatch of a described call, a key or a plan
// to the kernel's Traits, and the pieces every kernel shares.
#include "sm90_gemm_launch.hpp"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "../../jit/errors.hpp"
#include "sm90_bf16_gemm.hpp"
#include "sm90_fp8_gemm_1d1d.hpp"
#include "sm90_fp8_gemm_1d2d.hpp"

namespace deep_gemm::kernels {

namespace gemm_launch {

jit::KernelTable<GemmKernelKey, BytewiseHash<GemmKernelKey>>& kernel_table() {
    static jit::KernelTable<GemmKernelKey, BytewiseHash<GemmKernelKey>> table;
    return table;
}

bool check_common(const char* op, const GemmProblem& p) {
    auto fail = [op](const char* what) { throw jit::Error(std::string(op) + ": " + what); };
    if (p.m < 0 || p.n < 0 || p.k < 0) fail("negative problem size");
    if (p.mode != GemmGroupedMode::kNone && p.num_groups <= 0) fail("num_groups must be positive");
    if (p.m == 0 || p.n == 0) return false;
    if (p.k == 0) fail("K == 0 must be handled by the caller (D = C or zeros)");
    return true;
}

void check_block_multiples(const char* op, const GemmProblem& p, int block_m, int block_n) {
    if (block_m % p.block_m_multiple == 0 && block_n % p.block_n_multiple == 0) return;
    throw jit::Error(std::string(op) + ": no kernel config has BLOCK_M a multiple of " +
                     std::to_string(p.block_m_multiple) + " and BLOCK_N a multiple of " +
                     std::to_string(p.block_n_multiple) + " (set_block_size_multiple_of); got BLOCK_M = " +
                     std::to_string(block_m) + ", BLOCK_N = " + std::to_string(block_n));
}

std::string tuning_signature(const ConfigQuery& q) {
    int64_t m = q.m;
    if (q.mode != int(GemmGroupedMode::kNone)) {
        int64_t bucket = 1;
        while (bucket < m) bucket *= 2;
        m = bucket;
    }
    return fmt::format("mode{}.m{}.n{}.k{}.sms{}.smem{}.groups{}.rows{}.epi{}.out{}.bmn{}.zp{}.mult{}x{}{}", q.mode, m, q.n,
                       q.k, q.num_sms, q.smem_limit, q.groups, q.rows_per_group, q.epilogue, q.out_bytes, q.b_mn_major,
                       q.zero_padding, q.block_m_multiple, q.block_n_multiple,
                       q.sf_gran_k != 0 ? fmt::format(".sfk{}", q.sf_gran_k) : std::string());
}

namespace {

// The SMs a planned problem may use on `limits`.
int planned_sms(const GemmProblem& problem, const DeviceLimits& limits) {
    return problem.num_sms > 0 ? std::min(problem.num_sms, limits.num_sms) : limits.num_sms;
}

template <typename Traits>
Planned<Traits> plan_planned(const GemmProblem& problem, const DeviceLimits& limits, const knobs::Forced* forced = nullptr) {
    const char* op = Traits::op_name(problem);
    if (limits.cc_major != 9)
        throw jit::Error(std::string(op) + ": the SM90 kernel needs a Hopper GPU (compute capability 9.x)");
    if (!check_common(op, problem)) throw jit::Error(std::string(op) + ": M or N is 0: no kernel to compile");
    const CompiledDims dims = parse_compiled_dims(op, problem.compiled_dims);
    const int num_sms = planned_sms(problem, limits);
    return plan_kernel<Traits>(op, problem, dims, num_sms, limits.smem_optin,
                               limits.use_tuning ? jit::gpu_model(limits.num_sms, limits.clock_mhz) : std::string(), forced);
}

template <typename Traits>
GemmKernelSource plan_with(const GemmProblem& problem, const DeviceLimits& limits) {
    return Traits::source(plan_planned<Traits>(problem, limits).key);
}

template <typename Traits>
GemmConfigCandidates candidates_with(const GemmProblem& problem, DeviceLimits limits, int max_changed) {
    const knobs::KnobTable& table = Traits::knob_table();
    limits.use_tuning = false;  // around the heuristic's pick
    const Planned<Traits> pick = plan_planned<Traits>(problem, limits);
    ConfigQuery query = Traits::config_query(problem, planned_sms(problem, limits), limits.smem_optin);
    query.block_m_multiple = problem.block_m_multiple, query.block_n_multiple = problem.block_n_multiple;
    GemmConfigCandidates out{table.variable, tuning_signature(query), Traits::source(pick.key), {}};
    std::set<std::string> symbols{out.heuristic.symbol};
    heuristics::Sm90GemmConfig around = pick.config;
    around.num_stages = 0;  // each candidate takes as many stages as fit its tile
    for (const heuristics::Sm90GemmConfig& config : knobs::candidates(table, around, max_changed)) {
        const std::string text = knobs::format_config(table, config);
        try {
            const knobs::Forced forced = knobs::parse_forced(table, text);
            GemmKernelSource kernel = Traits::source(plan_planned<Traits>(problem, limits, &forced).key);
            if (symbols.insert(kernel.symbol).second) out.candidates.push_back({text, std::move(kernel)});
        } catch (const jit::Error&) {
            // not legal for this problem (the kernel's finalize, or its shared memory)
        }
    }
    return out;
}

}  // namespace

}  // namespace gemm_launch

GemmTile run_gemm(const GemmDesc& desc) {
    switch (desc.problem.kernel) {
        case GemmKernel::kFp8_1d2d: return gemm_launch::run_gemm<Fp8Gemm1d2dTraits>(desc);
        case GemmKernel::kFp8_1d1d: return gemm_launch::run_gemm<Fp8Gemm1d1dTraits>(desc);
        case GemmKernel::kBf16: return gemm_launch::run_gemm<Bf16GemmTraits>(desc);
    }
    throw jit::Error("run_gemm: unknown SM90 GEMM kernel");
}

namespace {

void check_k_grouped_fp8(const char* entry, const GemmProblem& p, size_t num_ks) {
    if (p.kernel != GemmKernel::kFp8_1d1d || p.mode != GemmGroupedMode::kKGroupedContiguous)
        throw jit::Error(std::string(entry) + ": not a K-grouped FP8 (1D1D) problem");
    if (num_ks != size_t(std::max(p.num_groups, 0)))
        throw jit::Error(std::string(entry) + ": " + std::to_string(num_ks) + " values of K for " +
                         std::to_string(p.num_groups) + " groups");
}

// The kernel's scale layout of a K-grouped problem (GemmProblem::sf_k_align, sf_k_blocks) from its groups' K and
// sf_group_align. An alignment that divides 128 pads nothing a group's own ceil(K_g / 128) does not: it is 128.
template <typename Int>
void set_k_grouped_scale_layout(const char* entry, GemmProblem& p, std::span<const Int> ks) {
    if (p.sf_group_align <= 0)
        throw jit::Error(std::string(entry) + ": sf_group_align must be positive; got " + std::to_string(p.sf_group_align));
    const unsigned align = 128 % p.sf_group_align == 0 ? 128u : unsigned(p.sf_group_align);
    bool at_k_prefix = true;  // every group's scales start at its K prefix / 128
    uint64_t blocks = 0;
    for (const Int kg : ks) {
        const uint64_t k = kg > 0 ? uint64_t(kg) : 0;
        const uint64_t own = k_grouped_scale_blocks(k, align);
        at_k_prefix = at_k_prefix && k % 128 == 0 && own == k / 128;
        blocks += own;
    }
    p.sf_k_align = at_k_prefix ? 0 : int(align);
    p.sf_k_blocks = at_k_prefix ? 0 : int(std::min<uint64_t>(blocks, INT32_MAX));
}

}  // namespace

void run_k_grouped_fp8_gemm(const GemmDesc& desc, std::span<const int64_t> ks) {
    check_k_grouped_fp8("run_k_grouped_fp8_gemm", desc.problem, ks.size());
    GemmDesc grouped = desc;
    grouped.operands.host_ks = ks.data();
    set_k_grouped_scale_layout("run_k_grouped_fp8_gemm", grouped.problem, ks);
    run_gemm(grouped);
}

GemmKernelKey gemm_kernel_key(GemmKernel kernel, const heuristics::Sm90GemmConfig& config) {
    GemmKernelKey key;
    key.kernel = kernel;
    key.block_m = config.block_m, key.block_n = config.block_n;
    key.num_stages = config.num_stages, key.group_n = config.group_n;
    key.pipelined = uint8_t(config.pipelined);
    key.multicast = uint8_t(config.multicast);
    key.split_k = uint8_t(config.split_k > 1 ? config.split_k : 0);
    if (kernel == GemmKernel::kFp8_1d1d) key.epilogue = uint8_t(heuristics::Sm90GemmEpilogue::kAccumDirect);
    if (kernel == GemmKernel::kBf16) key.multicast = 0;  // the config holds a request, which the BF16 key resolves
    return key;
}

GemmKernelSource gemm_kernel_source(const GemmKernelKey& key) {
    switch (key.kernel) {
        case GemmKernel::kFp8_1d2d: return Fp8Gemm1d2dTraits::source(key);
        case GemmKernel::kFp8_1d1d: return Fp8Gemm1d1dTraits::source(key);
        case GemmKernel::kBf16: return Bf16GemmTraits::source(key);
    }
    throw jit::Error("gemm_kernel_source: unknown SM90 GEMM kernel");
}

GemmKernelSource plan_gemm(const GemmProblem& problem, const DeviceLimits& limits) {
    switch (problem.kernel) {
        case GemmKernel::kFp8_1d2d: return gemm_launch::plan_with<Fp8Gemm1d2dTraits>(problem, limits);
        case GemmKernel::kFp8_1d1d: return gemm_launch::plan_with<Fp8Gemm1d1dTraits>(problem, limits);
        case GemmKernel::kBf16: return gemm_launch::plan_with<Bf16GemmTraits>(problem, limits);
    }
    throw jit::Error("plan_gemm: unknown SM90 GEMM kernel");
}

GemmConfigCandidates gemm_config_candidates(const GemmProblem& problem, const DeviceLimits& limits, int max_changed) {
    switch (problem.kernel) {
        case GemmKernel::kFp8_1d2d: return gemm_launch::candidates_with<Fp8Gemm1d2dTraits>(problem, limits, max_changed);
        case GemmKernel::kFp8_1d1d: return gemm_launch::candidates_with<Fp8Gemm1d1dTraits>(problem, limits, max_changed);
        case GemmKernel::kBf16: return gemm_launch::candidates_with<Bf16GemmTraits>(problem, limits, max_changed);
    }
    throw jit::Error("gemm_config_candidates: unknown SM90 GEMM kernel");
}

std::vector<GemmKernelSource> plan_k_grouped_fp8_gemm(const GemmProblem& problem, std::span<const int> ks,
                                                      const DeviceLimits& limits) {
    check_k_grouped_fp8("plan_k_grouped_fp8_gemm", problem, ks.size());
    int64_t sum = 0;
    for (int kg : ks) sum += kg;
    if (sum == 0) return {};  // nothing launches
    GemmProblem p = problem;
    p.k = int(std::min<int64_t>(sum, INT32_MAX));  // the groups' K, whatever the caller's k
    set_k_grouped_scale_layout("plan_k_grouped_fp8_gemm", p, ks);
    return {plan_gemm(p, limits)};
}

std::string wgmma_selection(int fp8_n, int bf16_n) {
    return fmt::format("#define DG_WGMMA_FP8_N {}\n#define DG_WGMMA_BF16_N {}\n", fp8_n, bf16_n);
}

void set_grouped_layout(const char* op, const GemmProblem& p, GemmKernelKey& key) {
    key.mode = uint8_t(p.mode);
    if (p.mode != GemmGroupedMode::kMGroupedContiguous && p.mode != GemmGroupedMode::kMGroupedContiguousPsum) return;
    // The scheduler looks groups up per segment: the whole M block, or each 128-row half of a 256-row block.
    const int segment = std::min(int(key.block_m), 128);
    if (key.block_m % segment != 0 || p.alignment % segment != 0)
        throw jit::Error(std::string(op) + ": the group alignment (" + std::to_string(p.alignment) +
                         " rows) must be a multiple of BLOCK_M, or of 128 for BLOCK_M 256 (BLOCK_M " +
                         std::to_string(key.block_m) + ")");
    // PaddingRows: kZero, or kUnspecified (DeepGEMM's SM90 rows), which looks groups up per alignment block.
    key.padding = p.ensure_zero_padding ? 1 : 0;
    if (p.mode == GemmGroupedMode::kMGroupedContiguousPsum || !p.ensure_zero_padding) key.group_align = p.alignment;
}

std::string scheduler_type(const GemmKernelKey& key, const char* dense) {
    const std::string tile = fmt::format("{}u, {}u, {}u", key.block_m, key.block_n, key.group_n);
    static const char* const kPadding[] = {"kUnspecified", "kZero"};
    switch (GemmGroupedMode(key.mode)) {
        case GemmGroupedMode::kMGroupedContiguous:
        case GemmGroupedMode::kMGroupedContiguousPsum:
            // The kernel's dense tile order walks the blocks (e.g. FP8's pairs of N blocks for multicast on A).
            return fmt::format("deep_gemm::ContiguousLayoutScheduler<{}, {}, deep_gemm::PaddingRows::{}, {}u, deep_gemm::{}<{}>>",
                               tile, key.mode == uint8_t(GemmGroupedMode::kMGroupedContiguousPsum) ? "true" : "false",
                               kPadding[key.padding], key.group_align != 0 ? key.group_align : 128, dense, tile);
        case GemmGroupedMode::kMGroupedMasked:
            // (FP8 multicast 1: 2-CTA clusters on pairs of one group's M blocks.)
            return fmt::format("deep_gemm::MaskedGroupedScheduler<{}{}>", tile, key.multicast == 1 ? ", 2u" : "");
        case GemmGroupedMode::kKGroupedContiguous: return fmt::format("deep_gemm::KGroupedScheduler<{}>", tile);
        case GemmGroupedMode::kBatchReduced:
            return fmt::format("deep_gemm::BatchReducedScheduler<{}, {}u>", tile, std::max<int>(1, key.batch_splits));
        case GemmGroupedMode::kHeadBatched: return fmt::format("deep_gemm::HeadBatchedScheduler<{}>", tile);
        default: return fmt::format("deep_gemm::{}<{}>", dense, tile);
    }
}

std::string grouped_symbol_suffix(const GemmKernelKey& key) {
    static const char* const kModes[] = {"", "_contig", "_masked", "_kgrouped", "_psum", "_bred", "_heads"};
    return kModes[key.mode];
}

std::string padding_symbol_suffix(const GemmKernelKey& key) {
    static const char* const kPadding[] = {"", "_zpad"};
    return key.group_align != 0 ? fmt::format("{}_al{}", kPadding[key.padding], key.group_align) : kPadding[key.padding];
}

std::string gemm_symbol(const std::string& prefix, const GemmKernelKey& key) {
    return fmt::format("{}_bm{}_bn{}_s{}_g{}_m{}_n{}_k{}", prefix, key.block_m, key.block_n, key.num_stages, key.group_n,
                       key.m, key.n, key.k);
}

}  // namespace deep_gemm::kernels
