// Host side of the SM90 FP8 1D2D GEMM: config choice (memoized per shape), source generation, kernel
// lookup (memoized per config key), TMA descriptors and launch; a cached call reuses all of it from a
// per-thread memo keyed by its arguments.
#include "sm90_fp8_gemm_1d2d.hpp"

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

std::string make_symbol(const Sm90Fp8GemmKernelKey& key) {
    return "sm90_fp8_gemm_1d2d_bm" + std::to_string(key.block_m) + "_bn" + std::to_string(key.block_n) + "_s" +
           std::to_string(key.num_stages) + "_g" + std::to_string(key.group_n) + "_m" + std::to_string(key.m) +
           "_n" + std::to_string(key.n) + "_k" + std::to_string(key.k) + (key.direct_store ? "_direct" : "") +
           (key.pipelined == 1 ? "_pp" : "") + (key.multicast == 1 ? "_mcb" : key.multicast == 2 ? "_mca" : "");
}

using ConfigOverride = Sm90Fp8ConfigOverride;

struct ShapeKey {
    int m, n, k, num_sms, smem_limit;
    ConfigOverride ov;
    bool operator==(const ShapeKey&) const = default;
};

struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const noexcept {
        return hash_shape(s.m, s.n, s.k, s.num_sms, s.smem_limit,
                          uint64_t(uint32_t(s.ov.block_m)) | uint64_t(uint32_t(s.ov.block_n)) << 16 |
                              uint64_t(uint32_t(s.ov.num_stages)) << 32 | uint64_t(uint32_t(s.ov.pipelined)) << 48 |
                              uint64_t(uint32_t(s.ov.multicast)) << 56);
    }
};

// Process-wide memo tables (this translation unit owns them).
std::mutex g_config_mutex;
std::unordered_map<ShapeKey, heuristics::Sm90Fp8GemmConfig, ShapeKeyHash> g_configs;
jit::KernelTable<Sm90Fp8GemmKernelKey, Sm90Fp8GemmKernelKeyHash> g_kernels;

[[noreturn]] void fail(const std::string& what);

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

heuristics::Sm90Fp8GemmConfig get_config(int m, int n, int k, int num_sms, int smem_limit) {
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
    const ShapeKey key{m, n, k, num_sms, smem_limit, override_value};
    if (auto it = g_configs.find(key); it != g_configs.end()) return it->second;
    heuristics::Sm90Fp8GemmConfig config =
        heuristics::choose_sm90_fp8_config(m, n, k, num_sms, smem_limit, key.ov.chooser());
    if (key.ov.active()) {
        config.block_m = key.ov.block_m;
        config.block_n = key.ov.block_n;
        config.pipelined = key.ov.pipelined;
        config.multicast = key.ov.multicast;
        const int max_stages = heuristics::sm90_fp8_max_stages(config.block_m, config.block_n, smem_limit);
        config.num_stages = key.ov.num_stages != 0 ? key.ov.num_stages : max_stages;
        if (heuristics::sm90_fp8_smem_bytes(config.block_m, config.block_n, config.num_stages) > smem_limit)
            fail(std::string(kConfigEnv) + ": " + heuristics::to_string(config) + " exceeds the shared memory limit (" +
                 std::to_string(smem_limit) + " bytes)");
    }
    // With the config model's time for this config (forced ones too), for calibrating the model by sweeps.
    if (jit::settings().print_configs) {
        char modelled[64];
        std::snprintf(modelled, sizeof(modelled), " modelled=%.1fus",
                      heuristics::sm90_fp8_model_cost(m, n, k, num_sms, config.block_m, config.block_n, config.num_stages,
                                                      config.pipelined, config.multicast) /
                          heuristics::kFp8ModelClkPerUs);
        log_config(kOpName, m, n, k, num_sms, heuristics::to_string(config) + modelled);
    }
    g_configs.emplace(key, config);
    return config;
}

