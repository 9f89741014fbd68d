// Host side of the SM90 FP8 1D2D GEMM: its part of the GEMM launch path (sm90_gemm_launch.hpp).
#include "sm90_fp8_gemm_1d2d.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../../jit/driver_api.hpp"
#include "../../jit/errors.hpp"
#include "../../jit/log.hpp"
#include "split_k_workspace.hpp"
#include "../../jit/settings.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d_params.hpp"

namespace deep_gemm::kernels {

namespace {

using Epilogue = heuristics::Sm90GemmEpilogue;

constexpr const char* kOpName = "fp8_gemm_nt";
constexpr const char* kConfigEnv = "DG_FP8_GEMM_CONFIG";

[[noreturn]] void fail(const std::string& what) { throw jit::Error(std::string(kOpName) + ": " + what); }
[[noreturn]] void fail_op(const char* op, const std::string& what) { throw jit::Error(std::string(op) + ": " + what); }

bool head_split(const GemmKernelKey& key) { return key.head_left + key.head_right != 0; }
bool head_split(const GemmProblem& p) { return p.head_left + p.head_right != 0; }

// "_hs<left>_<mid>_<right>" for the head-split epilogue (fp8_gemm_nt_skip_head_mid), else "".
std::string head_split_suffix(const GemmKernelKey& key) {
    if (!head_split(key)) return "";
    return fmt::format("_hs{}_{}_{}", key.head_left, key.head_mid, key.head_right);
}

// The scales' K granularity of a key or a problem: 128 (the default) or 32 (block-32 scales).
int sf_gran_k(const GemmKernelKey& key) { return key.sf_gran_k != 0 ? key.sf_gran_k : heuristics::kSm90Fp8BlockK; }
bool block32(const GemmKernelKey& key) { return sf_gran_k(key) == 32; }
bool block32(const GemmProblem& p) { return p.sf_gran_k == 32; }

std::string make_symbol(const GemmKernelKey& key) {
    return gemm_symbol("sm90_fp8_gemm_1d2d", key) + (key.epilogue == int(Epilogue::kBf16Direct) ? "_direct" : "") +
           (key.with_c ? (key.c_fp32 ? "_cf32" : "_c") : "") +
           knobs::symbol_suffix(fp8_1d2d_knobs(), key) + grouped_symbol_suffix(key) +
           padding_symbol_suffix(key) + head_split_suffix(key) + (key.tile_signal ? "_signal" : "") +
           (block32(key) ? "_sfk32" : "");
}

// fp8_einsum's heads (GemmGroupedMode::kHeadBatched): the masked layout of B, sfa and sfb with every head full,
// A = x [M, G, K] through a {K, head, rows} map, D = z [M, G, N] with the heads side by side.
bool is_heads(const GemmProblem& p) { return p.mode == GemmGroupedMode::kHeadBatched; }
// Modes whose A rows and sfa are per group (max_m rows each).
bool a_per_group(const GemmProblem& p) { return is_masked(p) || is_heads(p); }

}  // namespace

// The kernel's knobs, in the order of DG_FP8_GEMM_CONFIG's fields (adding one: docs/architecture.md).
const knobs::KnobTable& fp8_1d2d_knobs() {
    using heuristics::Sm90GemmConfig;
    static const knobs::KnobTable table{
        .variable = kConfigEnv,
        .required = 3,
        .knobs =
            {
                {.name = "block_m", .field = &Sm90GemmConfig::block_m, .legal = {{64, 256, 64}},
                 .meaning = "tile rows: 192 = three math warpgroups of 64 rows, 256 = two of 128 rows",
                 .tune = {64, 128, 192, 256}, .template_arg = "BLOCK_M"},
                knobs::block_n_knob(heuristics::kSm90Fp8MaxBlockN),
                knobs::stages_knob(heuristics::kSm90Fp8MinStages, heuristics::kSm90Fp8MaxStages),
                {.name = "pipelined", .field = &Sm90GemmConfig::pipelined, .legal = {{0, 1}},
                 .meaning = "1 = two scratch accumulators, promotion overlapped with the next K block's wgmmas (block-32 scales: "
                            "the next 32-K step's)",
                 .tune = {0, 1},
                 .suffix = [](const GemmKernelKey& k) -> std::string { return k.pipelined == 1 ? "_pp" : ""; },
                 .template_arg = "kPromoteMode"},
                {.name = "multicast", .field = &Sm90GemmConfig::multicast, .legal = {{0, 2}},
                 .meaning = "2-CTA clusters: 1 = sharing B (M-block pairs), 2 = sharing A (N-block pairs)",
                 .tune = {0, 1, 2},
                 .suffix = [](const GemmKernelKey& k) -> std::string {
                     return k.multicast == 1 ? "_mcb" : k.multicast == 2 ? "_mca" : "";
                 },
                 .template_arg = "kNumTMAMulticast, kMulticastOnA"},
                {.name = "group_n", .field = &Sm90GemmConfig::group_n, .legal = {{0, 1024}},
                 .meaning = "tile order: groups of this many N blocks walked over all M blocks, 0 = the default (8)",
                 .keep = 0, .tune = {4, 8, 16}, .template_arg = "kNumNBlocksPerGroup"},
                {.name = "split_k", .field = &Sm90GemmConfig::split_k, .legal = {{0, heuristics::kSm90Fp8MaxSplitK}},
                 .meaning = "0 or 1 = off, else each tile's K blocks split over that many units (dense, no C)",
                 .tune = {1, 2, 4, 8},
                 .suffix = [](const GemmKernelKey& k) -> std::string {
                     return k.split_k > 1 ? fmt::format("_sk{}", k.split_k) : "";
                 },
                 .template_arg = "SplitKScheduler's kSplits"},
            },
        .words = {"legacy", "rules"},
        .rule = [](const Sm90GemmConfig& c) -> const char* {
            using namespace heuristics;
            if (c.split_k > 1 && (c.block_m > 128 || c.multicast != 0)) return "split_k needs block_m 64 or 128 and multicast 0";
            if (c.pipelined == 1 && c.block_n > kSm90Fp8MaxBlockNPipelined) return "pipelined 1 needs block_n <= 128";
            if (c.block_m == 256 && c.pipelined == 1) return "block_m 256 needs pipelined 0 (no registers for it)";
            if (c.block_m == 256 && c.block_n > kSm90Fp8MaxBlockN256) return "block_m 256 needs block_n <= 128";
            if (c.block_m == 192 && c.block_n > kSm90Fp8MaxBlockN192) return "block_m 192 needs block_n <= 128";
            if (c.block_m == 192 && c.pipelined == 1 && c.block_n > kSm90Fp8MaxBlockN192Pipelined)
                return "block_m 192 with pipelined 1 needs block_n <= 80";
            return nullptr;
        },
    };
    static_assert(heuristics::kSm90Fp8MaxBlockNPipelined == 128 && heuristics::kSm90Fp8MaxBlockN256 == 128 &&
                      heuristics::kSm90Fp8MaxBlockN192 == 128 && heuristics::kSm90Fp8MaxBlockN192Pipelined == 80,
                  "the rule messages above name these limits");
    return table;
}

const char* Fp8Gemm1d2dTraits::op_name(const GemmProblem& p) {
    switch (p.mode) {
        case GemmGroupedMode::kMGroupedContiguous: return "m_grouped_fp8_gemm_nt_contiguous";
        case GemmGroupedMode::kMGroupedContiguousPsum: return "m_grouped_fp8_gemm_nt_contiguous (psum layout)";
        case GemmGroupedMode::kMGroupedMasked: return "m_grouped_fp8_gemm_nt_masked";
        case GemmGroupedMode::kHeadBatched: return "fp8_einsum('bhr,hdr->bhd')";
        case GemmGroupedMode::kNone: return head_split(p) ? "fp8_gemm_nt_skip_head_mid" : kOpName;
        default: return "m_grouped_fp8_gemm";
    }
}

const knobs::KnobTable& Fp8Gemm1d2dTraits::knob_table() { return fp8_1d2d_knobs(); }

void Fp8Gemm1d2dTraits::check(const char* op, const GemmDesc& desc) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    auto check = [op](bool ok, const char* what) {
        if (!ok) fail_op(op, what);
    };
    const int m = p.m, n = p.n, k = p.k;
    const bool grouped = p.mode != GemmGroupedMode::kNone;
    const bool masked = is_masked(p);
    if (k % 16 != 0) fail_op(op, "K must be a multiple of 16 (16-byte aligned FP8 rows); got " + std::to_string(k));
    check(o.a && o.b && o.sfa && o.sfb && o.d, "null pointer argument");
    // Only the modes whose scheduler reads an int32 array need one (the head-batched mode has none).
    if (const char* array = grouped_array_name(p.mode); array != nullptr && o.grouped == nullptr)
        fail_op(op, std::string(array) + " is null");
    check(aligned(o.a, 16) && aligned(o.b, 16) && aligned(o.sfa, 16), "a, b and sfa must be 16-byte aligned");
    check(aligned(o.d, 2), "d must be 2-byte aligned");
    check(o.lda >= k && o.lda % 16 == 0, "lda must be >= K and a multiple of 16");
    check(o.ldb >= k && o.ldb % 16 == 0, "ldb must be >= K and a multiple of 16");
    check(o.ldd >= n, "ldd must be >= N");
    check(!o.c || (o.ldc >= n && o.ldc < (int64_t(1) << 32)), "ldc must be >= N and < 2^32 elements");
    check(!o.c || aligned(o.c, desc.problem.c_fp32 ? 4 : 2), "c must be element-aligned");
    check(!p.tile_signal || (masked && o.signal != nullptr && aligned(o.signal, 4)), "tile signals need the masked mode and a signal");
    check(o.lda < (int64_t(1) << 32) && o.ldb < (int64_t(1) << 32) && o.ldd < (int64_t(1) << 32),
          "row strides must be < 2^32 elements");
    check(o.sfa_stride >= m && o.sfa_stride % 4 == 0,
          "sfa_stride must be >= M and a multiple of 4 (TMA-aligned M-major scales)");
    check(p.sf_gran_k == 128 || p.sf_gran_k == 32, "the scales' K granularity must be 128 or 32 (block-32 scales)");
    // Block-32: a K block's four B scales of a column slice are one 16-byte load (rows of 4 * ceil(K/128)).
    check(p.sf_gran_k != 32 || aligned(o.sfb, 16), "block-32 sfb must be 16-byte aligned");
    if (grouped) {
        check(masked || is_contiguous(p) || is_heads(p), "grouped mode must be contiguous (either layout), masked or head-batched");
        check(o.b_group_stride >= int64_t(n) * o.ldb && o.b_group_stride % 16 == 0,
              "b_group_stride must cover one group ([N, K]) and be a multiple of 16");
        check(a_per_group(p) || (p.alignment > 0 && p.alignment % 128 == 0), "the group alignment must be a multiple of 128");
    }
    if (is_heads(p)) {
        check(o.a_group_stride >= k && o.a_group_stride % 16 == 0 && o.lda >= int64_t(p.num_groups) * o.a_group_stride,
              "a must be [M, G, K] with head stride >= K (a multiple of 16) and row stride >= G * head stride");
        check(o.d_group_stride == n && o.ldd >= int64_t(n) * p.num_groups, "d must be [M, G, N] with head stride N");
        check(n % 2 == 0, "N must be even (paired BF16 stores at each head's column offset)");
        check(!o.c, "the head-batched mode takes no C");
        check(o.sfa_group_stride >= int64_t((k + 127) / 128) * o.sfa_stride && o.sfa_group_stride % 4 == 0,
              "sfa_group_stride must cover one head and be a multiple of 4");
        check(int64_t(p.num_groups) * n < (int64_t(1) << 32), "num_groups * N must be < 2^32");
    }
    if (masked) {
        check(o.a_group_stride >= int64_t(m) * o.lda && o.a_group_stride % 16 == 0,
              "a_group_stride must cover one group ([max_m, K]) and be a multiple of 16");
        check(o.sfa_group_stride >= int64_t((k + 127) / 128) * o.sfa_stride && o.sfa_group_stride % 4 == 0,
              "sfa_group_stride must cover one group and be a multiple of 4");
        check(int64_t(p.num_groups) * m < (int64_t(1) << 32), "num_groups * max_m must be < 2^32");
    }
}

