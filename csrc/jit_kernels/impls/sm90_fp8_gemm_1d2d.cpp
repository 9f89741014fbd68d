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
#include "config_fields.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d_params.hpp"

namespace deep_gemm::kernels {

namespace {

using Epilogue = heuristics::Sm90GemmEpilogue;
using ConfigOverride = Sm90Fp8ConfigOverride;

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

std::string make_symbol(const GemmKernelKey& key) {
    return gemm_symbol("sm90_fp8_gemm_1d2d", key) + (key.epilogue == int(Epilogue::kBf16Direct) ? "_direct" : "") +
           (key.with_c ? (key.c_fp32 ? "_cf32" : "_c") : "") +
           (key.pipelined == 1 ? "_pp" : "") + (key.multicast == 1 ? "_mcb" : key.multicast == 2 ? "_mca" : "") +
           (key.split_k > 1 ? fmt::format("_sk{}", key.split_k) : "") + grouped_symbol_suffix(key) +
           padding_symbol_suffix(key) + head_split_suffix(key);
}

// fp8_einsum's heads (GemmGroupedMode::kHeadBatched): the masked layout of B, sfa and sfb with every head full,
// A = x [M, G, K] through a {K, head, rows} map, D = z [M, G, N] with the heads side by side.
bool is_heads(const GemmProblem& p) { return p.mode == GemmGroupedMode::kHeadBatched; }
// Modes whose A rows and sfa are per group (max_m rows each).
bool a_per_group(const GemmProblem& p) { return is_masked(p) || is_heads(p); }

}  // namespace

Sm90Fp8ConfigOverride parse_sm90_fp8_config_override(const std::string& text) {
    // The field syntax of DG_BF16_GEMM_CONFIG (config_fields.hpp): blanks around the value and its fields
    // are ignored, and a blank value means no override.
    const std::string_view body = config_fields::trim_blanks(text);
    const std::string v = text;
    ConfigOverride ov;
    if (body.empty()) return ov;
    if (body == "legacy") {
        ov.block_m = -1;
        return ov;
    }
    if (body == "rules") {
        ov.block_m = -2;
        return ov;
    }
    const char* form = "\"block_m,block_n,stages[,pipelined[,multicast[,group_n[,split_k]]]]\"";
    const std::vector<std::string_view> fields = config_fields::split_commas(body);
    int vals[7] = {0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < fields.size(); ++i) {
        const std::optional<int> value = config_fields::parse_unsigned(fields[i]);
        if (!value) {
            const std::string field(fields[i]);
            // "128;128;0", "128 128 0": digits, then another separator
            const size_t stop = field.find_first_not_of("0123456789");
            if (stop != 0 && stop != std::string::npos && std::strchr(";: \t", field[stop]) != nullptr)
                fail(std::string(kConfigEnv) + "='" + v + "': fields are separated by ','; got field '" + field + "'");
            fail(std::string(kConfigEnv) + "='" + v + "': expected " + form + " (non-negative integers), \"rules\" or \"legacy\"; got field '" +
                 field + "'");
        }
        if (i < 7) vals[i] = *value;
    }
    if (fields.size() > 7) fail(std::string(kConfigEnv) + "='" + v + "': at most 7 fields; got " + std::to_string(fields.size()));
    if (fields.size() < 3) fail(std::string(kConfigEnv) + "='" + v + "': expected " + form + "; got " + std::to_string(fields.size()) + " field" +
                                (fields.size() == 1 ? "" : "s"));
    ov.block_m = vals[0];
    ov.block_n = vals[1];
    ov.num_stages = vals[2];
    ov.pipelined = vals[3];
    ov.multicast = vals[4];
    ov.group_n = vals[5];
    ov.split_k = vals[6];
    const std::string where = std::string(kConfigEnv) + "='" + v + "': ";
    if (ov.block_m != 64 && ov.block_m != 128 && ov.block_m != 192 && ov.block_m != 256)
        fail(where + "block_m must be 64, 128, 192 or 256");
    if (ov.block_n < 16 || ov.block_n > heuristics::kSm90Fp8MaxBlockN || ov.block_n % 16 != 0)
        fail(where + "block_n must be a multiple of 16 in [16, " + std::to_string(heuristics::kSm90Fp8MaxBlockN) + "]");
    if (ov.num_stages != 0 && (ov.num_stages < heuristics::kSm90Fp8MinStages || ov.num_stages > heuristics::kSm90Fp8MaxStages))
        fail(where + "stages must be 0 (auto) or in [" + std::to_string(heuristics::kSm90Fp8MinStages) + ", " +
             std::to_string(heuristics::kSm90Fp8MaxStages) + "]");
    if (ov.pipelined < 0 || ov.pipelined > 1) fail(where + "pipelined must be 0 (off) or 1 (two scratch accumulators)");
    if (ov.multicast < 0 || ov.multicast > 2) fail(where + "multicast must be 0 (off), 1 (share B) or 2 (share A)");
    if (ov.group_n > 1024) fail(where + "group_n must be 0 (default) or in [1, 1024]");
    if (ov.split_k > heuristics::kSm90Fp8MaxSplitK) fail(where + "split_k must be 0 or 1 (off) or in [2, " +
                                                        std::to_string(heuristics::kSm90Fp8MaxSplitK) + "]");
    if (ov.split_k > 1 && (ov.block_m > 128 || ov.multicast != 0))
        fail(where + "split_k needs block_m 64 or 128 and multicast 0");
    if (ov.pipelined == 1 && ov.block_n > heuristics::kSm90Fp8MaxBlockNPipelined)
        fail(where + "pipelined 1 needs block_n <= " + std::to_string(heuristics::kSm90Fp8MaxBlockNPipelined));
    if (ov.block_m == 256 && ov.pipelined == 1) fail(where + "block_m 256 needs pipelined 0 (no registers for it)");
    if (ov.block_m == 192 && ov.block_n > heuristics::kSm90Fp8MaxBlockN192)
        fail(where + "block_m 192 needs block_n <= " + std::to_string(heuristics::kSm90Fp8MaxBlockN192));
    if (ov.block_m == 192 && ov.pipelined == 1 && ov.block_n > heuristics::kSm90Fp8MaxBlockN192Pipelined)
        fail(where + "block_m 192 with pipelined 1 needs block_n <= " +
             std::to_string(heuristics::kSm90Fp8MaxBlockN192Pipelined));
    if (ov.block_m == 256 && ov.block_n > heuristics::kSm90Fp8MaxBlockN256)
        fail(where + "block_m 256 needs block_n <= " + std::to_string(heuristics::kSm90Fp8MaxBlockN256));
    return ov;
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
    check(o.lda < (int64_t(1) << 32) && o.ldb < (int64_t(1) << 32) && o.ldd < (int64_t(1) << 32),
          "row strides must be < 2^32 elements");
    check(o.sfa_stride >= m && o.sfa_stride % 4 == 0,
          "sfa_stride must be >= M and a multiple of 4 (TMA-aligned M-major scales)");
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
    return q;
}

// DG_FP8_GEMM_CONFIG is parsed again only after reload_settings() (a new settings generation), so a cached
// call compares one pointer here. Called with the config memo's lock held.
void Fp8Gemm1d2dTraits::set_override(const char*, const jit::Settings& settings,
                                     gemm_launch::ConfigQuery& q) {
    static const jit::Settings* parsed_for = nullptr;
    static ConfigOverride parsed;
    if (parsed_for != &settings) {
        parsed = parse_sm90_fp8_config_override(settings.fp8_gemm_config);
        parsed_for = &settings;
    }
    const int forced[7] = {parsed.block_m, parsed.block_n, parsed.num_stages, parsed.pipelined, parsed.multicast,
                           parsed.group_n, parsed.split_k};
    std::memcpy(q.forced, forced, sizeof(forced));
}

heuristics::Sm90GemmConfig Fp8Gemm1d2dTraits::choose(const char* op, const gemm_launch::ConfigQuery& q) {
    ConfigOverride ov;
    ov.block_m = q.forced[0], ov.block_n = q.forced[1], ov.num_stages = q.forced[2];
    ov.pipelined = q.forced[3], ov.multicast = q.forced[4], ov.group_n = q.forced[5], ov.split_k = q.forced[6];
    const int m = q.m, n = q.n, k = q.k, num_sms = q.num_sms, smem_limit = q.smem_limit;
    const GemmGroupedMode mode = GemmGroupedMode(q.mode);
    Config config = mode == GemmGroupedMode::kNone
                        ? heuristics::choose_sm90_fp8_config(m, n, k, num_sms, smem_limit, ov.chooser(),
                                                             gemm_launch::block_multiples(q),
                                                             Epilogue(q.epilogue) != Epilogue::kAccumDirect)
                        : heuristics::choose_sm90_fp8_grouped_config(m, n, k, num_sms, smem_limit, q.rows_per_group,
                                                                     q.groups,
                                                                     mode == GemmGroupedMode::kMGroupedMasked ||
                                                                         mode == GemmGroupedMode::kHeadBatched,
                                                                     ov.chooser(),
                                                                     gemm_launch::block_multiples(q));
    if (is_contiguous(mode) && !q.zero_padding && ov.chooser() == heuristics::Sm90Fp8Chooser::kModel)
        config = heuristics::sm90_fp8_contiguous_unzeroed_config(config, m, n, num_sms, smem_limit,
                                                                 gemm_launch::block_multiples(q));
    if (ov.active()) {
        config.block_m = ov.block_m;
        config.block_n = ov.block_n;
        config.pipelined = ov.pipelined;
        config.multicast = ov.multicast;
        if (ov.group_n != 0) config.group_n = ov.group_n;
        config.split_k = std::max(1, ov.split_k);
        const int max_stages = heuristics::sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit);
        config.num_stages = ov.num_stages != 0 ? ov.num_stages : max_stages;
        if (heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages) > smem_limit)
            fail_op(op, std::string(kConfigEnv) + ": " + heuristics::sm90_fp8_to_string(config) + " exceeds the shared memory limit (" +
                 std::to_string(smem_limit) + " bytes)");
        if (mode != GemmGroupedMode::kNone) {
            // The contiguous schedulers pair N blocks of one M block (multicast 2, sharing A), or M blocks of 64
            // or 128 rows (multicast 1, sharing B when both blocks hold one group: ContiguousLayoutScheduler);
            // they look groups up per 128-row segment, which three 64-row math warpgroups (BLOCK_M 192) do not
            // fit. The masked one pairs M blocks of one group (multicast 1, sharing B). The others pair none.
            if (is_contiguous(mode) ? config.multicast == 1 && config.block_m > 128
                                    : !(is_masked(mode) && config.multicast == 1))
                config.multicast = 0;
            if (config.split_k > 1)
                fail_op(op, std::string(kConfigEnv) + ": split_k is for the dense GEMM only; got " + heuristics::sm90_fp8_to_string(config));
            if (config.block_m == 192 && mode != GemmGroupedMode::kMGroupedMasked && mode != GemmGroupedMode::kHeadBatched)
                fail_op(op, std::string(kConfigEnv) + ": block_m 192 is for the dense and masked GEMMs only; got " +
                                heuristics::sm90_fp8_to_string(config));
        }
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
                                                      config.num_stages, config.pipelined, config.multicast) /
                          heuristics::kFp8ModelClkPerUs);
        log_config(op, m, n, k, num_sms, heuristics::sm90_fp8_to_string(config) + modelled);
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
    set_grouped_layout(op, p, key);
    return key;
}

