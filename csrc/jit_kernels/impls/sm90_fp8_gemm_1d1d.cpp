// Host side of the SM90 FP8 1D1D GEMM: config choice (memoized per shape), source generation, kernel
// lookup (memoized per key), TMA descriptors and launch; a cached call reuses all of it from a per-thread
// memo keyed by its arguments (the pattern of sm90_fp8_gemm_1d2d.cpp).
#include "sm90_fp8_gemm_1d1d.hpp"

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../../jit/direct_mapped_cache.hpp"
#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"
#include "../../jit/settings.hpp"

namespace deep_gemm::kernels {

namespace {

[[noreturn]] void fail(const char* op, const std::string& what) { throw jit::Error(std::string(op) + ": " + what); }

std::string make_symbol(const Sm90Fp8Gemm1d1dKernelKey& key) {
    return "sm90_fp8_gemm_1d1d_bm" + std::to_string(key.block_m) + "_bn" + std::to_string(key.block_n) + "_s" +
           std::to_string(key.num_stages) + "_g" + std::to_string(key.group_n) + "_m" + std::to_string(key.m) +
           "_n" + std::to_string(key.n) + "_k" + std::to_string(key.k) + (key.with_c ? "_c" : "");
}

struct ShapeKey {
    int m, n, k, num_sms, smem_limit;
    bool operator==(const ShapeKey&) const = default;
};

struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const noexcept { return hash_shape(s.m, s.n, s.k, s.num_sms, s.smem_limit, 0); }
};

std::mutex g_config_mutex;
std::unordered_map<ShapeKey, heuristics::Sm90Fp8Gemm1d1dConfig, ShapeKeyHash> g_configs;
jit::KernelTable<Sm90Fp8Gemm1d1dKernelKey, Sm90Fp8Gemm1d1dKernelKeyHash> g_kernels;

heuristics::Sm90Fp8Gemm1d1dConfig get_config(const char* op, int m, int n, int k, int num_sms, int smem_limit) {
    std::lock_guard<std::mutex> lock(g_config_mutex);
    const ShapeKey key{m, n, k, num_sms, smem_limit};
    if (auto it = g_configs.find(key); it != g_configs.end()) return it->second;
    const auto config = heuristics::choose_sm90_fp8_1d1d_config(m, n, k, num_sms, smem_limit);
    log_config(op, m, n, k, num_sms, heuristics::to_string(config));
    g_configs.emplace(key, config);
    return config;
}

// Everything a call derives from its arguments (except the stream): kernel, launch shape, tensor maps.
struct PreparedLaunch {
    const jit::LoadedKernel* kernel = nullptr;
    jit::LaunchConfig launch;
    CUtensorMap tmap_a, tmap_b, tmap_sfa, tmap_sfb;
};

// The memo key: the arguments a PreparedLaunch depends on (d and c are plain kernel arguments, but whether
// there is a C selects the kernel). Zero-initialised and compared bytewise.
struct LaunchKey {
    const void *a, *b, *sfa, *sfb;
    int64_t lda, ldb, sfa_stride, sfb_stride;
    const jit::Settings* settings;
    int m, n, k, num_sms, device;
    uint8_t dims_mask;  // compiled m/n/k as bits 0/1/2
    bool with_c, pdl;
};

// Per thread, so no lock; a collision just prepares again. 16 slots: a K-grouped call of up to 16 groups
// finds every group's launch again on the next call with the same tensors.
thread_local jit::DirectMappedCache<LaunchKey, PreparedLaunch, 16> t_launches;

PreparedLaunch prepare(const Fp8Gemm1d1dArgs& args, const CompiledDims& compiled) {
    const int m = args.m, n = args.n, k = args.k;
    const jit::DeviceInfo& dev = sm90_device_info(args.op, args.device);
    const int num_sms = usable_sms(dev, args.num_sms);
    const auto config = get_config(args.op, m, n, k, num_sms, dev.max_smem_per_block_optin);
    if (config.num_stages < heuristics::kSm90Fp8MinStages) fail(args.op, "not enough shared memory on this device");

    Sm90Fp8Gemm1d1dKernelKey key = sm90_fp8_1d1d_kernel_key(config);
    compiled.apply(key, m, n, k);
    key.with_c = args.c != nullptr;

    PreparedLaunch p;
    p.kernel = &g_kernels.get(args.device, key, [&] { return sm90_fp8_gemm_1d1d_source(key).kernel_source(); });

    const int num_kb = (k + heuristics::kSm90Fp8BlockK - 1) / heuristics::kSm90Fp8BlockK;
    p.tmap_a = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.a, uint64_t(k), uint64_t(m), uint64_t(args.lda),
                            heuristics::kSm90Fp8BlockK, uint32_t(config.block_m), CU_TENSOR_MAP_SWIZZLE_128B,
                            "FP8 1D1D GEMM: tensor map for a");
    p.tmap_b = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.b, uint64_t(k), uint64_t(n), uint64_t(args.ldb),
                            heuristics::kSm90Fp8BlockK, uint32_t(config.block_n), CU_TENSOR_MAP_SWIZZLE_128B,
                            "FP8 1D1D GEMM: tensor map for b");
    p.tmap_sfa = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, args.sfa, uint64_t(m), uint64_t(num_kb),
                              uint64_t(args.sfa_stride) * 4, uint32_t(config.block_m), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                              "FP8 1D1D GEMM: tensor map for sfa");
    p.tmap_sfb = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, args.sfb, uint64_t(n), uint64_t(num_kb),
                              uint64_t(args.sfb_stride) * 4, uint32_t(config.block_n), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                              "FP8 1D1D GEMM: tensor map for sfb");

    const int64_t m_blocks = (m + config.block_m - 1) / config.block_m;
    const int64_t n_blocks = (n + config.block_n - 1) / config.block_n;
    p.launch.grid[0] = persistent_grid(num_sms, m_blocks * n_blocks);
    p.launch.block[0] = unsigned(config.num_threads());
    p.launch.smem_bytes = unsigned(heuristics::sm90_fp8_1d1d_smem_bytes(config.block_m, config.block_n, config.num_stages));
    p.launch.pdl = args.pdl;
    return p;
}

}  // namespace

