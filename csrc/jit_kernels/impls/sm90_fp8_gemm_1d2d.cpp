// Host side of the SM90 FP8 1D2D GEMM: config choice (memoized per shape), source generation, kernel
// lookup (memoized per config key), TMA descriptors and launch; a cached call reuses all of it from a
// per-thread memo keyed by its arguments.
#include "sm90_fp8_gemm_1d2d.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "../../jit/direct_mapped_cache.hpp"
#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"
#include "../../jit/log.hpp"
#include "../../jit/settings.hpp"
#include "../heuristics/sm90_fp8.hpp"

namespace deep_gemm::kernels {

namespace {

constexpr const char* kOpName = "fp8_gemm_nt";

const char* op_name(GemmGroupedMode mode) {
    switch (mode) {
        case GemmGroupedMode::kMGroupedContiguous: return "m_grouped_fp8_gemm_nt_contiguous";
        case GemmGroupedMode::kMGroupedContiguousPsum: return "m_grouped_fp8_gemm_nt_contiguous (psum layout)";
        case GemmGroupedMode::kMGroupedMasked: return "m_grouped_fp8_gemm_nt_masked";
        default: return kOpName;
    }
}

std::string make_symbol(const Sm90Fp8GemmKernelKey& key) {
    static const char* const kModes[] = {"", "_contig", "_masked", "_kgrouped", "_psum"};
    static const char* const kPadding[] = {"", "_zpad", "_keeppad"};
    return "sm90_fp8_gemm_1d2d_bm" + std::to_string(key.block_m) + "_bn" + std::to_string(key.block_n) + "_s" +
           std::to_string(key.num_stages) + "_g" + std::to_string(key.group_n) + "_m" + std::to_string(key.m) +
           "_n" + std::to_string(key.n) + "_k" + std::to_string(key.k) + (key.direct_store ? "_direct" : "") +
           (key.pipelined == 1 ? "_pp" : "") + (key.multicast == 1 ? "_mcb" : key.multicast == 2 ? "_mca" : "") +
           kModes[key.mode] + kPadding[key.padding] + (key.psum_align != 0 ? "_al" + std::to_string(key.psum_align) : "");
}

// The scheduler type (template arguments included) of a kernel key.
std::string scheduler_type(const Sm90Fp8GemmKernelKey& key) {
    const std::string tile = std::to_string(key.block_m) + "u, " + std::to_string(key.block_n) + "u, " +
                             std::to_string(key.group_n) + "u";
    static const char* const kPadding[] = {"kUnspecified", "kZero", "kUntouched"};
    switch (GemmGroupedMode(key.mode)) {
        case GemmGroupedMode::kMGroupedContiguous:
        case GemmGroupedMode::kMGroupedContiguousPsum:
            return "deep_gemm::ContiguousLayoutScheduler<" + tile + ", " +
                   (key.mode == int(GemmGroupedMode::kMGroupedContiguousPsum) ? "true" : "false") +
                   ", deep_gemm::PaddingRows::" + kPadding[key.padding] + ", " +
                   std::to_string(key.psum_align != 0 ? key.psum_align : 128) + "u>";
        case GemmGroupedMode::kMGroupedMasked: return "deep_gemm::MaskedGroupedScheduler<" + tile + ">";
        default: break;
    }
    return std::string("deep_gemm::") +
           (key.multicast == 1 ? "ClusterPairScheduler" : key.multicast == 2 ? "ClusterPairNScheduler" : "GroupedOrderScheduler") +
           "<" + tile + ">";
}

using ConfigOverride = Sm90Fp8ConfigOverride;

struct ShapeKey {
    int m, n, k, num_sms, smem_limit;
    int mode, rows_per_group;  // grouped: GemmGroupedMode and (masked) the expected rows per group
    ConfigOverride ov;
    bool operator==(const ShapeKey&) const = default;
};

struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const noexcept {
        const size_t h = hash_shape(s.m, s.n, s.k, s.num_sms, s.smem_limit,
                                    uint64_t(uint32_t(s.ov.block_m)) | uint64_t(uint32_t(s.ov.block_n)) << 16 |
                                        uint64_t(uint32_t(s.ov.num_stages)) << 32 |
                                        uint64_t(uint32_t(s.ov.pipelined)) << 48 | uint64_t(uint32_t(s.ov.multicast)) << 56);
        return h ^ size_t((uint64_t(uint32_t(s.rows_per_group)) << 8 | uint64_t(s.mode)) * 0x9E3779B97F4A7C15ull);
    }
};

// Process-wide memo tables (this translation unit owns them).
std::mutex g_config_mutex;
std::unordered_map<ShapeKey, heuristics::Sm90Fp8GemmConfig, ShapeKeyHash> g_configs;
jit::KernelTable<Sm90Fp8GemmKernelKey, Sm90Fp8GemmKernelKeyHash> g_kernels;

[[noreturn]] void fail(const std::string& what);
[[noreturn]] void fail_op(const char* op, const std::string& what);

constexpr const char* kConfigEnv = "DG_FP8_GEMM_CONFIG";

}  // namespace

