// Host side of the SM90 BF16 GEMM: config choice (memoized per shape class; DG_BF16_GEMM_CONFIG can force
// the dense ops' config), source generation, kernel lookup (memoized per config key), TMA descriptors (built
// per call) and launch.
#include "sm90_bf16_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"
#include "../../jit/log.hpp"
#include "../../jit/settings.hpp"
#include "../heuristics/sm90_bf16.hpp"
#include "sm90_bf16_config_override.hpp"

namespace deep_gemm::kernels {

namespace {

using heuristics::Sm90Bf16Epilogue;

const char* op_name(GemmGroupedMode mode, const Bf16GemmArgs& args) {
    switch (mode) {
        case GemmGroupedMode::kMGroupedContiguous: return "m_grouped_bf16_gemm_contiguous";
        case GemmGroupedMode::kMGroupedContiguousPsum: return "m_grouped_bf16_gemm_contiguous (psum layout)";
        case GemmGroupedMode::kMGroupedMasked: return "m_grouped_bf16_gemm_masked";
        case GemmGroupedMode::kKGroupedContiguous: return "k_grouped_bf16_gemm_tn_contiguous";
        default: break;
    }
    if (args.a_k_major) return args.b_k_major ? "bf16_gemm_nt" : "bf16_gemm_nn";
    return args.b_k_major ? "bf16_gemm_tt" : "bf16_gemm_tn";
}

struct ShapeKey {
    int m, n, k, num_sms, smem_limit, mode, epilogue, out_bytes;
    bool b_mn_major;
    int rows_per_group;
    int groups;  // K-grouped: G (m, n, k per group); else 1
    // DG_BF16_GEMM_CONFIG (dense ops only; filled in by get_config): part of the key, so a changed value
    // (after reload_settings()) chooses again instead of reusing the old config.
    Sm90Bf16ConfigOverride ov;
    bool operator==(const ShapeKey&) const = default;
};

struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const noexcept {
        const size_t h = hash_shape(s.m, s.n, s.k, s.num_sms, s.smem_limit,
                                    uint64_t(s.mode) | uint64_t(s.epilogue) << 4 | uint64_t(s.out_bytes) << 8 |
                                        uint64_t(s.b_mn_major) << 16 | uint64_t(uint32_t(s.rows_per_group)) << 20 |
                                        uint64_t(uint32_t(s.groups)) << 44);
        const uint64_t ov = uint64_t(s.ov.block_m) | uint64_t(s.ov.block_n) << 8 | uint64_t(s.ov.num_stages) << 17 |
                            uint64_t(s.ov.multicast_request) << 21;
        return h ^ size_t(ov * 0x9E3779B97F4A7C15ull);
    }
};

// What get_config decides for a shape class.
struct ChosenConfig {
    heuristics::Sm90Bf16GemmConfig config;
    int multicast_request = 0;  // from DG_BF16_GEMM_CONFIG; 0 = none (Bf16GemmArgs::multicast decides)
};

// Process-wide memo tables (this translation unit owns them).
std::mutex g_config_mutex;
std::unordered_map<ShapeKey, ChosenConfig, ShapeKeyHash> g_configs;
jit::KernelTable<Sm90Bf16GemmKernelKey, Sm90Bf16GemmKernelKeyHash> g_kernels;

// Runs `f`, prefixing the op name to a ConfigError (the override's messages do not know the op).
template <typename F>
auto with_op_name(const char* op, F&& f) {
    try {
        return f();
    } catch (const jit::ConfigError& e) {
        throw jit::ConfigError(std::string(op) + ": " + e.what());
    }
}

// DG_BF16_GEMM_CONFIG of the current settings generation. Parsed again only after reload_settings(), so a
// call compares one pointer. Called with g_config_mutex held.
const Sm90Bf16ConfigOverride& current_override(const jit::Settings& settings) {
    static const jit::Settings* parsed_for = nullptr;
    static Sm90Bf16ConfigOverride parsed;
    if (parsed_for != &settings) {
        parsed = parse_sm90_bf16_config_override(settings.bf16_gemm_config);  // a throw leaves parsed_for stale
        parsed_for = &settings;
    }
    return parsed;
}

// The DG_PRINT_CONFIGS text: the config, and whether it was forced (with a forced multicast that is not
// legal for this shape / layout, which falls back to off).
std::string describe(const ChosenConfig& chosen, const ShapeKey& key) {
    std::string text = heuristics::to_string(chosen.config);
    if (!key.ov.active()) return text;
    text += std::string(" (forced by ") + kBf16ConfigEnv;
    if (chosen.multicast_request == 2 &&
        heuristics::choose_sm90_bf16_multicast(key.m, chosen.config, key.mode, key.b_mn_major, 2) == 1)
        text += "; multicast not legal here, off";
    return text + ")";
}

ChosenConfig get_config(const char* op, ShapeKey key) {
    const jit::Settings& settings = jit::settings();
    std::lock_guard<std::mutex> lock(g_config_mutex);
    if (key.mode == int(GemmGroupedMode::kNone))
        key.ov = with_op_name(op, [&] { return current_override(settings); });
    if (auto it = g_configs.find(key); it != g_configs.end()) return it->second;
    ChosenConfig chosen;
    if (key.ov.active()) {
        chosen.config = with_op_name(op, [&] {
            return apply_sm90_bf16_config_override(key.ov, key.b_mn_major, Sm90Bf16Epilogue(key.epilogue),
                                                   key.smem_limit);
        });
        chosen.multicast_request = key.ov.multicast_request;
    } else {
        chosen.config = heuristics::choose_sm90_bf16_config(key.m, key.n, key.k, key.num_sms, key.smem_limit,
                                                            key.b_mn_major, Sm90Bf16Epilogue(key.epilogue),
                                                            key.out_bytes, key.rows_per_group, key.groups);
    }
    log_config(op, key.m, key.n, key.k, key.num_sms, describe(chosen, key));
    g_configs.emplace(key, chosen);
    return chosen;
}

CUtensorMap make_tmap(CUtensorMapDataType dtype, int rank, const void* base, const uint64_t* dims,
                      const uint64_t* strides_bytes, const uint32_t* box, CUtensorMapSwizzle swizzle,
                      const std::string& what) {
    return jit::encode_tensor_map(dtype, unsigned(rank), base, dims, strides_bytes, box, swizzle,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, what.c_str());
}

std::string make_symbol(const Sm90Bf16GemmKernelKey& key) {
    static const char* const kModes[] = {"", "_contig", "_masked", "_kgrouped", "_psum"};
    static const char* const kEpis[] = {"_tma", "_direct", "_accum"};
    return std::string("sm90_bf16_gemm_") + (key.a_mn_major ? "t" : "n") + (key.b_mn_major ? "n" : "t") + "_bm" +
           std::to_string(key.block_m) + "_bn" + std::to_string(key.block_n) + "_s" + std::to_string(key.num_stages) +
           "_g" + std::to_string(key.group_n) + "_m" + std::to_string(key.m) + "_n" + std::to_string(key.n) + "_k" +
           std::to_string(key.k) + kModes[key.mode] + kEpis[key.epilogue] + (key.d_fp32 ? "_f32" : "_bf16") +
           (key.with_c ? "_c" : "") + (key.multicast > 1 ? "_mc" + std::to_string(key.multicast) : "");
}

}  // namespace