// The entry point's body: the scheduler and epilogue types, then the kernel with its compile-time choices.
constexpr char kBodyTemplate[] =
    "    using Scheduler = {scheduler};\n"
    "    using Epilogue = deep_gemm::{epilogue};\n"
    "    deep_gemm::sm90_fp8_gemm_1d2d_impl<{bm}u, {bn}u, {stages}, {group_n}u, {m}u, {n}u, {k}u, Scheduler, Epilogue, "
    "{pipelined}u, {cluster}, {multicast_on_a}>(\n"
    "        {args});\n";
// The host sizes shared memory with its own formula: make the device layout agree.
constexpr char kTrailerTemplate[] =
    "static_assert(deep_gemm::Sm90Fp8Gemm1d2dLayout<{bm}, {bn}, {stages}>::kSmemBytes == {smem}, "
    "\"host/device shared memory size mismatch\");\n";

GemmKernelSource Fp8Gemm1d2dTraits::source(const GemmKernelKey& key) {
    GemmKernelSource src;
    src.name = "sm90_fp8_gemm_1d2d";
    src.symbol = make_symbol(key);
    src.num_threads = heuristics::sm90_fp8_num_threads(key.block_m);
    src.smem_bytes = heuristics::sm90_fp8_smem_bytes(key.block_m, key.block_n, key.num_stages);
    const unsigned bm = key.block_m, bn = key.block_n;
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
                    fmt::arg("multicast_on_a", key.multicast == 2 ? "true" : "false"),
                    fmt::arg("args", split ? param_names<Sm90Fp8Gemm1d2dSplitKParams>() : param_names<Sm90Fp8Gemm1d2dParams>()));
    const std::string trailer = fmt::format(kTrailerTemplate, fmt::arg("bm", bm), fmt::arg("bn", bn),
                                            fmt::arg("stages", key.num_stages), fmt::arg("smem", src.smem_bytes));
    const KernelEntry entry{prelude, src.symbol, src.num_threads, body, trailer};
    src.code = split ? render_kernel_source<Sm90Fp8Gemm1d2dSplitKParams>(entry) : render_kernel_source<Sm90Fp8Gemm1d2dParams>(entry);
    return src;
}