Sm90Fp8ConfigOverride parse_sm90_fp8_config_override(const std::string& text) {
    const char* v = text.c_str();
    ConfigOverride ov;
    if (v == nullptr || *v == '\0') return ov;
    if (std::strcmp(v, "legacy") == 0) {
        ov.block_m = -1;
        return ov;
    }
    if (std::strcmp(v, "rules") == 0) {
        ov.block_m = -2;
        return ov;
    }
    int vals[5] = {0, 0, 0, 0, 0};
    int count = 0;
    const char* p = v;
    while (true) {
        if (count == 5) fail(std::string(kConfigEnv) + "='" + v + "': at most 5 fields");
        char* end = nullptr;
        const long x = std::strtol(p, &end, 10);
        if (end == p || x < 0 || x > 100000) fail(std::string(kConfigEnv) + "='" + v + "': expected "
                                                  "\"block_m,block_n,stages[,pipelined[,multicast]]\" (non-negative integers), \"rules\" or \"legacy\"");
        vals[count++] = int(x);
        if (*end == '\0') break;
        if (*end != ',') fail(std::string(kConfigEnv) + "='" + v + "': fields are separated by ','");
        p = end + 1;
    }
    if (count < 3)
        fail(std::string(kConfigEnv) + "='" + v + "': expected \"block_m,block_n,stages[,pipelined[,multicast]]\"");
    ov.block_m = vals[0];
    ov.block_n = vals[1];
    ov.num_stages = vals[2];
    ov.pipelined = vals[3];
    ov.multicast = vals[4];
    const std::string where = std::string(kConfigEnv) + "='" + v + "': ";
    if (ov.block_m != 64 && ov.block_m != 128 && ov.block_m != 256) fail(where + "block_m must be 64, 128 or 256");
    if (ov.block_n < 16 || ov.block_n > heuristics::kSm90Fp8MaxBlockN || ov.block_n % 16 != 0)
        fail(where + "block_n must be a multiple of 16 in [16, " + std::to_string(heuristics::kSm90Fp8MaxBlockN) + "]");
    if (ov.num_stages != 0 && (ov.num_stages < heuristics::kSm90Fp8MinStages || ov.num_stages > heuristics::kSm90Fp8MaxStages))
        fail(where + "stages must be 0 (auto) or in [" + std::to_string(heuristics::kSm90Fp8MinStages) + ", " +
             std::to_string(heuristics::kSm90Fp8MaxStages) + "]");
    if (ov.pipelined < 0 || ov.pipelined > 1) fail(where + "pipelined must be 0 (off) or 1 (two scratch accumulators)");
    if (ov.multicast < 0 || ov.multicast > 2) fail(where + "multicast must be 0 (off), 1 (share B) or 2 (share A)");
    if (ov.pipelined == 1 && ov.block_n > heuristics::kSm90Fp8MaxBlockNPipelined)
        fail(where + "pipelined 1 needs block_n <= " + std::to_string(heuristics::kSm90Fp8MaxBlockNPipelined));
    if (ov.block_m == 256 && ov.pipelined == 1) fail(where + "block_m 256 needs pipelined 0 (no registers for it)");
    if (ov.block_m == 256 && ov.block_n > heuristics::kSm90Fp8MaxBlockN256)
        fail(where + "block_m 256 needs block_n <= " + std::to_string(heuristics::kSm90Fp8MaxBlockN256));
    return ov;
}