void fail(const std::string& what) { throw jit::Error(std::string(kOpName) + ": " + what); }

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
               " tmap_d,\n    const float* sfb, void* d, unsigned int ldd, unsigned int m, unsigned int n,"
               " unsigned int k) {\n"
               "    using Scheduler = deep_gemm::" +
               (key.multicast == 1 ? "ClusterPairScheduler" : key.multicast == 2 ? "ClusterPairNScheduler" : "GroupedOrderScheduler") +
               "<" + bm + ", " + bn + ", " + g + ">;\n"
               "    using Epilogue = deep_gemm::" + (key.direct_store ? "Bf16DirectStoreEpilogue" : "Bf16TmaStoreEpilogue") +
               "<" + bm + ", " + bn + epilogue_rows + ">;\n"
               "    deep_gemm::sm90_fp8_gemm_1d2d_impl<" + bm + ", " + bn + ", " +
               std::to_string(key.num_stages) + ", " + g + ", " + std::to_string(key.m) +
               "u, " + std::to_string(key.n) + "u, " + std::to_string(key.k) +
               "u, Scheduler, Epilogue, " + std::to_string(key.pipelined) + "u, " +
               (key.multicast != 0 ? "2" : "1") + ", " + (key.multicast == 2 ? "true" : "false") + ">(\n        tmap_a, tmap_b, tmap_sfa, tmap_d, sfb, d, ldd, m, n, k);\n}\n"
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
// DG_FP8_GEMM_CONFIG); not sfb, a plain kernel argument. Zero-initialised and compared bytewise.
struct LaunchKey {
    const void *a, *b, *sfa, *d;
    int64_t lda, ldb, ldd, sfa_stride;
    const jit::Settings* settings;
    int m, n, k, num_sms, device;
    uint8_t dims_mask;  // compiled m/n/k as bits 0/1/2
    bool pdl;
};

// Per thread, so no lock; a collision just prepares again.
thread_local jit::DirectMappedCache<LaunchKey, PreparedLaunch, 16> t_launches;

PreparedLaunch prepare(const Fp8Gemm1d2dArgs& args, const CompiledDims& compiled) {
    const int m = args.m, n = args.n, k = args.k;
    const jit::DeviceInfo& dev = sm90_device_info(kOpName, args.device);
    const int num_sms = usable_sms(dev, args.num_sms);
    const auto config = get_config(m, n, k, num_sms, dev.max_smem_per_block_optin);
    if (config.num_stages < heuristics::kSm90Fp8MinStages) fail("not enough shared memory on this device");

    Sm90Fp8GemmKernelKey key = sm90_fp8_kernel_key(config);
    // Clusters need two CTAs per cluster in the persistent grid.
    if (num_sms < 2) key.multicast = 0;
    compiled.apply(key, m, n, k);
    // The TMA store needs a 16-byte aligned base and a row stride that is a multiple of 16 bytes.
    key.direct_store = !aligned(args.d, 16) || (args.ldd % 8) != 0;

    PreparedLaunch p;
    p.kernel = &g_kernels.get(args.device, key, [&] { return sm90_fp8_gemm_1d2d_source(key).kernel_source(); });

    // Tensor maps (innermost dimension first).
    const int num_kb = (k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
    const int d_swizzle = heuristics::sm90_fp8_d_swizzle_bytes(config.block_n);
    p.tmap_a = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.a, uint64_t(k), uint64_t(m), uint64_t(args.lda),
                            heuristics::kSm90Fp8BlockK, uint32_t(key.multicast == 2 ? config.block_m / 2 : config.block_m),
                            CU_TENSOR_MAP_SWIZZLE_128B, "fp8_gemm_nt: tensor map for a");
    p.tmap_b = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.b, uint64_t(k), uint64_t(n), uint64_t(args.ldb),
                            heuristics::kSm90Fp8BlockK, uint32_t(key.multicast == 1 ? config.block_n / 2 : config.block_n),
                            CU_TENSOR_MAP_SWIZZLE_128B, "fp8_gemm_nt: tensor map for b");
    p.tmap_sfa = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, args.sfa, uint64_t(m), uint64_t(num_kb),
                              uint64_t(args.sfa_stride) * 4, uint32_t(config.block_m), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                              "fp8_gemm_nt: tensor map for sfa");
    std::memset(&p.tmap_d, 0, sizeof(p.tmap_d));
    if (!key.direct_store)
        p.tmap_d = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, args.d, uint64_t(n), uint64_t(m), uint64_t(args.ldd) * 2,
                                uint32_t(d_swizzle / 2), 64u, swizzle_of(d_swizzle), "fp8_gemm_nt: tensor map for d");

    const int64_t m_blocks = (m + config.block_m - 1) / config.block_m;
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

}  // namespace

