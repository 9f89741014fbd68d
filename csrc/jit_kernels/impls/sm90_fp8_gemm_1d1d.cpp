// Host side of the SM90 FP8 1D1D GEMM: its part of the GEMM launch path (sm90_gemm_launch.hpp).
#include "sm90_fp8_gemm_1d1d.hpp"

#include <string>

#include "../../jit/errors.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d_params.hpp"

namespace deep_gemm::kernels {

namespace {

[[noreturn]] void fail(const char* op, const std::string& what) { throw jit::Error(std::string(op) + ": " + what); }

std::string make_symbol(const GemmKernelKey& key) {
    return gemm_symbol("sm90_fp8_gemm_1d1d", key) + knobs::symbol_suffix(fp8_1d1d_knobs(), key) +
           grouped_symbol_suffix(key) + (key.with_c ? "_c" : "") +
           (key.sf_k_align != 0 ? "_sfk" + std::to_string(key.sf_k_align) : "");
}

constexpr int kMaxKGroups = int(Sm90Fp8KGroupedMaps::kMaxGroups);

// The entry point's trailing template arguments kPipelined, kMulticast, kPrefetchC (and K-grouped kSfKAlign), up to
// the last one that is not its default (false, 1, false, 0): the sources of kernels without them stay as they were.
std::string optional_template_args(const GemmKernelKey& key) {
    const std::string args[] = {key.pipelined ? "true" : "false", key.multicast ? "2u" : "1u", key.prefetch_c ? "true" : "false",
                                std::to_string(key.sf_k_align) + "u"};
    const int used = key.sf_k_align ? 4 : key.prefetch_c ? 3 : key.multicast ? 2 : key.pipelined ? 1 : 0;
    std::string out;
    for (int i = 0; i < used; ++i) out += ", " + args[i];
    return out;
}

// Rows of B's TMA box: the tile's, or each CTA's half of it with multicast.
uint32_t b_box_rows(const GemmKernelKey& key) {
    return uint32_t(key.multicast ? key.block_n / 2 : key.block_n);
}

}  // namespace

const knobs::KnobTable& Fp8Gemm1d1dTraits::knob_table() { return fp8_1d1d_knobs(); }

void Fp8Gemm1d1dTraits::check(const char* op, const GemmDesc& desc) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    const bool k_grouped = is_k_grouped(p);
    if (p.mode != GemmGroupedMode::kNone && !k_grouped) fail(op, "the 1D1D kernel runs dense and K-grouped problems only");
    if (k % 16 != 0) fail(op, "K must be a multiple of 16 (16-byte aligned FP8 rows); got " + std::to_string(k));
    if (!o.a || !o.b || !o.sfa || !o.sfb || !o.d) fail(op, "null pointer argument");
    if (!aligned(o.a, 16) || !aligned(o.b, 16) || !aligned(o.sfa, 16) || !aligned(o.sfb, 16))
        fail(op, "a, b, sfa and sfb must be 16-byte aligned");
    if (!aligned(o.d, 4) || (o.c && !aligned(o.c, 4))) fail(op, "d and c must be 4-byte aligned");
    if (k_grouped) {
        // Each group's A / B rows are K_g bytes: 16-byte aligned rows. Without sf_k_align the kernel finds a
        // group's scales at its K prefix / 128: whole 128-K blocks, no padding.
        if (!o.host_ks || p.num_groups <= 0) fail(op, "a K-grouped problem needs its groups' K on the host");
        const int64_t k_unit = p.sf_k_align != 0 ? 16 : heuristics::kSm90Fp8BlockK;
        int64_t sum = 0, scale_blocks = 0;
        for (int g = 0; g < p.num_groups; ++g) {
            if (o.host_ks[g] < 0 || o.host_ks[g] % k_unit != 0)
                fail(op, "every group's K must be a non-negative multiple of " + std::to_string(k_unit));
            sum += o.host_ks[g];
            if (p.sf_k_align != 0) scale_blocks += int64_t(k_grouped_scale_blocks(uint64_t(o.host_ks[g]), unsigned(p.sf_k_align)));
        }
        if (sum != k) fail(op, "the groups' K must sum to the problem's K");
        if (p.sf_k_align != 0 && scale_blocks != p.sf_k_blocks) fail(op, "sf_k_blocks must be the groups' scale blocks");
        if (o.ldd != n || (o.c && o.ldc != n) || o.d_group_stride != int64_t(m) * n ||
            (o.c && o.c_group_stride != int64_t(m) * n))
            fail(op, "K-grouped d and c must be contiguous [G, M, N]");
    } else {
        if (o.lda < k || o.lda % 16 != 0) fail(op, "lda must be >= K and a multiple of 16");
        if (o.ldb < k || o.ldb % 16 != 0) fail(op, "ldb must be >= K and a multiple of 16");
    }
    if (o.ldd < n || (o.c && o.ldc < n)) fail(op, "ldd and ldc must be >= N");
    if (o.lda >= (int64_t(1) << 32) || o.ldb >= (int64_t(1) << 32) || o.ldd >= (int64_t(1) << 32) ||
        o.ldc >= (int64_t(1) << 32))
        fail(op, "row strides must be < 2^32 elements");
    if (o.sfa_stride < m || o.sfa_stride % 4 != 0 || o.sfb_stride < n || o.sfb_stride % 4 != 0)
        fail(op, "sfa_stride / sfb_stride must be >= M / N and multiples of 4 (TMA-aligned MN-major scales)");
}