namespace {

// The config of a shape class. Grouped modes: m = the rows the cost model sees (sum of M, or expected_m * G
// for masked), rows_per_group = expected_m (masked) or 0.
heuristics::Sm90Fp8GemmConfig get_config(const char* op, int m, int n, int k, int num_sms, int smem_limit,
                                         GemmGroupedMode mode, int rows_per_group) {
    const jit::Settings& settings = jit::settings();
    std::lock_guard<std::mutex> lock(g_config_mutex);
    // DG_FP8_GEMM_CONFIG is parsed again only after reload_settings() (a new settings generation), so a
    // cached call compares one pointer here.
    static const jit::Settings* override_parsed_for = nullptr;
    static ConfigOverride override_value;
    if (override_parsed_for != &settings) {
        override_value = parse_sm90_fp8_config_override(settings.fp8_gemm_config);
        override_parsed_for = &settings;
    }
    const ShapeKey key{m, n, k, num_sms, smem_limit, int(mode), rows_per_group, override_value};
    if (auto it = g_configs.find(key); it != g_configs.end()) return it->second;
    heuristics::Sm90Fp8GemmConfig config =
        mode == GemmGroupedMode::kNone
            ? heuristics::choose_sm90_fp8_config(m, n, k, num_sms, smem_limit, key.ov.chooser())
            : heuristics::choose_sm90_fp8_grouped_config(m, n, k, num_sms, smem_limit, rows_per_group,
                                                         key.ov.chooser());
    if (key.ov.active()) {
        config.block_m = key.ov.block_m;
        config.block_n = key.ov.block_n;
        config.pipelined = key.ov.pipelined;
        config.multicast = key.ov.multicast;
        const int max_stages = heuristics::sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit);
        config.num_stages = key.ov.num_stages != 0 ? key.ov.num_stages : max_stages;
        if (heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages) > smem_limit)
            fail_op(op, std::string(kConfigEnv) + ": " + heuristics::to_string(config) + " exceeds the shared memory limit (" +
                 std::to_string(smem_limit) + " bytes)");
        if (mode != GemmGroupedMode::kNone) {
            // The grouped schedulers pair no CTAs, and their per-row rules are written for one 64-row wave
            // per math warpgroup (BLOCK_M 64 or 128; the kernel static_asserts it too).
            config.multicast = 0;
            if (config.block_m == 256)
                fail_op(op, std::string(kConfigEnv) + ": block_m 256 is for the dense GEMM only; got " +
                                heuristics::to_string(config));
        }
    }
    // With the config model's time for this config (forced ones too), for calibrating the model by sweeps.
    if (jit::settings().print_configs) {
        char modelled[64];
        std::snprintf(modelled, sizeof(modelled), " modelled=%.1fus",
                      heuristics::sm90_fp8_model_cost(m, n, k, num_sms, config.block_m, config.block_n, config.num_stages,
                                                      config.pipelined, config.multicast) /
                          heuristics::kFp8ModelClkPerUs);
        log_config(op, m, n, k, num_sms, heuristics::to_string(config) + modelled);
    }
    g_configs.emplace(key, config);
    return config;
}

void fail(const std::string& what) { throw jit::Error(std::string(kOpName) + ": " + what); }
[[noreturn]] void fail_op(const char* op, const std::string& what) { throw jit::Error(std::string(op) + ": " + what); }

}  // namespace

Sm90Fp8GemmKernelKey sm90_fp8_kernel_key(const heuristics::Sm90Fp8GemmConfig& config) {
    Sm90Fp8GemmKernelKey key;
    key.block_m = config.block_m;
    key.block_n = config.block_n;
    key.num_stages = config.num_stages;
    key.group_n = config.group_n;
    key.pipelined = config.pipelined;
    key.multicast = config.multicast;
    return key;
}