void sm90_fp8_gemm_1d2d(const Fp8Gemm1d2dArgs& args) {
    const int m = args.m, n = args.n, k = args.k;
    if (m < 0 || n < 0 || k < 0) fail("negative problem size");
    if (m == 0 || n == 0) return;
    if (k == 0) fail("K == 0 must be handled by the caller (D = C or zeros)");
    if (k % 16 != 0) fail("K must be a multiple of 16 (16-byte aligned FP8 rows); got " + std::to_string(k));
    if (!args.a || !args.b || !args.sfa || !args.sfb || !args.d) fail("null pointer argument");
    if (!aligned(args.a, 16) || !aligned(args.b, 16) || !aligned(args.sfa, 16))
        fail("a, b and sfa must be 16-byte aligned");
    if (!aligned(args.d, 2)) fail("d must be 2-byte aligned");
    if (args.lda < k || args.lda % 16 != 0) fail("lda must be >= K and a multiple of 16");
    if (args.ldb < k || args.ldb % 16 != 0) fail("ldb must be >= K and a multiple of 16");
    if (args.ldd < n) fail("ldd must be >= N");
    if (args.lda >= (int64_t(1) << 32) || args.ldb >= (int64_t(1) << 32) || args.ldd >= (int64_t(1) << 32))
        fail("row strides must be < 2^32 elements");
    if (args.sfa_stride < m || args.sfa_stride % 4 != 0)
        fail("sfa_stride must be >= M and a multiple of 4 (TMA-aligned M-major scales)");

    const CompiledDims compiled = parse_compiled_dims(kOpName, args.compiled_dims);

    LaunchKey key;
    std::memset(&key, 0, sizeof(key));  // padding takes part in the hash and compare
    key.a = args.a, key.b = args.b, key.sfa = args.sfa, key.d = args.d;
    key.lda = args.lda, key.ldb = args.ldb, key.ldd = args.ldd, key.sfa_stride = args.sfa_stride;
    key.settings = &jit::settings();
    key.m = m, key.n = n, key.k = k, key.num_sms = args.num_sms, key.device = args.device;
    key.dims_mask = uint8_t(compiled.m | compiled.n << 1 | compiled.k << 2);
    key.pdl = args.pdl;
    const PreparedLaunch* prepared = t_launches.find(key);
    if (prepared == nullptr) prepared = &t_launches.insert(key, prepare(args, compiled));

    const PreparedLaunch& p = *prepared;
    jit::LaunchConfig launch = p.launch;
    launch.stream = args.stream;
    const float* sfb = args.sfb;
    void* d = args.d;
    unsigned int uldd = unsigned(args.ldd), um = unsigned(m), un = unsigned(n), uk = unsigned(k);
    void* kernel_args[] = {const_cast<CUtensorMap*>(&p.tmap_a), const_cast<CUtensorMap*>(&p.tmap_b),
                           const_cast<CUtensorMap*>(&p.tmap_sfa), const_cast<CUtensorMap*>(&p.tmap_d),
                           &sfb, &d, &uldd, &um, &un, &uk};
    p.kernel->launch(launch, kernel_args);
}

}  // namespace deep_gemm::kernels