Sm90Fp8Gemm1d1dKernelKey sm90_fp8_1d1d_kernel_key(const heuristics::Sm90Fp8Gemm1d1dConfig& config) {
    Sm90Fp8Gemm1d1dKernelKey key;
    key.block_m = config.block_m;
    key.block_n = config.block_n;
    key.num_stages = config.num_stages;
    key.group_n = config.group_n;
    return key;
}

GemmKernelSource sm90_fp8_gemm_1d1d_source(const Sm90Fp8Gemm1d1dKernelKey& key) {
    GemmKernelSource src;
    src.name = "sm90_fp8_gemm_1d1d";
    src.symbol = make_symbol(key);
    src.num_threads = 128 + 128 * (key.block_m / 64);
    src.smem_bytes = heuristics::sm90_fp8_1d1d_smem_bytes(key.block_m, key.block_n, key.num_stages);
    const std::string tmap = "const __grid_constant__ deep_gemm::TmaDescriptor";
    const std::string bm = std::to_string(key.block_m), bn = std::to_string(key.block_n),
                      stages = std::to_string(key.num_stages);
    src.code = "#include <deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh>\n\n"
               "extern \"C\" __global__ void __launch_bounds__(" +
               std::to_string(src.num_threads) + ", 1)\n" + src.symbol + "(" + tmap + " tmap_a, " + tmap +
               " tmap_b, " + tmap + " tmap_sfa, " + tmap +
               " tmap_sfb,\n    float* d, const float* c, unsigned int ldd, unsigned int ldc, unsigned int m,"
               " unsigned int n, unsigned int k) {\n"
               "    deep_gemm::sm90_fp8_gemm_1d1d_impl<" + bm + "u, " + bn + "u, " + stages + "u, " +
               std::to_string(key.group_n) + "u, " + std::to_string(key.m) + "u, " + std::to_string(key.n) + "u, " +
               std::to_string(key.k) + "u, " + (key.with_c ? "true" : "false") +
               ">(\n        tmap_a, tmap_b, tmap_sfa, tmap_sfb, d, c, ldd, ldc, m, n, k);\n}\n"
               // The host sizes shared memory with its own formula: make the device layout agree.
               "static_assert(deep_gemm::Sm90Fp8Gemm1d1dLayout<" + bm + ", " + bn + ", " + stages +
               ">::kSmemBytes == " + std::to_string(src.smem_bytes) + ", \"host/device shared memory size mismatch\");\n";
    return src;
}