// Grouped modes: m = sum of M (contiguous) or max_m (masked), groups = G, rows_per_group = expected_m (masked;
// the psum layout when the caller gave expected_m_for_psum_layout) or 0.
gemm_launch::ConfigQuery Fp8Gemm1d2dTraits::config_query(const GemmProblem& p, int num_sms, int smem_limit) {
    const bool masked = a_per_group(p);
    const bool psum_hint = p.mode == GemmGroupedMode::kMGroupedContiguousPsum && p.expected_m > 0;
    gemm_launch::ConfigQuery q;
    q.rows_per_group = masked ? std::max(1, std::min(p.expected_m > 0 ? p.expected_m : p.m, p.m))
                       : psum_hint ? p.expected_m
                                   : 0;
    q.m = p.m;
    q.groups = p.mode != GemmGroupedMode::kNone ? p.num_groups : 1;
    q.n = p.n, q.k = p.k, q.num_sms = num_sms, q.smem_limit = smem_limit;
    q.mode = int(p.mode);
    q.zero_padding = is_contiguous(p.mode) && p.ensure_zero_padding;
    // The config depends on the epilogue only through C: with C it is added in the epilogue and K is not split.
    q.epilogue = int(p.with_c ? Epilogue::kAccumDirect : Epilogue::kBf16Tma);
    q.max_block_n = is_masked(p) ? p.max_block_n : 0;
    if (block32(p)) q.sf_gran_k = 32;
    return q;
}