Sm90Bf16GemmKernelKey sm90_bf16_kernel_key(const heuristics::Sm90Bf16GemmConfig& config) {
    Sm90Bf16GemmKernelKey key;
    key.block_m = config.block_m;
    key.block_n = config.block_n;
    key.num_stages = config.num_stages;
    key.group_n = config.group_n;
    return key;
}

namespace {

// The common implementation of the dense and grouped ops.
void run(const Bf16GemmArgs& args, const Bf16GroupedArgs& g) {
    const char* op = op_name(g.mode, args);
    auto fail = [op](const std::string& what) { throw jit::Error(std::string(op) + ": " + what); };
    const int m = args.m, n = args.n, k = args.k;
    const bool masked = g.mode == GemmGroupedMode::kMGroupedMasked;
    const bool contiguous =
        g.mode == GemmGroupedMode::kMGroupedContiguous || g.mode == GemmGroupedMode::kMGroupedContiguousPsum;
    const bool k_grouped = g.mode == GemmGroupedMode::kKGroupedContiguous;
    const bool m_grouped = masked || contiguous;  // B is [G, N, K] / [G, K, N]
    const bool grouped = m_grouped || k_grouped;
    if (m < 0 || n < 0 || k < 0) fail("negative problem size");
    if (grouped && g.num_groups <= 0) fail("num_groups must be positive");
    if (m == 0 || n == 0) return;
    if (k == 0) fail("K == 0 must be handled by the caller (D = C or zeros)");
    if (!args.a || !args.b || !args.d) fail("null pointer argument");
    if (grouped && !g.grouped) fail(masked ? "masked_m is null" : k_grouped ? "ks is null" : "grouped_layout is null");
    if (!aligned(args.a, 16) || !aligned(args.b, 16)) fail("a and b must be 16-byte aligned");
    const int64_t a_inner = args.a_k_major ? k : m, b_inner = args.b_k_major ? k : n;
    if (args.lda < a_inner || args.lda % 8 != 0)
        fail(std::string("lda must be >= ") + (args.a_k_major ? "K" : "M") + " and a multiple of 8");
    if (args.ldb < b_inner || args.ldb % 8 != 0)
        fail(std::string("ldb must be >= ") + (args.b_k_major ? "K" : "N") + " and a multiple of 8");
    if (args.ldd < n) fail("ldd must be >= N");
    if (args.c && args.ldc < n) fail("ldc must be >= N");
    const int64_t kMaxU32 = int64_t(1) << 32;
    if (args.lda >= kMaxU32 || args.ldb >= kMaxU32 || args.ldd >= kMaxU32 || args.ldc >= kMaxU32)
        fail("row strides must be < 2^32 elements");
    const int out_elem = args.d_fp32 ? 4 : 2;
    if (!aligned(args.d, out_elem) || (args.c && !aligned(args.c, out_elem))) fail("d and c must be element-aligned");
    if (m_grouped) {
        if (args.b_k_major ? g.b_group_stride < int64_t(n) * args.ldb : g.b_group_stride < int64_t(k) * args.ldb)
            fail("b_group_stride too small for [G, N, K] / [G, K, N]");
        if (g.b_group_stride % 8 != 0) fail("b_group_stride must be a multiple of 8");
    }
    if (masked) {
        const int64_t a_rows = args.a_k_major ? m : k;
        if (g.a_group_stride < a_rows * args.lda || g.a_group_stride % 8 != 0)
            fail("a_group_stride must cover one group and be a multiple of 8");
        if (g.d_group_stride != int64_t(m) * args.ldd) fail("d must be contiguous across groups (stride(0) == max_m * ldd)");
        if (args.c && g.c_group_stride != int64_t(m) * args.ldc)
            fail("c must be contiguous across groups (stride(0) == max_m * ldc)");
        if (int64_t(g.num_groups) * m >= kMaxU32) fail("num_groups * max_m must be < 2^32");
    }
    if (k_grouped) {
        // D rows are addressed as g * M + row in a [G * M, N] view; the FP32 epilogue adds C in place.
        if (!args.d_fp32) fail("d must be float32");
        if (g.d_group_stride != int64_t(m) * args.ldd) fail("d must be contiguous across groups (stride(0) == M * ldd)");
        if (args.c && g.c_group_stride != int64_t(m) * args.ldc)
            fail("c must be contiguous across groups (stride(0) == M * ldc)");
        if (int64_t(g.num_groups) * m >= kMaxU32) fail("num_groups * M must be < 2^32");
    }

    const CompiledDims compiled = parse_compiled_dims(op, args.compiled_dims);

    const jit::DeviceInfo& dev = sm90_device_info(op, args.device);
    const int num_sms = usable_sms(dev, args.num_sms);

    // Epilogue: FP32 D or any C -> direct stores with C; bf16 D -> TMA store when TMA can address D (16-byte
    // aligned base, row stride a multiple of 8) and, for masked, no 64-row store box can cross a group end.
    Sm90Bf16Epilogue epilogue;
    if (args.d_fp32 || args.c || k_grouped) epilogue = Sm90Bf16Epilogue::kAccumDirect;
    else if (aligned(args.d, 16) && args.ldd % 8 == 0 && (!masked || m % 64 == 0)) epilogue = Sm90Bf16Epilogue::kBf16Tma;
    else epilogue = Sm90Bf16Epilogue::kBf16Direct;

    const int rows_per_group = masked ? std::max(1, std::min(g.expected_m > 0 ? g.expected_m : m, m)) : 0;
    const int cost_m = masked ? rows_per_group * g.num_groups : m;
    // K-grouped: per-group tiles with a K that changes from call to call; choose for a bucketed average.
    const int cost_k = k_grouped ? heuristics::sm90_bf16_k_grouped_hint_k(k, g.num_groups) : k;
    const ShapeKey shape{cost_m, n, cost_k, num_sms, dev.max_smem_per_block_optin, int(g.mode), int(epilogue),
                         out_elem * (args.c ? 2 : 1), !args.b_k_major, rows_per_group, k_grouped ? g.num_groups : 1,
                         Sm90Bf16ConfigOverride{}};
    const ChosenConfig chosen = get_config(op, shape);
    const heuristics::Sm90Bf16GemmConfig& config = chosen.config;
    if (config.num_stages < heuristics::kSm90Bf16MinStages) fail("not enough shared memory on this device");

    Sm90Bf16GemmKernelKey key = sm90_bf16_kernel_key(config);
    key.a_mn_major = !args.a_k_major;
    key.b_mn_major = !args.b_k_major;
    key.mode = int(g.mode);
    key.epilogue = int(epilogue);
    key.d_fp32 = args.d_fp32;
    key.with_c = args.c != nullptr;
    // A multicast forced by DG_BF16_GEMM_CONFIG wins over the caller's request (it is a tuning override).
    const int multicast_request = chosen.multicast_request != 0 ? chosen.multicast_request : args.multicast;
    key.multicast = heuristics::choose_sm90_bf16_multicast(m, config, int(g.mode), key.b_mn_major, multicast_request);
    compiled.apply(key, m, n, k);
    if (k_grouped) key.k = 0;  // each group has its own K: never a kernel constant

    const jit::LoadedKernel& kernel =
        g_kernels.get(args.device, key, [&] { return sm90_bf16_gemm_source(key).kernel_source(); });

    // Tensor maps (innermost dimension first). A and B are 3-D {inner, outer, group}.
    const uint32_t bk = heuristics::kSm90Bf16BlockK;
    const uint64_t a_groups = masked ? uint64_t(g.num_groups) : 1;
    const uint64_t a_outer = args.a_k_major ? uint64_t(m) : uint64_t(k);
    const uint64_t a_gstride = masked ? uint64_t(g.a_group_stride) * 2 : uint64_t(args.lda) * 2 * a_outer;
    CUtensorMap tmap_a, tmap_b, tmap_d;
    {
        const uint64_t dims[3] = {uint64_t(a_inner), a_outer, a_groups};
        const uint64_t strides[2] = {uint64_t(args.lda) * 2, std::max<uint64_t>(a_gstride, uint64_t(args.lda) * 2)};
        const uint32_t box[3] = {bk, args.a_k_major ? uint32_t(config.block_m) : bk, 1};
        tmap_a = make_tmap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, args.a, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                           std::string(op) + ": tensor map for a");
    }
    {
        const uint64_t b_groups = m_grouped ? uint64_t(g.num_groups) : 1;
        const uint64_t b_outer = args.b_k_major ? uint64_t(n) : uint64_t(k);
        const uint64_t b_gstride = m_grouped ? uint64_t(g.b_group_stride) * 2 : uint64_t(args.ldb) * 2 * b_outer;
        const uint64_t dims[3] = {uint64_t(b_inner), b_outer, b_groups};
        const uint64_t strides[2] = {uint64_t(args.ldb) * 2, std::max<uint64_t>(b_gstride, uint64_t(args.ldb) * 2)};
        // Multicast: each CTA of the pair loads half of a K-major B box (MN-major: half of the 64-wide atoms).
        const uint32_t box[3] = {bk, args.b_k_major ? uint32_t(config.block_n / key.multicast) : bk, 1};
        tmap_b = make_tmap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, args.b, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                           std::string(op) + ": tensor map for b");
    }
    const uint64_t d_rows = masked ? uint64_t(m) * uint64_t(g.num_groups) : uint64_t(m);
    std::memset(&tmap_d, 0, sizeof(tmap_d));
    if (epilogue == Sm90Bf16Epilogue::kBf16Tma) {
        const int sw = heuristics::sm90_bf16_d_swizzle_bytes(config.block_n);
        const uint64_t dims[2] = {uint64_t(n), d_rows};
        const uint64_t strides[1] = {uint64_t(args.ldd) * 2};
        const uint32_t box[2] = {uint32_t(sw / 2), 64u};
        tmap_d = make_tmap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, args.d, dims, strides, box, swizzle_of(sw),
                           std::string(op) + ": tensor map for d");
    }

    const int64_t n_blocks = (n + config.block_n - 1) / config.block_n;
    const int64_t m_blocks = (masked || k_grouped) ? int64_t(g.num_groups) * ((m + config.block_m - 1) / config.block_m)
                                                   : (m + config.block_m - 1) / config.block_m;
    jit::LaunchConfig launch;
    launch.grid[0] = key.multicast > 1 ? persistent_pair_grid(num_sms, (m_blocks + 1) / 2 * n_blocks)
                                       : persistent_grid(num_sms, m_blocks * n_blocks);
    launch.block[0] = unsigned(config.num_threads());
    launch.smem_bytes = unsigned(heuristics::sm90_bf16_smem_bytes(config.block_m, config.block_n, config.num_stages,
                                                                  key.b_mn_major, epilogue));
    launch.cluster_x = unsigned(key.multicast);
    launch.pdl = args.pdl;
    launch.stream = args.stream;

    void* d = args.d;
    const void* c = args.c;
    const int* grouped_ptr = g.grouped;
    unsigned int uldd = unsigned(args.ldd), uldc = unsigned(args.ldc), um = unsigned(m), un = unsigned(n),
                 uk = unsigned(k), ug = unsigned(grouped ? g.num_groups : 1);
    void* kernel_args[] = {&tmap_a, &tmap_b, &tmap_d, &d, &uldd, &c, &uldc, &grouped_ptr, &um, &un, &uk, &ug};
    kernel.launch(launch, kernel_args);
}

}  // namespace