Sm90Fp8GemmSource sm90_fp8_gemm_1d2d_source(const Sm90Fp8GemmKernelKey& key) {
    Sm90Fp8GemmSource src;
    src.name = "sm90_fp8_gemm_1d2d";
    src.symbol = make_symbol(key);
    src.num_threads = heuristics::sm90_fp8_num_threads(key.block_m);
    src.smem_bytes = heuristics::sm90_fp8_smem_bytes(key.block_m, key.block_n, key.num_stages);
    const std::string tmap = "const __grid_constant__ deep_gemm::TmaDescriptor";
    const std::string bm = std::to_string(key.block_m) + "u", bn = std::to_string(key.block_n) + "u",
                      g = std::to_string(key.group_n) + "u";
    // 256-row tiles: each of the two math warpgroups stores 128 rows (two 64-row waves).
    const std::string epilogue_rows = key.block_m == 256 ? ", 128u" : "";
    src.code = "#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>\n\n"
               "extern \"C\" __global__ void __launch_bounds__(" +
               std::to_string(src.num_threads) + ", 1)\n" + src.symbol + "(" + tmap + " tmap_a, " + tmap +
               " tmap_b, " + tmap + " tmap_sfa, " + tmap +
               " tmap_d,\n    const float* sfb, void* d, unsigned int ldd, const int* grouped, unsigned int m,"
               " unsigned int n, unsigned int k, unsigned int num_groups) {\n"
               "    using Scheduler = " + scheduler_type(key) + ";\n"
               "    using Epilogue = deep_gemm::" + (key.direct_store ? "Bf16DirectStoreEpilogue" : "Bf16TmaStoreEpilogue") +
               "<" + bm + ", " + bn + epilogue_rows + ">;\n"
               "    deep_gemm::sm90_fp8_gemm_1d2d_impl<" + bm + ", " + bn + ", " +
               std::to_string(key.num_stages) + ", " + g + ", " + std::to_string(key.m) +
               "u, " + std::to_string(key.n) + "u, " + std::to_string(key.k) +
               "u, Scheduler, Epilogue, " + std::to_string(key.pipelined) + "u, " +
               (key.multicast != 0 ? "2" : "1") + ", " + (key.multicast == 2 ? "true" : "false") +
               ">(\n        tmap_a, tmap_b, tmap_sfa, tmap_d, sfb, d, ldd, grouped, m, n, k, num_groups);\n}\n"
               // The host sizes shared memory with its own formula: make the device layout agree.
               "static_assert(deep_gemm::Sm90Fp8Gemm1d2dLayout<" +
               std::to_string(key.block_m) + ", " + std::to_string(key.block_n) + ", " +
               std::to_string(key.num_stages) + ">::kSmemBytes == " + std::to_string(src.smem_bytes) +
               ", \"host/device shared memory size mismatch\");\n";
    return src;
}