// DG_FP8_GEMM_CONFIG is parsed again only after reload_settings() (a new settings generation), so a cached
// call compares one pointer here. Called with the config memo's lock held.
void Fp8Gemm1d2dTraits::set_override(const char* op, const jit::Settings& settings,
                                     gemm_launch::ConfigQuery& q) {
    static const jit::Settings* parsed_for = nullptr;
    static knobs::Forced parsed;
    if (parsed_for != &settings) {
        parsed = knobs::parse_forced(fp8_1d2d_knobs(), settings.fp8_gemm_config, op);
        parsed_for = &settings;
    }
    q.forced = parsed;
}

heuristics::Sm90GemmConfig Fp8Gemm1d2dTraits::choose(const char* op, const gemm_launch::ConfigQuery& q) {
    // The table's words: "legacy" (state 2) and "rules" (state 3) pick another chooser.
    const heuristics::Sm90Fp8Chooser chooser = q.forced.state == 2   ? heuristics::Sm90Fp8Chooser::kLegacy
                                               : q.forced.state == 3 ? heuristics::Sm90Fp8Chooser::kRules
                                                                     : heuristics::Sm90Fp8Chooser::kModel;
    const int m = q.m, n = q.n, k = q.k, num_sms = q.num_sms, smem_limit = q.smem_limit;
    const GemmGroupedMode mode = GemmGroupedMode(q.mode);
    // Block-32 scales (dense): tiles of whole 32-column B-scale slices, and four A scales per row in each stage.
    const int gran = q.sf_gran_k != 0 ? q.sf_gran_k : heuristics::kSm90Fp8BlockK;
    heuristics::BlockMultiples multiples = gemm_launch::block_multiples(q);
    if (gran == 32) multiples.n = std::lcm(multiples.n, 32);
    Config config = mode == GemmGroupedMode::kNone
                        ? heuristics::choose_sm90_fp8_config(m, n, k, num_sms, smem_limit, chooser, multiples,
                                                             Epilogue(q.epilogue) != Epilogue::kAccumDirect, gran)
                        : heuristics::choose_sm90_fp8_grouped_config(m, n, k, num_sms, smem_limit, q.rows_per_group,
                                                                     q.groups,
                                                                     mode == GemmGroupedMode::kMGroupedMasked ||
                                                                         mode == GemmGroupedMode::kHeadBatched,
                                                                     chooser,
                                                                     gemm_launch::block_multiples(q), q.max_block_n);
    if (is_contiguous(mode) && !q.zero_padding && chooser == heuristics::Sm90Fp8Chooser::kModel)
        config = heuristics::sm90_fp8_contiguous_unzeroed_config(config, m, n, num_sms, smem_limit,
                                                                 gemm_launch::block_multiples(q));
    // The rules and legacy choosers size the stages for 128-granular scales: no more than fit the block-32 layout.
    if (gran == 32)
        config.num_stages = heuristics::sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit, config.num_stages, gran);
    if (q.forced.active()) {
        config = knobs::apply_forced(fp8_1d2d_knobs(), q.forced, config);
        config.split_k = std::max(1, config.split_k);
        if (config.num_stages == 0)
            config.num_stages = heuristics::sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit,
                                                                heuristics::kSm90Fp8MaxStages, gran);
        if (heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages, gran) > smem_limit)
            fail_op(op, std::string(kConfigEnv) + ": " + heuristics::sm90_fp8_to_string(config, gran) + " exceeds the shared memory limit (" +
                 std::to_string(smem_limit) + " bytes)");
    }
    // With the config model's time for this config (forced ones too), for calibrating the model by sweeps
    // (masked: on G x expected_m rows).
    if (jit::settings().print_configs) {
        const int model_m = mode == GemmGroupedMode::kMGroupedMasked
                                ? int(std::min<int64_t>(int64_t(q.groups) * std::max(1, q.rows_per_group), INT32_MAX))
                                : m;
        char modelled[64];
        std::snprintf(modelled, sizeof(modelled), " modelled=%.1fus",
                      heuristics::sm90_fp8_model_cost(model_m, n, k, num_sms, config.block_m, config.block_n,
                                                      config.num_stages, config.pipelined, config.multicast, 1, gran) /
                          heuristics::kFp8ModelClkPerUs);
        log_config(op, m, n, k, num_sms, heuristics::sm90_fp8_to_string(config, gran) + modelled);
    }
    return config;
}

