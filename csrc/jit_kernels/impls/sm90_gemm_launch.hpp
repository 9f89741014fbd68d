// The GEMM launch path: the host skeleton every SM90 GEMM kernel runs through (internal to
// csrc/jit_kernels/impls). ("Pipeline" names only the device's mbarrier ring, common/pipeline.cuh.)
//
//   run_gemm<Traits>(desc)
//     common + kernel argument checks
//     per-thread prepared-launch memo, keyed bytewise by the call's arguments   <- a cached call stops here
//     on a miss: device limits -> config memo (per shape class + settings generation) -> kernel key
//                -> generated source -> jit::KernelTable -> tensor maps + launch shape
//   launch with the kernel's argument list
//
// A kernel plugs in with a small Traits struct (sm90_fp8_gemm_1d2d.hpp, sm90_fp8_gemm_1d1d.hpp,
// sm90_bf16_gemm.hpp; DG_SM90_GEMM_TRAITS_FUNCTIONS at the end of this file declares its functions but
// op_name and set_override):
//   using Config                                    heuristics::Sm90GemmConfig (or a struct holding one)
//   static constexpr bool kSfbInTensorMap, kDInTensorMap   which of sfb / d the tensor maps hold (they key
//                                                   the launch memo; plain-argument pointers do not)
//   op_name(problem)                                the op named in errors and logs
//   check(op, desc)                                 the kernel's argument checks (jit::Error on failure)
//   knob_table()                                    the kernel's knobs (knob_table.hpp)
//   config_query(problem, num_sms, smem_limit)      the shape class the config depends on
//   set_override(op, settings, query)               the settings' forced config into the query
//   choose(op, query) -> Config                     config choice (and DG_PRINT_CONFIGS log)
//   kernel_key(op, problem, config, num_sms, dims)  the key (rejecting configs the call cannot use)
//   source(key) -> GemmKernelSource                 template arguments, smem formula, symbol
//   prepare(op, desc, key, num_sms, launch)        tensor maps and launch shape (from the key only)
//   launch(desc, launch)                            the kernel argument array, then the launch
#pragma once

#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "../../jit/direct_mapped_cache.hpp"
#include "../../jit/jit.hpp"
#include "../../jit/settings.hpp"
#include "../../jit/tuning_table.hpp"
#include "../heuristics/common.hpp"
#include "knob_table.hpp"
#include "sm90_gemm_desc.hpp"