gemm_launch::ConfigQuery Fp8Gemm1d1dTraits::config_query(const GemmProblem& p, int num_sms, int smem_limit) {
    gemm_launch::ConfigQuery q;
    q.m = p.m, q.n = p.n, q.k = p.k, q.num_sms = num_sms, q.smem_limit = smem_limit;
    if (is_k_grouped(p)) {
        // The groups' tiles run in one launch: the model sees them as one problem of G * M rows with the mean K
        // (rounded up to whole K blocks).
        const int64_t groups = std::max(p.num_groups, 1);
        const int64_t mean_k = (int64_t(p.k) + groups - 1) / groups;
        q.m = int(std::min<int64_t>(groups * p.m, INT32_MAX));
        q.k = int(std::max<int64_t>((mean_k + 127) / 128 * 128, 128));
        q.mode = int(p.mode), q.groups = int(groups);
    }
    return q;
}

// The kernel's knobs, in the order of DG_FP8_1D1D_GEMM_CONFIG's fields (adding one: docs/architecture.md).
const knobs::KnobTable& fp8_1d1d_knobs() {
    using heuristics::Sm90GemmConfig;
    static const knobs::KnobTable table{
        .variable = "DG_FP8_1D1D_GEMM_CONFIG",
        .required = 2,
        .knobs =
            {
                knobs::block_m_64_128_knob(),
                knobs::block_n_knob(heuristics::kSm90Fp8_1d1dMaxForcedBlockN),
                knobs::stages_knob(heuristics::kSm90Fp8MinStages, heuristics::kSm90Fp8MaxStages),
                {.name = "group_n", .field = &Sm90GemmConfig::group_n, .legal = {{0, 1024}},
                 .meaning = "tile order: groups of this many N blocks, 0 = the heuristic's", .keep = 0,
                 .tune = {4, 8, 16}, .template_arg = "kNumNBlocksPerGroup"},
                {.name = "pipelined", .field = &Sm90GemmConfig::pipelined, .legal = {{0, 1}},
                 .meaning = "1 = two scratch accumulators, promotion overlapped", .tune = {0, 1},
                 .suffix = [](const GemmKernelKey& k) -> std::string { return k.pipelined ? "_pp" : ""; },
                 .template_arg = "kPipelined"},
                {.name = "multicast", .field = &Sm90GemmConfig::multicast, .legal = {{0, 1}},
                 .meaning = "1 = 2-CTA clusters on pairs of M blocks sharing B", .tune = {0, 1},
                 .suffix = [](const GemmKernelKey& k) -> std::string { return k.multicast ? "_mcb" : ""; },
                 .template_arg = "kMulticast"},
                {.name = "prefetch_c", .field = &Sm90GemmConfig::prefetch_c, .legal = {{0, 1}},
                 .meaning = "1 = C pulled into L2 ahead of the epilogue (with C only)", .tune = {0, 1},
                 .suffix = [](const GemmKernelKey& k) -> std::string { return k.prefetch_c ? "_pfc" : ""; },
                 .template_arg = "kPrefetchC"},
            },
        .rule = [](const Sm90GemmConfig& c) -> const char* {
            if (c.pipelined == 1 && c.block_n > heuristics::kSm90Fp8MaxBlockNPipelined)
                return "pipelined 1 needs block_n <= 128 (three accumulators and the B scales in registers)";
            return nullptr;
        },
    };
    static_assert(heuristics::kSm90Fp8MaxBlockNPipelined == 128, "the rule message above names this limit");
    return table;
}