GemmKernelKey Fp8Gemm1d2dTraits::kernel_key(const char* op, const GemmProblem& p, const Config& config, int num_sms,
                                            const CompiledDims& dims) {
    if (config.num_stages < heuristics::kSm90Fp8MinStages) fail_op(op, "not enough shared memory on this device");
    GemmKernelKey key = gemm_kernel_key(GemmKernel::kFp8_1d2d, config);
    // Clusters need two CTAs per cluster in the persistent grid.
    if (num_sms < 2) key.multicast = 0;
    dims.apply(key, p.m, p.n, p.k);
    // The TMA store needs a 16-byte aligned base and a row stride that is a multiple of 16 bytes.
    // D = C + acc: C is read and added in the epilogue, which then stores from registers.
    if (p.with_c && p.mode != GemmGroupedMode::kNone) fail_op(op, "the grouped modes take no C");
    if (p.max_block_n > 0 && key.block_n > p.max_block_n)
        fail_op(op, "BLOCK_N " + std::to_string(key.block_n) + " (" + kConfigEnv + " or a tuned pick) exceeds max_block_n " +
                        std::to_string(p.max_block_n));
    if (p.tile_signal && !is_masked(p)) fail_op(op, "tile signals are for the masked GEMM only");
    key.tile_signal = p.tile_signal;
    if (p.mode != GemmGroupedMode::kNone) {
        // The contiguous schedulers pair N blocks of one M block (multicast 2, sharing A), or M blocks of 64 or 128
        // rows (multicast 1, sharing B when both blocks hold one group: ContiguousLayoutScheduler); they look
        // groups up per 128-row segment, which three 64-row math warpgroups (BLOCK_M 192) do not fit. The masked
        // one pairs M blocks of one group (multicast 1, sharing B). The others pair none.
        if (is_contiguous(p) ? key.multicast == 1 && key.block_m > 128 : !(is_masked(p) && key.multicast == 1))
            key.multicast = 0;
        if (key.split_k > 1)
            fail_op(op, std::string(kConfigEnv) + ": split_k is for the dense GEMM only; got split_k " +
                            std::to_string(key.split_k));
        if (key.block_m == 192 && !is_masked(p) && !is_heads(p))
            fail_op(op, std::string(kConfigEnv) + ": block_m 192 is for the dense and masked GEMMs only; got block_m 192");
    }
    if (key.split_k > 1) {
        if (p.with_c) fail_op(op, "split_k does not take a C operand");
        const int num_kb = (p.k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
        if (key.split_k > num_kb)
            fail_op(op, "split_k " + std::to_string(key.split_k) + " is more than the " + std::to_string(num_kb) +
                            " K blocks of K=" + std::to_string(p.k));
    }
    key.with_c = p.with_c;
    key.c_fp32 = p.c_fp32;
    key.epilogue = uint8_t(p.with_c ? Epilogue::kAccumDirect : p.d_tma_ok ? Epilogue::kBf16Tma : Epilogue::kBf16Direct);
    if (head_split(p)) {
        // The head-split D is written from registers (HeadSplitStoreEpilogue); dense, no C.
        if (p.mode != GemmGroupedMode::kNone || p.with_c) fail_op(op, "the head-split epilogue is for the dense GEMM without C");
        if (p.head_left < 0 || p.head_mid < 0 || p.head_right < 0 || p.n % (p.head_left + p.head_right) != 0)
            fail_op(op, "head splits must be non-negative with N a multiple of left + right");
        key.epilogue = uint8_t(Epilogue::kBf16Direct);
        key.head_left = uint32_t(p.head_left), key.head_mid = uint32_t(p.head_mid), key.head_right = uint32_t(p.head_right);
    }
    if (is_heads(p)) {
        // No CTA pairs; a TMA store box must not straddle a head's last column into the next head's.
        key.multicast = 0;
        if (key.epilogue == uint8_t(Epilogue::kBf16Tma) && p.n % config.block_n != 0) key.epilogue = uint8_t(Epilogue::kBf16Direct);
    }
    if (block32(p)) {
        // Dense only; each 32-column slice of a tile takes one B scale. The pipelined knob selects the
        // block-32 loop's two scratch accumulators taking turns per 32-K step (its own overlap; fin + 2 scratch
        // registers as for the 128-granular pipelined loop, whose limits the knob table's rule states).
        if (p.mode != GemmGroupedMode::kNone || head_split(p))
            fail_op(op, "block-32 scales (recipe (1, 32, 32)) are for the dense GEMM only");
        if (key.block_n % 32 != 0)
            fail_op(op, std::string(kConfigEnv) + ": block_n must be a multiple of 32 with block-32 scales (recipe (1, 32, 32)); got block_n " +
                            std::to_string(key.block_n));
        key.sf_gran_k = 32;
    }
    set_grouped_layout(op, p, key);
    return key;
}

// The entry point's body: the scheduler and epilogue types, then the kernel with its compile-time choices.
constexpr char kBodyTemplate[] =
    "    using Scheduler = {scheduler};\n"
    "    using Epilogue = deep_gemm::{epilogue};\n"
    "    deep_gemm::sm90_fp8_gemm_1d2d_impl<{bm}u, {bn}u, {stages}, {group_n}u, {m}u, {n}u, {k}u, Scheduler, Epilogue, "
    "{pipelined}u, {cluster}, {multicast_on_a}{gran}{signal}>(\n"
    "        {args});\n";
// The host sizes shared memory with its own formula: make the device layout agree.
constexpr char kTrailerTemplate[] =
    "static_assert(deep_gemm::Sm90Fp8Gemm1d2dLayout<{bm}, {bn}, {stages}{gran}>::kSmemBytes == {smem}, "
    "\"host/device shared memory size mismatch\");\n";

GemmKernelSource Fp8Gemm1d2dTraits::source(const GemmKernelKey& key) {
    GemmKernelSource src;
    src.name = "sm90_fp8_gemm_1d2d";
    src.symbol = make_symbol(key);
    src.num_threads = heuristics::sm90_fp8_num_threads(key.block_m);
    src.smem_bytes = heuristics::sm90_fp8_smem_bytes(key.block_m, key.block_n, key.num_stages, sf_gran_k(key));
    const unsigned bm = key.block_m, bn = key.block_n;
    // The scale granularity is a template argument only where it is not the default (the other keys' sources
    // stay as they were).
    // A tile-signal key names it too: its signal flag is the next template argument.
    const std::string gran = block32(key) ? ", 32u" : key.tile_signal ? ", 128u" : "";
    // 256-row tiles: each of the two math warpgroups stores 128 rows (two 64-row waves).
    const std::string epilogue_rows = key.block_m == 256 ? ", 128u" : "";
    const bool split = key.split_k > 1;  // split-K kernels take the workspace and the tile counters
    const std::string scheduler =
        split ? fmt::format("deep_gemm::SplitKScheduler<{}u, {}u, {}u, {}u>", bm, bn, key.group_n, key.split_k)
              : scheduler_type(key, key.multicast == 1   ? "ClusterPairScheduler"
                                    : key.multicast == 2 ? "ClusterPairNScheduler"
                                                         : "GroupedOrderScheduler");
    const std::string epilogue =
        head_split(key)
            ? fmt::format("HeadSplitStoreEpilogue<{}u, {}u, {}u, {}u, {}u{}>", bm, bn, key.head_left, key.head_mid,
                          key.head_right, epilogue_rows)
        : key.epilogue == int(Epilogue::kAccumDirect)
            ? fmt::format("AccumDirectStoreEpilogue<{}u, {}u, false, true, {}u, {}>", bm, bn,
                          key.block_m == 256 ? 128 : 64, key.c_fp32 ? "true" : "false")
            : fmt::format("{}<{}u, {}u{}>",
                          key.epilogue == int(Epilogue::kBf16Direct) ? "Bf16DirectStoreEpilogue" : "Bf16TmaStoreEpilogue",
                          bm, bn, epilogue_rows);
    // The head-split epilogue's header only where it is used, so every other key's source stays as it was.
    const std::string prelude = wgmma_selection(key.block_n, 0) +
                                (head_split(key) ? "#include <deep_gemm/epilogue/head_split_store.cuh>\n" : "") +
                                "#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>\n";
    const std::string body =
        fmt::format(kBodyTemplate, fmt::arg("scheduler", scheduler), fmt::arg("epilogue", epilogue), fmt::arg("bm", bm),
                    fmt::arg("bn", bn), fmt::arg("stages", key.num_stages), fmt::arg("group_n", key.group_n),
                    fmt::arg("m", key.m), fmt::arg("n", key.n), fmt::arg("k", key.k), fmt::arg("pipelined", key.pipelined),
                    fmt::arg("cluster", key.multicast != 0 ? 2 : 1),
                    fmt::arg("multicast_on_a", key.multicast == 2 ? "true" : "false"), fmt::arg("gran", gran),
                    // Tile signals: the kernel's last template and function arguments (no split-K workspace).
                    fmt::arg("signal", key.tile_signal ? ", true" : ""),
                    fmt::arg("args", split              ? param_names<Sm90Fp8Gemm1d2dSplitKParams>()
                                     : key.tile_signal ? param_names<Sm90Fp8Gemm1d2dParams>() + ", nullptr, nullptr, tile_signal"
                                                       : param_names<Sm90Fp8Gemm1d2dParams>()));
    const std::string trailer = fmt::format(kTrailerTemplate, fmt::arg("bm", bm), fmt::arg("bn", bn),
                                            fmt::arg("stages", key.num_stages), fmt::arg("gran", gran),
                                            fmt::arg("smem", src.smem_bytes));
    const KernelEntry entry{prelude, src.symbol, src.num_threads, body, trailer};
    src.code = split             ? render_kernel_source<Sm90Fp8Gemm1d2dSplitKParams>(entry)
               : key.tile_signal ? render_kernel_source<Sm90Fp8Gemm1d2dSignalParams>(entry)
                                 : render_kernel_source<Sm90Fp8Gemm1d2dParams>(entry);
    return src;
}

void Fp8Gemm1d2dTraits::prepare(const char* op, const GemmDesc& desc, const GemmKernelKey& key,
                                int num_sms, gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    // Tensor maps (innermost dimension first): a, b, sfa 3-D {inner, outer, group}; d 2-D.
    // sfa: one column per K block of the scale granularity; a slot takes the columns of one 128-K block.
    const int gran = sf_gran_k(key);
    const int num_sf_k = (k + gran - 1) / gran;
    const int d_swizzle = heuristics::sm90_fp8_d_swizzle_bytes(key.block_n);
    const uint64_t a_groups = a_per_group(p) ? uint64_t(p.num_groups) : 1;
    const uint64_t b_groups = p.mode != GemmGroupedMode::kNone ? uint64_t(p.num_groups) : 1;
    const std::string what = std::string(op) + ": tensor map for ";
    CUtensorMap* t = prepared.tmaps;
    if (is_heads(p)) {
        // x [M, G, K] as {K, G, M} (increasing strides); the box {128, 1, BLOCK_M} lands as {128, BLOCK_M} would.
        const uint64_t dims[3] = {uint64_t(k), uint64_t(p.num_groups), uint64_t(m)};
        const uint64_t strides[2] = {uint64_t(o.a_group_stride), uint64_t(o.lda)};
        const uint32_t box[3] = {uint32_t(heuristics::kSm90Fp8BlockK), 1u, uint32_t(key.block_m)};
        t[0] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, o.a, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, (what + "a").c_str());
    } else {
        t[0] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.a, uint64_t(k), uint64_t(m), a_groups, uint64_t(o.lda),
                        uint64_t(o.a_group_stride), heuristics::kSm90Fp8BlockK,
                        uint32_t(key.multicast == 2 ? key.block_m / 2 : key.block_m), CU_TENSOR_MAP_SWIZZLE_128B,
                        (what + "a").c_str());
    }
    t[1] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.b, uint64_t(k), uint64_t(n), b_groups, uint64_t(o.ldb),
                        uint64_t(o.b_group_stride), heuristics::kSm90Fp8BlockK,
                        uint32_t(key.multicast == 1 ? key.block_n / 2 : key.block_n), CU_TENSOR_MAP_SWIZZLE_128B,
                        (what + "b").c_str());
    t[2] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, o.sfa, uint64_t(m), uint64_t(num_sf_k), a_groups,
                        uint64_t(o.sfa_stride) * 4, uint64_t(o.sfa_group_stride) * 4, uint32_t(key.block_m),
                        uint32_t(heuristics::kSm90Fp8BlockK / gran), CU_TENSOR_MAP_SWIZZLE_NONE, (what + "sfa").c_str());
    std::memset(&t[3], 0, sizeof(t[3]));
    // masked: [G * max_m, N]; heads: [M, G * N]
    const uint64_t d_rows = is_heads(p) ? uint64_t(m) : uint64_t(m) * a_groups;
    const uint64_t d_cols = is_heads(p) ? uint64_t(n) * a_groups : uint64_t(n);
    if (key.epilogue == int(Epilogue::kBf16Tma))
        t[3] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o.d, d_cols, d_rows, uint64_t(o.ldd) * 2,
                            uint32_t(d_swizzle / 2), 64u, swizzle_of(d_swizzle), (what + "d").c_str());

    const int64_t m_blocks = int64_t(a_groups) * ((m + key.block_m - 1) / key.block_m);
    const int64_t n_blocks = (n + key.block_n - 1) / key.block_n;
    jit::LaunchConfig& launch = prepared.launch;
    const int64_t units = m_blocks * n_blocks * std::max<int64_t>(1, key.split_k);
    launch.grid[0] = key.multicast == 0 ? persistent_grid(num_sms, units)
                     : key.multicast == 1 ? persistent_pair_grid(num_sms, (m_blocks + 1) / 2 * n_blocks)
                                          : persistent_pair_grid(num_sms, m_blocks * ((n_blocks + 1) / 2));
    launch.block[0] = unsigned(heuristics::sm90_fp8_num_threads(key.block_m));
    launch.smem_bytes = unsigned(heuristics::sm90_fp8_smem_bytes(key.block_m, key.block_n, key.num_stages, gran));
    launch.cluster_x = key.multicast != 0 ? 2u : 1u;
    if (key.split_k > 1) {
        prepared.split_k_tiles = size_t(m_blocks * n_blocks);
        prepared.split_k_partial_bytes = prepared.split_k_tiles * key.split_k * key.block_m * key.block_n * 4;
    }
}