namespace {

// Everything a call derives from its arguments (except the stream): config, kernel, launch shape, tensor
// maps. A cached call finds it in a small per-thread memo keyed by those arguments and only launches.
struct PreparedLaunch {
    const jit::LoadedKernel* kernel = nullptr;
    jit::LaunchConfig launch;
    CUtensorMap tmap_a, tmap_b, tmap_sfa, tmap_d;
};

// The memo key: the arguments a PreparedLaunch depends on, plus the settings generation (which carries
// DG_FP8_GEMM_CONFIG); not sfb nor the group layout, plain kernel arguments. Zero-initialised and compared
// bytewise.
struct LaunchKey {
    const void *a, *b, *sfa, *d;
    int64_t lda, ldb, ldd, sfa_stride;
    int64_t a_group_stride, b_group_stride, sfa_group_stride;
    const jit::Settings* settings;
    int m, n, k, num_sms, device;
    int num_groups, expected_m, alignment;
    uint8_t dims_mask;  // compiled m/n/k as bits 0/1/2
    uint8_t mode;       // GemmGroupedMode
    bool pdl, zero_padding;
};

// Per thread, so no lock; a collision just prepares again.
thread_local jit::DirectMappedCache<LaunchKey, PreparedLaunch, 16> t_launches;

// 3-D tiled tensor map {inner, outer, groups}: `row_stride_bytes` between rows, `group_stride_bytes` between
// groups (unused, but must be valid, when there is one group).
CUtensorMap make_tmap_3d(CUtensorMapDataType dtype, const void* base, uint64_t inner, uint64_t outer, uint64_t groups,
                         uint64_t row_stride_bytes, uint64_t group_stride_bytes, uint32_t box_inner, uint32_t box_outer,
                         CUtensorMapSwizzle swizzle, const std::string& what) {
    const uint64_t dims[3] = {inner, outer, groups};
    const uint64_t strides[2] = {row_stride_bytes, groups > 1 ? group_stride_bytes : row_stride_bytes * std::max<uint64_t>(outer, 1)};
    const uint32_t box[3] = {box_inner, box_outer, 1};
    return jit::encode_tensor_map(dtype, 3, base, dims, strides, box, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  what.c_str());
}

PreparedLaunch prepare(const Fp8Gemm1d2dArgs& args, const Fp8GroupedArgs& g, const CompiledDims& compiled) {
    const char* op = op_name(g.mode);
    const int m = args.m, n = args.n, k = args.k;
    const bool masked = g.mode == GemmGroupedMode::kMGroupedMasked;
    const bool contiguous = g.mode == GemmGroupedMode::kMGroupedContiguous ||
                            g.mode == GemmGroupedMode::kMGroupedContiguousPsum;
    const jit::DeviceInfo& dev = sm90_device_info(op, args.device);
    const int num_sms = usable_sms(dev, args.num_sms);
    const int rows_per_group = masked ? std::max(1, std::min(g.expected_m > 0 ? g.expected_m : m, m)) : 0;
    const int cost_m = masked ? int(std::min<int64_t>(int64_t(rows_per_group) * g.num_groups, INT32_MAX)) : m;
    const auto config = get_config(op, cost_m, n, k, num_sms, dev.max_smem_per_block_optin, g.mode, rows_per_group);
    if (config.num_stages < heuristics::kSm90Fp8MinStages) fail_op(op, "not enough shared memory on this device");
    if (contiguous && g.alignment % config.block_m != 0)
        fail_op(op, "the group alignment (" + std::to_string(g.alignment) + " rows) must be a multiple of BLOCK_M");

    Sm90Fp8GemmKernelKey key = sm90_fp8_kernel_key(config);
    // Clusters need two CTAs per cluster in the persistent grid.
    if (num_sms < 2) key.multicast = 0;
    compiled.apply(key, m, n, k);
    // The TMA store needs a 16-byte aligned base and a row stride that is a multiple of 16 bytes.
    key.direct_store = !aligned(args.d, 16) || (args.ldd % 8) != 0;
    key.mode = int(g.mode);
    if (contiguous) {
        key.padding = g.ensure_zero_padding ? 1 : 2;
        if (g.mode == GemmGroupedMode::kMGroupedContiguousPsum) key.psum_align = g.alignment;
    }

    PreparedLaunch p;
    p.kernel = &g_kernels.get(args.device, key, [&] { return sm90_fp8_gemm_1d2d_source(key).kernel_source(); });

    // Tensor maps (innermost dimension first); A, B and sfa are 3-D {inner, outer, group}.
    const int num_kb = (k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
    const int d_swizzle = heuristics::sm90_fp8_d_swizzle_bytes(config.block_n);
    const uint64_t a_groups = masked ? uint64_t(g.num_groups) : 1;
    const uint64_t b_groups = g.mode != GemmGroupedMode::kNone ? uint64_t(g.num_groups) : 1;
    const std::string what = std::string(op) + ": tensor map for ";
    p.tmap_a = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.a, uint64_t(k), uint64_t(m), a_groups, uint64_t(args.lda),
                            uint64_t(g.a_group_stride), heuristics::kSm90Fp8BlockK,
                            uint32_t(key.multicast == 2 ? config.block_m / 2 : config.block_m), CU_TENSOR_MAP_SWIZZLE_128B,
                            what + "a");
    p.tmap_b = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.b, uint64_t(k), uint64_t(n), b_groups, uint64_t(args.ldb),
                            uint64_t(g.b_group_stride), heuristics::kSm90Fp8BlockK,
                            uint32_t(key.multicast == 1 ? config.block_n / 2 : config.block_n), CU_TENSOR_MAP_SWIZZLE_128B,
                            what + "b");
    p.tmap_sfa = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, args.sfa, uint64_t(m), uint64_t(num_kb), a_groups,
                              uint64_t(args.sfa_stride) * 4, uint64_t(g.sfa_group_stride) * 4, uint32_t(config.block_m), 1,
                              CU_TENSOR_MAP_SWIZZLE_NONE, what + "sfa");
    std::memset(&p.tmap_d, 0, sizeof(p.tmap_d));
    const uint64_t d_rows = uint64_t(m) * a_groups;  // masked: [G * max_m, N]
    if (!key.direct_store)
        p.tmap_d = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, args.d, uint64_t(n), d_rows, uint64_t(args.ldd) * 2,
                                uint32_t(d_swizzle / 2), 64u, swizzle_of(d_swizzle), (what + "d").c_str());

    const int64_t m_blocks = int64_t(a_groups) * ((m + config.block_m - 1) / config.block_m);
    const int64_t n_blocks = (n + config.block_n - 1) / config.block_n;
    p.launch.grid[0] = key.multicast == 0 ? persistent_grid(num_sms, m_blocks * n_blocks)
                       : key.multicast == 1 ? persistent_pair_grid(num_sms, (m_blocks + 1) / 2 * n_blocks)
                                            : persistent_pair_grid(num_sms, m_blocks * ((n_blocks + 1) / 2));
    p.launch.block[0] = unsigned(config.num_threads());
    p.launch.smem_bytes = unsigned(heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages));
    p.launch.cluster_x = key.multicast != 0 ? 2u : 1u;
    p.launch.pdl = args.pdl;
    return p;
}