// Parsed again only after reload_settings() (a new settings generation). Called with the config memo's lock held.
void Fp8Gemm1d1dTraits::set_override(const char* op, const jit::Settings& settings, gemm_launch::ConfigQuery& q) {
    static const jit::Settings* parsed_for = nullptr;
    static knobs::Forced parsed;
    if (parsed_for != &settings) {
        parsed = knobs::parse_forced(fp8_1d1d_knobs(), settings.fp8_1d1d_gemm_config, op);
        parsed_for = &settings;
    }
    q.forced = parsed;
}

heuristics::Sm90GemmConfig Fp8Gemm1d1dTraits::choose(const char* op, const gemm_launch::ConfigQuery& q) {
    Config config = heuristics::choose_sm90_fp8_1d1d_config(q.m, q.n, q.k, q.num_sms, q.smem_limit,
                                                            gemm_launch::block_multiples(q));
    if (q.forced.active()) {  // DG_FP8_1D1D_GEMM_CONFIG (the key drops multicast on a one-SM device, prefetch_c
                              // without C)
        config = knobs::apply_forced(fp8_1d1d_knobs(), q.forced, config);
        if (config.num_stages == 0)
            config.num_stages = heuristics::sm90_fp8_1d1d_max_stages(config.block_m, config.block_n, q.smem_limit);
        if (heuristics::sm90_fp8_1d1d_smem_bytes(config.block_m, config.block_n, config.num_stages) > q.smem_limit)
            fail(op, "DG_FP8_1D1D_GEMM_CONFIG: " + heuristics::sm90_fp8_1d1d_to_string(config) +
                         " exceeds the shared memory limit (" + std::to_string(q.smem_limit) + " bytes)");
    }
    log_config(op, q.m, q.n, q.k, q.num_sms, heuristics::sm90_fp8_1d1d_to_string(config));
    return config;
}

GemmKernelKey Fp8Gemm1d1dTraits::kernel_key(const char* op, const GemmProblem& p, const Config& config, int num_sms,
                                            const CompiledDims& dims) {
    if (config.num_stages < heuristics::kSm90Fp8MinStages) fail(op, "not enough shared memory on this device");
    GemmKernelKey key = gemm_kernel_key(GemmKernel::kFp8_1d1d, config);
    if (num_sms < 2) key.multicast = 0;  // clusters need two CTAs in the persistent grid
    dims.apply(key, p.m, p.n, p.k);
    key.with_c = p.with_c;
    key.prefetch_c = uint8_t(p.with_c && config.prefetch_c != 0);
    if (is_k_grouped(p)) {
        key.mode = uint8_t(p.mode);
        key.k = 0;  // each group has its own K: never a kernel constant
        key.sf_k_align = uint32_t(p.sf_k_align);
    }
    return key;
}

// The entry point's body: the kernel with its compile-time choices.
constexpr char kBodyTemplate[] =
    "    deep_gemm::sm90_fp8_gemm_1d1d_impl<{bm}u, {bn}u, {stages}u, {group_n}u, {m}u, {n}u, {k}u, {with_c}{options}>(\n"
    "        {args});\n";
constexpr char kKGroupedBodyTemplate[] =
    "    deep_gemm::sm90_fp8_gemm_1d1d_k_grouped_impl<{bm}u, {bn}u, {stages}u, {group_n}u, {m}u, {n}u, {with_c}{options}>(\n"
    "        {args});\n";
// The host sizes shared memory with its own formula: make the device layout agree.
constexpr char kTrailerTemplate[] =
    "static_assert(deep_gemm::Sm90Fp8Gemm1d1dLayout<{bm}, {bn}, {stages}>::kSmemBytes == {smem}, "
    "\"host/device shared memory size mismatch\");\n";