namespace {

// The fields both parameter lists share.
template <typename Params>
Params fill_params(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const CUtensorMap* t = prepared.tmaps;
    Params params{};
    params.tmap_a = tma_descriptor(t[0]), params.tmap_b = tma_descriptor(t[1]);
    params.tmap_sfa = tma_descriptor(t[2]), params.tmap_d = tma_descriptor(t[3]);
    params.sfb = o.sfb, params.d = o.d, params.ldd = unsigned(o.ldd), params.c = o.c, params.ldc = unsigned(o.ldc);
    params.grouped = o.grouped;
    params.m = unsigned(p.m), params.n = unsigned(p.n), params.k = unsigned(p.k);
    params.num_groups = unsigned(p.mode != GemmGroupedMode::kNone ? p.num_groups : 1);
    return params;
}

}  // namespace

void Fp8Gemm1d2dTraits::launch(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared) {
    jit::LaunchConfig launch = prepared.launch;
    launch.stream = desc.operands.stream;
    if (prepared.split_k_tiles != 0) {
        auto params = fill_params<Sm90Fp8Gemm1d2dSplitKParams>(desc, prepared);
        const SplitKWorkspace ws = split_k_workspace(desc.problem.device, desc.operands.stream,
                                                     prepared.split_k_partial_bytes, prepared.split_k_tiles);
        params.split_ws = ws.partials, params.split_counters = ws.counters;
        launch_with_params(*prepared.kernel, launch, params);
        return;
    }
    if (desc.problem.tile_signal) {
        auto params = fill_params<Sm90Fp8Gemm1d2dSignalParams>(desc, prepared);
        params.tile_signal = desc.operands.signal;
        launch_with_params(*prepared.kernel, launch, params);
        return;
    }
    auto params = fill_params<Sm90Fp8Gemm1d2dParams>(desc, prepared);
    launch_with_params(*prepared.kernel, launch, params);
}

}  // namespace deep_gemm::kernels