// The common implementation of the dense and M-grouped ops.
void run(const Fp8Gemm1d2dArgs& args, const Fp8GroupedArgs& g) {
    const char* op = op_name(g.mode);
    auto check = [op](bool ok, const char* what) {
        if (!ok) fail_op(op, what);
    };
    const int m = args.m, n = args.n, k = args.k;
    const bool grouped = g.mode != GemmGroupedMode::kNone;
    const bool masked = g.mode == GemmGroupedMode::kMGroupedMasked;
    check(m >= 0 && n >= 0 && k >= 0, "negative problem size");
    check(!grouped || g.num_groups > 0, "num_groups must be positive");
    if (m == 0 || n == 0) return;
    check(k != 0, "K == 0 must be handled by the caller (D = C or zeros)");
    if (k % 16 != 0) fail_op(op, "K must be a multiple of 16 (16-byte aligned FP8 rows); got " + std::to_string(k));
    check(args.a && args.b && args.sfa && args.sfb && args.d, "null pointer argument");
    check(!grouped || g.grouped, masked ? "masked_m is null" : "grouped_layout is null");
    check(aligned(args.a, 16) && aligned(args.b, 16) && aligned(args.sfa, 16), "a, b and sfa must be 16-byte aligned");
    check(aligned(args.d, 2), "d must be 2-byte aligned");
    check(args.lda >= k && args.lda % 16 == 0, "lda must be >= K and a multiple of 16");
    check(args.ldb >= k && args.ldb % 16 == 0, "ldb must be >= K and a multiple of 16");
    check(args.ldd >= n, "ldd must be >= N");
    check(args.lda < (int64_t(1) << 32) && args.ldb < (int64_t(1) << 32) && args.ldd < (int64_t(1) << 32),
          "row strides must be < 2^32 elements");
    check(args.sfa_stride >= m && args.sfa_stride % 4 == 0,
          "sfa_stride must be >= M and a multiple of 4 (TMA-aligned M-major scales)");
    if (grouped) {
        check(g.b_group_stride >= int64_t(n) * args.ldb && g.b_group_stride % 16 == 0,
              "b_group_stride must cover one group ([N, K]) and be a multiple of 16");
        check(masked || (g.alignment > 0 && g.alignment % 128 == 0), "the group alignment must be a multiple of 128");
    }
    if (masked) {
        check(g.a_group_stride >= int64_t(m) * args.lda && g.a_group_stride % 16 == 0,
              "a_group_stride must cover one group ([max_m, K]) and be a multiple of 16");
        check(g.sfa_group_stride >= int64_t((k + 127) / 128) * args.sfa_stride && g.sfa_group_stride % 4 == 0,
              "sfa_group_stride must cover one group and be a multiple of 4");
        check(int64_t(g.num_groups) * m < (int64_t(1) << 32), "num_groups * max_m must be < 2^32");
    }

    const CompiledDims compiled = parse_compiled_dims(op, args.compiled_dims);

    LaunchKey key;
    std::memset(&key, 0, sizeof(key));  // padding takes part in the hash and compare
    key.a = args.a, key.b = args.b, key.sfa = args.sfa, key.d = args.d;
    key.lda = args.lda, key.ldb = args.ldb, key.ldd = args.ldd, key.sfa_stride = args.sfa_stride;
    key.settings = &jit::settings();
    key.m = m, key.n = n, key.k = k, key.num_sms = args.num_sms, key.device = args.device;
    key.dims_mask = uint8_t(compiled.m | compiled.n << 1 | compiled.k << 2);
    key.pdl = args.pdl;
    if (grouped) {
        key.a_group_stride = g.a_group_stride, key.b_group_stride = g.b_group_stride;
        key.sfa_group_stride = g.sfa_group_stride;
        key.num_groups = g.num_groups, key.expected_m = g.expected_m, key.alignment = g.alignment;
        key.mode = uint8_t(g.mode);
        key.zero_padding = g.ensure_zero_padding;
    }
    const PreparedLaunch* prepared = t_launches.find(key);
    if (prepared == nullptr) prepared = &t_launches.insert(key, prepare(args, g, compiled));

    const PreparedLaunch& p = *prepared;
    jit::LaunchConfig launch = p.launch;
    launch.stream = args.stream;
    const float* sfb = args.sfb;
    void* d = args.d;
    const int* grouped_ptr = g.grouped;
    unsigned int uldd = unsigned(args.ldd), um = unsigned(m), un = unsigned(n), uk = unsigned(k),
                 ug = unsigned(grouped ? g.num_groups : 1);
    void* kernel_args[] = {const_cast<CUtensorMap*>(&p.tmap_a), const_cast<CUtensorMap*>(&p.tmap_b),
                           const_cast<CUtensorMap*>(&p.tmap_sfa), const_cast<CUtensorMap*>(&p.tmap_d),
                           &sfb, &d, &uldd, &grouped_ptr, &um, &un, &uk, &ug};
    p.kernel->launch(launch, kernel_args);
}

}  // namespace

void sm90_fp8_gemm_1d2d(const Fp8Gemm1d2dArgs& args) { run(args, Fp8GroupedArgs{}); }

void sm90_m_grouped_fp8_gemm_1d2d(const Fp8Gemm1d2dArgs& args, const Fp8GroupedArgs& grouped) {
    if (grouped.mode != GemmGroupedMode::kMGroupedContiguous && grouped.mode != GemmGroupedMode::kMGroupedMasked &&
        grouped.mode != GemmGroupedMode::kMGroupedContiguousPsum)
        throw jit::Error("m_grouped_fp8_gemm: grouped mode must be contiguous (either layout) or masked");
    run(args, grouped);
}

}  // namespace deep_gemm::kernels