GemmKernelSource Fp8Gemm1d1dTraits::source(const GemmKernelKey& key) {
    GemmKernelSource src;
    src.name = "sm90_fp8_gemm_1d1d";
    src.symbol = make_symbol(key);
    src.num_threads = 128 + 128 * (key.block_m / 64);
    src.smem_bytes = heuristics::sm90_fp8_1d1d_smem_bytes(key.block_m, key.block_n, key.num_stages);
    const std::string prelude = wgmma_selection(key.block_n, 0) + "#include <deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh>\n";
    const bool k_grouped = is_k_grouped(key);
    const std::string body =
        fmt::format(fmt::runtime(k_grouped ? kKGroupedBodyTemplate : kBodyTemplate), fmt::arg("bm", key.block_m),
                    fmt::arg("bn", key.block_n), fmt::arg("stages", key.num_stages), fmt::arg("group_n", key.group_n),
                    fmt::arg("m", key.m), fmt::arg("n", key.n), fmt::arg("k", key.k),
                    fmt::arg("with_c", key.with_c ? "true" : "false"),
                    fmt::arg("options", optional_template_args(key)),
                    fmt::arg("args", k_grouped ? param_names<Sm90Fp8Gemm1d1dKGroupedParams>()
                                               : param_names<Sm90Fp8Gemm1d1dParams>()));
    const std::string trailer = fmt::format(kTrailerTemplate, fmt::arg("bm", key.block_m), fmt::arg("bn", key.block_n),
                                            fmt::arg("stages", key.num_stages), fmt::arg("smem", src.smem_bytes));
    const KernelEntry entry{prelude, src.symbol, src.num_threads, body, trailer};
    src.code = k_grouped ? render_kernel_source<Sm90Fp8Gemm1d1dKGroupedParams>(entry)
                         : render_kernel_source<Sm90Fp8Gemm1d1dParams>(entry);
    return src;
}

void Fp8Gemm1d1dTraits::prepare(const char*, const GemmDesc& desc, const GemmKernelKey& key,
                                int num_sms, gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    // Scale blocks (rows of sfa / sfb): ceil(K / 128), or those of the K-grouped layout (GemmProblem::sf_k_blocks).
    const int num_kb = p.sf_k_blocks > 0 ? p.sf_k_blocks : (k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
    const bool k_grouped = is_k_grouped(p);
    CUtensorMap* t = prepared.tmaps;
    if (!k_grouped) {  // (K-grouped: a pair per group, built at each launch)
        t[0] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.a, uint64_t(k), uint64_t(m), uint64_t(o.lda),
                            heuristics::kSm90Fp8BlockK, uint32_t(key.block_m), CU_TENSOR_MAP_SWIZZLE_128B,
                            "FP8 1D1D GEMM: tensor map for a");
        t[1] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.b, uint64_t(k), uint64_t(n), uint64_t(o.ldb),
                            heuristics::kSm90Fp8BlockK, b_box_rows(key), CU_TENSOR_MAP_SWIZZLE_128B,
                            "FP8 1D1D GEMM: tensor map for b");
    }
    prepared.block_m = key.block_m, prepared.b_box_rows = b_box_rows(key);
    t[2] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, o.sfa, uint64_t(m), uint64_t(num_kb),
                        uint64_t(o.sfa_stride) * 4, uint32_t(key.block_m), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                        "FP8 1D1D GEMM: tensor map for sfa");
    t[3] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, o.sfb, uint64_t(n), uint64_t(num_kb),
                        uint64_t(o.sfb_stride) * 4, uint32_t(key.block_n), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                        "FP8 1D1D GEMM: tensor map for sfb");

    const int64_t m_blocks = (m + key.block_m - 1) / key.block_m;
    const int64_t n_blocks = (n + key.block_n - 1) / key.block_n;
    const int64_t launch_groups = k_grouped ? std::min(p.num_groups, kMaxKGroups) : 1;
    prepared.launch.grid[0] = key.multicast ? persistent_pair_grid(num_sms, launch_groups * ((m_blocks + 1) / 2) * n_blocks)
                                            : persistent_grid(num_sms, launch_groups * m_blocks * n_blocks);
    prepared.launch.cluster_x = key.multicast ? 2u : 1u;
    prepared.launch.block[0] = unsigned(heuristics::sm90_fp8_num_threads(key.block_m));
    prepared.launch.smem_bytes =
        unsigned(heuristics::sm90_fp8_1d1d_smem_bytes(key.block_m, key.block_n, key.num_stages));
}