void sm90_fp8_gemm_1d1d(const Fp8Gemm1d1dArgs& args) {
    const int m = args.m, n = args.n, k = args.k;
    if (m < 0 || n < 0 || k < 0) fail(args.op, "negative problem size");
    if (m == 0 || n == 0) return;
    if (k == 0) fail(args.op, "K == 0 must be handled by the caller (D = C or zeros)");
    if (k % 16 != 0) fail(args.op, "K must be a multiple of 16 (16-byte aligned FP8 rows); got " + std::to_string(k));
    if (!args.a || !args.b || !args.sfa || !args.sfb || !args.d) fail(args.op, "null pointer argument");
    if (!aligned(args.a, 16) || !aligned(args.b, 16) || !aligned(args.sfa, 16) || !aligned(args.sfb, 16))
        fail(args.op, "a, b, sfa and sfb must be 16-byte aligned");
    if (!aligned(args.d, 4) || (args.c && !aligned(args.c, 4))) fail(args.op, "d and c must be 4-byte aligned");
    if (args.lda < k || args.lda % 16 != 0) fail(args.op, "lda must be >= K and a multiple of 16");
    if (args.ldb < k || args.ldb % 16 != 0) fail(args.op, "ldb must be >= K and a multiple of 16");
    if (args.ldd < n || (args.c && args.ldc < n)) fail(args.op, "ldd and ldc must be >= N");
    if (args.lda >= (int64_t(1) << 32) || args.ldb >= (int64_t(1) << 32) || args.ldd >= (int64_t(1) << 32) ||
        args.ldc >= (int64_t(1) << 32))
        fail(args.op, "row strides must be < 2^32 elements");
    if (args.sfa_stride < m || args.sfa_stride % 4 != 0 || args.sfb_stride < n || args.sfb_stride % 4 != 0)
        fail(args.op, "sfa_stride / sfb_stride must be >= M / N and multiples of 4 (TMA-aligned MN-major scales)");

    const CompiledDims compiled = parse_compiled_dims(args.op, args.compiled_dims);

    LaunchKey key;
    std::memset(&key, 0, sizeof(key));  // padding takes part in the hash and compare
    key.a = args.a, key.b = args.b, key.sfa = args.sfa, key.sfb = args.sfb;
    key.lda = args.lda, key.ldb = args.ldb, key.sfa_stride = args.sfa_stride, key.sfb_stride = args.sfb_stride;
    key.settings = &jit::settings();
    key.m = m, key.n = n, key.k = k, key.num_sms = args.num_sms, key.device = args.device;
    key.dims_mask = uint8_t(compiled.m | compiled.n << 1 | compiled.k << 2);
    key.with_c = args.c != nullptr;
    key.pdl = args.pdl;
    const PreparedLaunch* prepared = t_launches.find(key);
    if (prepared == nullptr) prepared = &t_launches.insert(key, prepare(args, compiled));

    const PreparedLaunch& p = *prepared;
    jit::LaunchConfig launch = p.launch;
    launch.stream = args.stream;
    float* d = args.d;
    const float* c = args.c;
    unsigned int uldd = unsigned(args.ldd), uldc = unsigned(args.ldc), um = unsigned(m), un = unsigned(n),
                 uk = unsigned(k);
    void* kernel_args[] = {const_cast<CUtensorMap*>(&p.tmap_a), const_cast<CUtensorMap*>(&p.tmap_b),
                           const_cast<CUtensorMap*>(&p.tmap_sfa), const_cast<CUtensorMap*>(&p.tmap_sfb),
                           &d, &c, &uldd, &uldc, &um, &un, &uk};
    p.kernel->launch(launch, kernel_args);
}

}  // namespace deep_gemm::kernels