Sm90Bf16GemmSource sm90_bf16_gemm_source(const Sm90Bf16GemmKernelKey& key) {
    Sm90Bf16GemmSource src;
    src.name = "sm90_bf16_gemm";
    src.symbol = make_symbol(key);
    src.num_threads = 128 + 128 * (key.block_m / 64);
    src.smem_bytes = heuristics::sm90_bf16_smem_bytes(key.block_m, key.block_n, key.num_stages, key.b_mn_major,
                                                      Sm90Bf16Epilogue(key.epilogue));
    const std::string bm = std::to_string(key.block_m) + "u", bn = std::to_string(key.block_n) + "u",
                      gn = std::to_string(key.group_n) + "u", st = std::to_string(key.num_stages) + "u";
    const std::string amn = key.a_mn_major ? "true" : "false", bmn = key.b_mn_major ? "true" : "false";
    std::string scheduler;
    switch (GemmGroupedMode(key.mode)) {
        case GemmGroupedMode::kMGroupedContiguous: scheduler = "ContiguousGroupedScheduler"; break;
        case GemmGroupedMode::kMGroupedContiguousPsum: scheduler = "PsumContiguousGroupedScheduler"; break;
        case GemmGroupedMode::kMGroupedMasked: scheduler = "MaskedGroupedScheduler"; break;
        case GemmGroupedMode::kKGroupedContiguous: scheduler = "KGroupedScheduler"; break;
        default: scheduler = key.multicast > 1 ? "ClusterPairScheduler" : "GroupedOrderScheduler"; break;
    }
    std::string epilogue;
    switch (Sm90Bf16Epilogue(key.epilogue)) {
        case Sm90Bf16Epilogue::kBf16Tma: epilogue = "Bf16TmaStoreEpilogue<" + bm + ", " + bn + ">"; break;
        case Sm90Bf16Epilogue::kBf16Direct: epilogue = "Bf16DirectStoreEpilogue<" + bm + ", " + bn + ">"; break;
        default:
            epilogue = "AccumDirectStoreEpilogue<" + bm + ", " + bn + ", " + (key.d_fp32 ? "true" : "false") + ", " +
                       (key.with_c ? "true" : "false") + ">";
            break;
    }
    const std::string tmap = "const __grid_constant__ deep_gemm::TmaDescriptor";
    src.code = "#include <deep_gemm/impls/sm90_bf16_gemm.cuh>\n\n"
               "using DgScheduler = deep_gemm::" + scheduler + "<" + bm + ", " + bn + ", " + gn + ">;\n"
               "using DgEpilogue = deep_gemm::" + epilogue + ";\n\n"
               "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(src.num_threads) + ", 1)\n" +
               src.symbol + "(" + tmap + " tmap_a, " + tmap + " tmap_b, " + tmap + " tmap_d,\n"
               "    void* d, unsigned int ldd, const void* c, unsigned int ldc, const int* grouped,\n"
               "    unsigned int m, unsigned int n, unsigned int k, unsigned int num_groups) {\n"
               "    deep_gemm::sm90_bf16_gemm_impl<" + bm + ", " + bn + ", " + st + ", " + gn + ", " + amn + ", " + bmn +
               ", " + std::to_string(key.m) + "u, " + std::to_string(key.n) + "u, " + std::to_string(key.k) +
               "u, DgScheduler, DgEpilogue, " + std::to_string(key.multicast) + "u>(\n"
               "        tmap_a, tmap_b, tmap_d, d, ldd, c, ldc, grouped, m, n, k, num_groups);\n}\n"
               // The host sizes shared memory with its own formula: make the device layout agree.
               "static_assert(deep_gemm::Sm90Bf16GemmLayout<" + bm + ", " + bn + ", " + st + ", " + amn + ", " + bmn +
               ", DgEpilogue::kSmemBytes>::kSmemBytes == " + std::to_string(src.smem_bytes) +
               "u, \"host/device shared memory size mismatch\");\n";
    return src;
}

void sm90_bf16_gemm(const Bf16GemmArgs& args) { run(args, Bf16GroupedArgs{}); }

void sm90_m_grouped_bf16_gemm(const Bf16GemmArgs& args, const Bf16GroupedArgs& grouped) {
    if (grouped.mode != GemmGroupedMode::kMGroupedContiguous && grouped.mode != GemmGroupedMode::kMGroupedMasked &&
        grouped.mode != GemmGroupedMode::kMGroupedContiguousPsum)
        throw jit::Error("m_grouped_bf16_gemm: grouped mode must be contiguous (either layout) or masked");
    run(args, grouped);
}

void sm90_k_grouped_bf16_gemm(const Bf16GemmArgs& args, const Bf16GroupedArgs& grouped) {
    if (grouped.mode != GemmGroupedMode::kKGroupedContiguous)
        throw jit::Error("k_grouped_bf16_gemm: grouped mode must be K-grouped contiguous");
    run(args, grouped);
}

}  // namespace deep_gemm::kernels