void Fp8Gemm1d2dTraits::prepare(const char* op, const GemmDesc& desc, const Config& config, const GemmKernelKey& key,
                                int num_sms, gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    // Tensor maps (innermost dimension first): a, b, sfa 3-D {inner, outer, group}; d 2-D.
    const int num_kb = (k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
    const int d_swizzle = heuristics::sm90_fp8_d_swizzle_bytes(config.block_n);
    const uint64_t a_groups = a_per_group(p) ? uint64_t(p.num_groups) : 1;
    const uint64_t b_groups = p.mode != GemmGroupedMode::kNone ? uint64_t(p.num_groups) : 1;
    const std::string what = std::string(op) + ": tensor map for ";
    CUtensorMap* t = prepared.tmaps;
    if (is_heads(p)) {
        // x [M, G, K] as {K, G, M} (increasing strides); the box {128, 1, BLOCK_M} lands as {128, BLOCK_M} would.
        const uint64_t dims[3] = {uint64_t(k), uint64_t(p.num_groups), uint64_t(m)};
        const uint64_t strides[2] = {uint64_t(o.a_group_stride), uint64_t(o.lda)};
        const uint32_t box[3] = {uint32_t(heuristics::kSm90Fp8BlockK), 1u, uint32_t(config.block_m)};
        t[0] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, o.a, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, (what + "a").c_str());
    } else {
        t[0] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.a, uint64_t(k), uint64_t(m), a_groups, uint64_t(o.lda),
                        uint64_t(o.a_group_stride), heuristics::kSm90Fp8BlockK,
                        uint32_t(key.multicast == 2 ? config.block_m / 2 : config.block_m), CU_TENSOR_MAP_SWIZZLE_128B,
                        (what + "a").c_str());
    }
    t[1] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, o.b, uint64_t(k), uint64_t(n), b_groups, uint64_t(o.ldb),
                        uint64_t(o.b_group_stride), heuristics::kSm90Fp8BlockK,
                        uint32_t(key.multicast == 1 ? config.block_n / 2 : config.block_n), CU_TENSOR_MAP_SWIZZLE_128B,
                        (what + "b").c_str());
    t[2] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, o.sfa, uint64_t(m), uint64_t(num_kb), a_groups,
                        uint64_t(o.sfa_stride) * 4, uint64_t(o.sfa_group_stride) * 4, uint32_t(config.block_m), 1,
                        CU_TENSOR_MAP_SWIZZLE_NONE, (what + "sfa").c_str());
    std::memset(&t[3], 0, sizeof(t[3]));
    // masked: [G * max_m, N]; heads: [M, G * N]
    const uint64_t d_rows = is_heads(p) ? uint64_t(m) : uint64_t(m) * a_groups;
    const uint64_t d_cols = is_heads(p) ? uint64_t(n) * a_groups : uint64_t(n);
    if (key.epilogue == int(Epilogue::kBf16Tma))
        t[3] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o.d, d_cols, d_rows, uint64_t(o.ldd) * 2,
                            uint32_t(d_swizzle / 2), 64u, swizzle_of(d_swizzle), (what + "d").c_str());

    const int64_t m_blocks = int64_t(a_groups) * ((m + config.block_m - 1) / config.block_m);
    const int64_t n_blocks = (n + config.block_n - 1) / config.block_n;
    jit::LaunchConfig& launch = prepared.launch;
    const int64_t units = m_blocks * n_blocks * std::max<int64_t>(1, key.split_k);
    launch.grid[0] = key.multicast == 0 ? persistent_grid(num_sms, units)
                     : key.multicast == 1 ? persistent_pair_grid(num_sms, (m_blocks + 1) / 2 * n_blocks)
                                          : persistent_pair_grid(num_sms, m_blocks * ((n_blocks + 1) / 2));
    launch.block[0] = unsigned(config.num_threads());
    launch.smem_bytes = unsigned(heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages));
    launch.cluster_x = key.multicast != 0 ? 2u : 1u;
    if (key.split_k > 1) {
        prepared.split_k_tiles = size_t(m_blocks * n_blocks);
        prepared.split_k_partial_bytes = prepared.split_k_tiles * key.split_k * config.block_m * config.block_n * 4;
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
    auto params = fill_params<Sm90Fp8Gemm1d2dParams>(desc, prepared);
    launch_with_params(*prepared.kernel, launch, params);
}

}  // namespace deep_gemm::kernels