namespace {

// K-grouped: one launch per kMaxKGroups groups, each with its groups' A / B tensor maps and K in the parameters.
void launch_k_grouped(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared, const jit::LaunchConfig& launch) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int64_t m = p.m, n = p.n;
    const CUtensorMap* t = prepared.tmaps;
    Sm90Fp8Gemm1d1dKGroupedParams params{};
    params.tmap_sfa = tma_descriptor(t[2]), params.tmap_sfb = tma_descriptor(t[3]);
    params.m = unsigned(m), params.n = unsigned(n);
    int64_t k_prefix = 0, scale_prefix = 0;  // of the groups before this launch's
    for (int first = 0; first < p.num_groups; first += kMaxKGroups) {
        const int count = std::min(kMaxKGroups, p.num_groups - first);
        params.groups = Sm90Fp8KGroupedMaps{};
        params.scale_k_block0 = unsigned(scale_prefix);
        for (int i = 0; i < count; ++i) {
            const int64_t kg = o.host_ks[first + i];
            params.groups.k[i] = int(kg);
            if (kg > 0) {
                const auto a = static_cast<const uint8_t*>(o.a) + m * k_prefix;
                const auto b = static_cast<const uint8_t*>(o.b) + n * k_prefix;
                params.groups.a[i] = tma_descriptor_value(make_tmap_2d(
                    CU_TENSOR_MAP_DATA_TYPE_UINT8, a, uint64_t(kg), uint64_t(m), uint64_t(kg), heuristics::kSm90Fp8BlockK,
                    uint32_t(prepared.block_m), CU_TENSOR_MAP_SWIZZLE_128B, "K-grouped FP8 GEMM: tensor map for a group's a"));
                params.groups.b[i] = tma_descriptor_value(make_tmap_2d(
                    CU_TENSOR_MAP_DATA_TYPE_UINT8, b, uint64_t(kg), uint64_t(n), uint64_t(kg), heuristics::kSm90Fp8BlockK,
                    prepared.b_box_rows, CU_TENSOR_MAP_SWIZZLE_128B, "K-grouped FP8 GEMM: tensor map for a group's b"));
            }
            k_prefix += kg;
            scale_prefix += p.sf_k_align != 0 ? int64_t(k_grouped_scale_blocks(uint64_t(kg), unsigned(p.sf_k_align)))
                                              : kg / heuristics::kSm90Fp8BlockK;
        }
        params.d = static_cast<float*>(o.d) + int64_t(first) * o.d_group_stride;
        params.c = o.c != nullptr ? static_cast<const float*>(o.c) + int64_t(first) * o.c_group_stride : nullptr;
        params.num_groups = unsigned(count);
        launch_with_params(*prepared.kernel, launch, params);
    }
}

}  // namespace

void Fp8Gemm1d1dTraits::launch(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    jit::LaunchConfig launch = prepared.launch;
    launch.stream = o.stream;
    if (is_k_grouped(p)) return launch_k_grouped(desc, prepared, launch);
    const CUtensorMap* t = prepared.tmaps;
    Sm90Fp8Gemm1d1dParams params{};
    params.tmap_a = tma_descriptor(t[0]), params.tmap_b = tma_descriptor(t[1]);
    params.tmap_sfa = tma_descriptor(t[2]), params.tmap_sfb = tma_descriptor(t[3]);
    params.d = static_cast<float*>(o.d), params.c = static_cast<const float*>(o.c);
    params.ldd = unsigned(o.ldd), params.ldc = unsigned(o.ldc);
    params.m = unsigned(p.m), params.n = unsigned(p.n), params.k = unsigned(p.k);
    launch_with_params(*prepared.kernel, launch, params);
}

}  // namespace deep_gemm::kernels