namespace deep_gemm::kernels::gemm_launch {

// The shape class a config is chosen for, filled by Traits::config_query / set_override (unused fields 0).
// Compared and hashed bytewise.
struct ConfigQuery {
    int32_t m = 0, n = 0, k = 0, num_sms = 0, smem_limit = 0;  // the shape the cost model sees
    int32_t mode = 0, rows_per_group = 0, groups = 0;
    int32_t epilogue = 0, out_bytes = 0, b_mn_major = 0;
    int32_t zero_padding = 0;  // M-contiguous: padding rows written as zeros (ensure_zero_padding)
    int32_t block_m_multiple = 1, block_n_multiple = 1;
    int32_t max_block_n = 0;  // FP8 1D2D masked: BLOCK_N cap (0: none)
    int32_t sf_gran_k = 0;  // FP8 1D2D: the scales' K granularity when not the default 128 (32: block-32 scales)
    knobs::Forced forced;  // the settings' forced config (DG_*_GEMM_CONFIG), parsed by the kernel's knob table
    bool operator==(const ConfigQuery&) const = default;
};

// Everything a call derives from its arguments except the stream: kernel, launch shape, tensor maps.
struct PreparedLaunch {
    const jit::LoadedKernel* kernel = nullptr;
    jit::LaunchConfig launch;
    CUtensorMap tmaps[4];
    // FP8 1D2D split-K: the tiles (one counter each; 0 = not split) and the partials' bytes.
    size_t split_k_tiles = 0, split_k_partial_bytes = 0;
    // FP8 1D1D K-grouped: the boxes' rows of the per-group A / B tensor maps built at each launch (they depend
    // on the host's K list, which the memo key does not hold): BLOCK_M, and BLOCK_N or half of it (multicast).
    int block_m = 0;
    uint32_t b_box_rows = 0;
    int block_n = 0;  // the key's (with block_m: what run_gemm returns)
};

// The prepared-launch memo key: the arguments a PreparedLaunch depends on, plus the settings generation
// (which carries the forced configs). Zeroed, then filled; compared bytewise.
struct LaunchKey {
    const void *a, *b, *sfa, *sfb, *d;  // sfb / d only when a tensor map holds them
    const jit::Settings* settings;
    const char* op;
    int64_t lda, ldb, ldc, ldd, sfa_stride, sfb_stride;
    int64_t a_group_stride, b_group_stride, sfa_group_stride, d_group_stride, c_group_stride;
    int32_t m, n, k, num_sms, device, num_groups, expected_m, alignment, multicast;
    int32_t block_m_multiple, block_n_multiple, batch_splits;
    int32_t head_left, head_mid, head_right, max_block_n;
    int32_t sf_k_align, sf_k_blocks;
    uint8_t tile_signal, kernel, mode, dims_mask, a_k_major, b_k_major, d_fp32, with_c, c_fp32, d_tma_ok, pdl, zero_padding;
    uint8_t sf_gran_k;  // FP8 1D2D: GemmProblem::sf_gran_k / 32 (the scale layout the tensor maps are built for)
};

// One table of loaded kernels for every SM90 GEMM kernel (the key names the kernel).
jit::KernelTable<GemmKernelKey, BytewiseHash<GemmKernelKey>>& kernel_table();

// The checks every kernel shares. False: nothing to compute (M or N is 0).
bool check_common(const char* op, const GemmProblem& p);

// The chosen (or forced) tile against set_block_size_multiple_of (jit::Error when it is not a multiple).
void check_block_multiples(const char* op, const GemmProblem& p, int block_m, int block_n);

// The multiples as the heuristics take them.
inline heuristics::BlockMultiples block_multiples(const ConfigQuery& q) {
    return heuristics::BlockMultiples{q.block_m_multiple, q.block_n_multiple};
}

// The config of a shape class, memoized per query (the query includes the forced config of the current
// settings generation, so reload_settings() takes effect).
// A forced config from elsewhere than the settings: a candidate being planned (wins over the settings'
// variable) or a tuned pick (only where the variable is unset).
struct ForcedBy {
    const knobs::Forced* config = nullptr;
    bool over_settings = false;
};

// The tuning table's signature of a shape class: the query, with M in a power-of-two bucket for the grouped
// modes (whose M varies from call to call), and without the forced config.
std::string tuning_signature(const ConfigQuery& q);

template <typename Traits>
typename Traits::Config memo_config(const char* op, ConfigQuery query, ForcedBy forced = {}) {
    static std::mutex mutex;
    static std::unordered_map<ConfigQuery, typename Traits::Config, BytewiseHash<ConfigQuery>> configs;
    const jit::Settings& settings = jit::settings();
    std::lock_guard<std::mutex> lock(mutex);
    Traits::set_override(op, settings, query);
    if (forced.config != nullptr && (forced.over_settings || query.forced.state == 0)) query.forced = *forced.config;
    if (auto it = configs.find(query); it != configs.end()) return it->second;
    const typename Traits::Config config = Traits::choose(op, query);
    configs.emplace(query, config);
    return config;
}

template <typename Traits>
struct Planned {
    typename Traits::Config config;
    GemmKernelKey key;
};

// Config and kernel key of a problem on a device with `num_sms` usable SMs and `smem_limit` bytes. `gpu`
// (jit::gpu_model; empty: none) looks the shape class up in the cache's tuning table, whose pick is taken
// where the settings force no config and the kernel's finalize accepts it for this call. `candidate`: a
// forced config that wins over both.
template <typename Traits>
Planned<Traits> plan_kernel(const char* op, const GemmProblem& p, const CompiledDims& dims, int num_sms,
                            int smem_limit, const std::string& gpu, const knobs::Forced* candidate = nullptr) {
    Planned<Traits> planned;
    ConfigQuery query = Traits::config_query(p, num_sms, smem_limit);
    query.block_m_multiple = p.block_m_multiple, query.block_n_multiple = p.block_n_multiple;
    if (candidate == nullptr && !gpu.empty()) {
        const knobs::KnobTable& table = Traits::knob_table();
        if (const std::optional<std::string> pick = jit::tuned_config(gpu, table.variable, tuning_signature(query))) {
            try {
                const knobs::Forced tuned = knobs::parse_forced(table, *pick, op);
                planned.config = memo_config<Traits>(op, query, {&tuned, false});
                planned.key = Traits::kernel_key(op, p, planned.config, num_sms, dims);
                check_block_multiples(op, p, planned.key.block_m, planned.key.block_n);
                return planned;
            } catch (const jit::Error&) {
                // not legal for this call (another M of the bucket): the heuristic's pick
            }
        }
    }
    planned.config = memo_config<Traits>(op, query, {candidate, true});
    planned.key = Traits::kernel_key(op, p, planned.config, num_sms, dims);
    check_block_multiples(op, p, planned.key.block_m, planned.key.block_n);
    return planned;
}

template <typename Traits>
PreparedLaunch prepare(const char* op, const GemmDesc& desc, const GemmProblem& p, const CompiledDims& dims) {
    const jit::DeviceInfo& dev = sm90_device_info(op, p.device);
    const int num_sms = usable_sms(dev, p.num_sms);
    const Planned<Traits> planned =
        plan_kernel<Traits>(op, p, dims, num_sms, dev.max_smem_per_block_optin, jit::gpu_model(dev));
    PreparedLaunch prepared;
    prepared.block_m = planned.key.block_m, prepared.block_n = planned.key.block_n;
    prepared.kernel =
        &kernel_table().get(p.device, planned.key, [&] { return Traits::source(planned.key).kernel_source(); });
    Traits::prepare(op, desc, planned.key, num_sms, prepared);
    prepared.launch.pdl = p.pdl;
    return prepared;
}

// Per thread and kernel, so no lock; a collision just prepares again.
template <typename Traits>
thread_local jit::DirectMappedCache<LaunchKey, PreparedLaunch, 16> t_launches;

template <typename Traits>
GemmTile run_gemm(const GemmDesc& desc) {
    const GemmOperands& o = desc.operands;
    GemmProblem p = desc.problem;
    const char* op = Traits::op_name(p);
    if (!check_common(op, p)) return {};
    Traits::check(op, desc);
    p.with_c = o.c != nullptr;
    p.c_fp32 = p.c_fp32 && p.with_c;  // meaningful only with a C: normalised once for the keys below
    p.d_tma_ok = Traits::kDInTensorMap && aligned(o.d, 16) && o.ldd % 8 == 0;
    const CompiledDims dims = parse_compiled_dims(op, p.compiled_dims);

    LaunchKey key;
    std::memset(&key, 0, sizeof(key));  // padding takes part in the hash and compare
    key.a = o.a, key.b = o.b, key.sfa = o.sfa;
    key.sfb = Traits::kSfbInTensorMap ? o.sfb : nullptr;
    key.d = Traits::kDInTensorMap ? o.d : nullptr;
    key.settings = &jit::settings();
    key.op = op;
    key.lda = o.lda, key.ldb = o.ldb, key.ldc = o.ldc, key.ldd = o.ldd;
    key.sfa_stride = o.sfa_stride, key.sfb_stride = o.sfb_stride;
    key.a_group_stride = o.a_group_stride, key.b_group_stride = o.b_group_stride;
    key.sfa_group_stride = o.sfa_group_stride, key.d_group_stride = o.d_group_stride;
    key.c_group_stride = o.c_group_stride;
    key.m = p.m, key.n = p.n, key.k = p.k, key.num_sms = p.num_sms, key.device = p.device;
    key.num_groups = p.num_groups, key.expected_m = p.expected_m, key.alignment = p.alignment;
    key.multicast = p.multicast;
    key.block_m_multiple = p.block_m_multiple, key.block_n_multiple = p.block_n_multiple;
    key.head_left = p.head_left, key.head_mid = p.head_mid, key.head_right = p.head_right;
    key.sf_k_align = p.sf_k_align, key.sf_k_blocks = p.sf_k_blocks;
    key.batch_splits = p.batch_splits;
    key.max_block_n = p.max_block_n, key.tile_signal = p.tile_signal;
    key.kernel = uint8_t(p.kernel), key.mode = uint8_t(p.mode);
    key.dims_mask = uint8_t(dims.m | dims.n << 1 | dims.k << 2);
    key.a_k_major = p.a_k_major, key.b_k_major = p.b_k_major, key.d_fp32 = p.d_fp32;
    key.with_c = p.with_c, key.c_fp32 = p.c_fp32, key.d_tma_ok = p.d_tma_ok, key.pdl = p.pdl, key.zero_padding = p.ensure_zero_padding;
    key.sf_gran_k = uint8_t(p.sf_gran_k / 32);

    auto& launches = t_launches<Traits>;
    const PreparedLaunch* prepared = launches.find(key);
    if (prepared == nullptr) prepared = &launches.insert(key, prepare<Traits>(op, desc, p, dims));
    Traits::launch(desc, *prepared);
    return {prepared->block_m, prepared->block_n};
}

}  // namespace deep_gemm::kernels::gemm_launch

// The Traits functions (the list at the top of this file) that every kernel declares alike and defines in its
// .cpp, declared once: a Traits struct names this after its `Config` and declares op_name and set_override
// itself (some define them inline).
#define DG_SM90_GEMM_TRAITS_FUNCTIONS                                                                              \
    static const knobs::KnobTable& knob_table();                                                                   \
    static void check(const char* op, const GemmDesc& desc);                                                       \
    static gemm_launch::ConfigQuery config_query(const GemmProblem& p, int num_sms, int smem_limit);               \
    static Config choose(const char* op, const gemm_launch::ConfigQuery& query);                                   \
    static GemmKernelKey kernel_key(const char* op, const GemmProblem& p, const Config& config, int num_sms,       \
                                    const CompiledDims& dims);                                                     \
    static GemmKernelSource source(const GemmKernelKey& key);                                                      \
    static void prepare(const char* op, const GemmDesc& desc, const GemmKernelKey& key, int num_sms,               \
                        gemm_launch::PreparedLaunch& prepared);                                                    \
    static void launch(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared)
