// Host side of the SM90 BF16 GEMM: its part of the GEMM launch path (sm90_gemm_launch.hpp). DG_BF16_GEMM_CONFIG
// can force the dense ops' config (sm90_bf16_config_override.hpp).
#include "sm90_bf16_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "../../jit/errors.hpp"
#include "sm90_bf16_config_override.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm_params.hpp"

namespace deep_gemm::kernels {

namespace {

using heuristics::Sm90GemmEpilogue;

[[noreturn]] void fail(const char* op, const std::string& what) { throw jit::Error(std::string(op) + ": " + what); }

bool is_m_grouped(const GemmProblem& p) { return is_masked(p) || is_contiguous(p); }  // B is [G, N, K] / [G, K, N]
bool is_batch_reduced(const GemmProblem& p) { return p.mode == GemmGroupedMode::kBatchReduced; }
bool is_head_batched(const GemmProblem& p) { return p.mode == GemmGroupedMode::kHeadBatched; }
// Modes whose A and B both carry the group in their tensor maps (the einsum layouts).
bool is_einsum(const GemmProblem& p) { return is_batch_reduced(p) || is_head_batched(p); }

// Runs `f`, prefixing the op name to a ConfigError (the override's messages do not know the op).
template <typename F>
auto with_op_name(const char* op, F&& f) {
    try {
        return f();
    } catch (const jit::ConfigError& e) {
        throw jit::ConfigError(std::string(op) + ": " + e.what());
    }
}

// Epilogue: FP32 D or any C -> direct stores with C; bf16 D -> TMA store when TMA can address D (16-byte
// aligned base, row stride a multiple of 8) and, for masked, no 64-row store box can cross a group end.
Sm90GemmEpilogue epilogue_of(const GemmProblem& p) {
    if (p.d_fp32 || p.with_c || is_k_grouped(p)) return Sm90GemmEpilogue::kAccumDirect;
    if (p.d_tma_ok && (!is_masked(p) || p.m % 64 == 0)) return Sm90GemmEpilogue::kBf16Tma;
    return Sm90GemmEpilogue::kBf16Direct;
}

std::string make_symbol(const GemmKernelKey& key) {
    static const char* const kEpis[] = {"_tma", "_direct", "_accum"};
    return gemm_symbol(std::string("sm90_bf16_gemm_") + (key.a_mn_major ? "t" : "n") + (key.b_mn_major ? "n" : "t"), key) +
           grouped_symbol_suffix(key) + kEpis[key.epilogue] + (key.d_fp32 ? "_f32" : "_bf16") + (key.with_c ? "_c" : "") +
           knobs::symbol_suffix(bf16_knobs(), key) + padding_symbol_suffix(key) +
           (key.batch_splits != 0 ? fmt::format("_bs{}", key.batch_splits) : "");
}

}  // namespace

const char* Bf16GemmTraits::op_name(const GemmProblem& p) {
    switch (p.mode) {
        case GemmGroupedMode::kMGroupedContiguous: return "m_grouped_bf16_gemm_contiguous";
        case GemmGroupedMode::kMGroupedContiguousPsum: return "m_grouped_bf16_gemm_contiguous (psum layout)";
        case GemmGroupedMode::kMGroupedMasked: return "m_grouped_bf16_gemm_masked";
        case GemmGroupedMode::kKGroupedContiguous: return "k_grouped_bf16_gemm_tn_contiguous";
        case GemmGroupedMode::kBatchReduced: return "einsum('bmk,bnk->mn')";
        case GemmGroupedMode::kHeadBatched: return p.b_k_major ? "einsum('bhr,hdr->bhd')" : "einsum('bhd,hdr->bhr')";
        default: break;
    }
    if (p.a_k_major) return p.b_k_major ? "bf16_gemm_nt" : "bf16_gemm_nn";
    return p.b_k_major ? "bf16_gemm_tt" : "bf16_gemm_tn";
}

const knobs::KnobTable& Bf16GemmTraits::knob_table() { return bf16_knobs(); }

void Bf16GemmTraits::check(const char* op, const GemmDesc& desc) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    const bool masked = is_masked(p), k_grouped = is_k_grouped(p), m_grouped = is_m_grouped(p);
    if (!o.a || !o.b || !o.d) fail(op, "null pointer argument");
    if (const char* array = grouped_array_name(p.mode); array != nullptr && o.grouped == nullptr) fail(op, std::string(array) + " is null");
    if (!aligned(o.a, 16) || !aligned(o.b, 16)) fail(op, "a and b must be 16-byte aligned");
    const int64_t a_inner = p.a_k_major ? k : m, b_inner = p.b_k_major ? k : n;
    if (o.lda < a_inner || o.lda % 8 != 0)
        fail(op, std::string("lda must be >= ") + (p.a_k_major ? "K" : "M") + " and a multiple of 8");
    if (o.ldb < b_inner || o.ldb % 8 != 0)
        fail(op, std::string("ldb must be >= ") + (p.b_k_major ? "K" : "N") + " and a multiple of 8");
    if (o.ldd < n) fail(op, "ldd must be >= N");
    if (o.c && o.ldc < n) fail(op, "ldc must be >= N");
    const int64_t kMaxU32 = int64_t(1) << 32;
    if (o.lda >= kMaxU32 || o.ldb >= kMaxU32 || o.ldd >= kMaxU32 || o.ldc >= kMaxU32)
        fail(op, "row strides must be < 2^32 elements");
    const int out_elem = p.d_fp32 ? 4 : 2;
    if (!aligned(o.d, out_elem) || (o.c && !aligned(o.c, out_elem))) fail(op, "d and c must be element-aligned");
    if (is_einsum(p)) {
        // A is K-major; batch-reduced: a [G, M, K], b [G, N, K]; head-batched: a = x [M, G, K] (lda the row
        // stride, a_group_stride the head stride), d = z [M, G, N] with N-wide heads side by side.
        if (!p.a_k_major) fail(op, "a must be K-major");
        if (o.a_group_stride % 8 != 0) fail(op, "a_group_stride must be a multiple of 8");
        if (is_batch_reduced(p)) {
            if (!p.b_k_major) fail(op, "b must be K-major");
            if (p.batch_splits < 1 || p.batch_splits > 64 || p.batch_splits > p.num_groups)
                fail(op, "batch_splits must be in [1, min(64, number of batches)]");
            if (p.batch_splits > 1 && (!p.d_fp32 || o.c || o.ldd != n))
                fail(op, "split batches store FP32 partial tiles without C into a packed [splits * M, N] d");
            if (int64_t(p.num_groups) * ((k + 63) / 64 * 64) >= (int64_t(1) << 31))
                fail(op, "number of batches * align(K, 64) must be < 2^31");
            if (o.a_group_stride < int64_t(m) * o.lda) fail(op, "a_group_stride must cover one batch [M, K]");
            if (o.b_group_stride < int64_t(n) * o.ldb) fail(op, "b_group_stride must cover one batch [N, K]");
        } else {
            if (p.d_fp32 || o.c) fail(op, "head-batched D is bfloat16 without C");
            if (o.a_group_stride < k || o.lda < int64_t(p.num_groups) * o.a_group_stride)
                fail(op, "a must be [M, G, K] with head stride >= K and row stride >= G * head stride");
            if (o.d_group_stride != n || o.ldd < int64_t(n) * p.num_groups)
                fail(op, "d must be [M, G, N] with head stride N and row stride >= G * N");
            if (n % 2 != 0) fail(op, "N must be even (paired BF16 stores at each head's column offset)");
            if (int64_t(p.num_groups) * n >= kMaxU32) fail(op, "num_groups * N must be < 2^32");
        }
        if (p.b_k_major ? o.b_group_stride < int64_t(n) * o.ldb : o.b_group_stride < int64_t(k) * o.ldb)
            fail(op, "b_group_stride too small for [G, N, K] / [G, K, N]");
        if (o.b_group_stride % 8 != 0) fail(op, "b_group_stride must be a multiple of 8");
    }
    if (m_grouped) {
        if (p.b_k_major ? o.b_group_stride < int64_t(n) * o.ldb : o.b_group_stride < int64_t(k) * o.ldb)
            fail(op, "b_group_stride too small for [G, N, K] / [G, K, N]");
        if (o.b_group_stride % 8 != 0) fail(op, "b_group_stride must be a multiple of 8");
    }
    if (masked) {
        const int64_t a_rows = p.a_k_major ? m : k;
        if (o.a_group_stride < a_rows * o.lda || o.a_group_stride % 8 != 0)
            fail(op, "a_group_stride must cover one group and be a multiple of 8");
        if (o.d_group_stride != int64_t(m) * o.ldd)
            fail(op, "d must be contiguous across groups (stride(0) == max_m * ldd)");
        if (o.c && o.c_group_stride != int64_t(m) * o.ldc)
            fail(op, "c must be contiguous across groups (stride(0) == max_m * ldc)");
        if (int64_t(p.num_groups) * m >= kMaxU32) fail(op, "num_groups * max_m must be < 2^32");
    }
    if (k_grouped) {
        // D rows are addressed as g * M + row in a [G * M, N] view; the FP32 epilogue adds C in place.
        if (!p.d_fp32) fail(op, "d must be float32");
        if (o.d_group_stride != int64_t(m) * o.ldd) fail(op, "d must be contiguous across groups (stride(0) == M * ldd)");
        if (o.c && o.c_group_stride != int64_t(m) * o.ldc)
            fail(op, "c must be contiguous across groups (stride(0) == M * ldc)");
        if (int64_t(p.num_groups) * m >= kMaxU32) fail(op, "num_groups * M must be < 2^32");
    }
}

gemm_launch::ConfigQuery Bf16GemmTraits::config_query(const GemmProblem& p, int num_sms, int smem_limit) {
    const bool masked = is_masked(p), k_grouped = is_k_grouped(p);
    gemm_launch::ConfigQuery q;
    q.rows_per_group = masked ? std::max(1, std::min(p.expected_m > 0 ? p.expected_m : p.m, p.m)) : 0;
    q.m = masked ? q.rows_per_group * p.num_groups : p.m;
    q.n = p.n;
    // K-grouped: per-group tiles with a K that changes from call to call; choose for a bucketed average.
    q.k = k_grouped ? heuristics::sm90_bf16_k_grouped_hint_k(p.k, p.num_groups) : p.k;
    if (is_head_batched(p)) {
        // G GEMMs of M rows each: modelled like a masked problem with every group full.
        q.rows_per_group = p.m;
        q.m = p.m * p.num_groups;
    } else if (is_batch_reduced(p)) {
        // One M x N output per batch split (splits x M rows of partial tiles), whose K loop walks its batches'
        // (zero-padded) K blocks.
        const int splits = std::max(1, p.batch_splits);
        q.m = p.m * splits;
        q.k = (p.num_groups + splits - 1) / splits *
              ((p.k + heuristics::kSm90Bf16BlockK - 1) / heuristics::kSm90Bf16BlockK * heuristics::kSm90Bf16BlockK);
    }
    q.num_sms = num_sms, q.smem_limit = smem_limit;
    q.mode = int(p.mode);
    q.epilogue = int(epilogue_of(p));
    q.out_bytes = (p.d_fp32 ? 4 : 2) * (p.with_c ? 2 : 1);
    q.b_mn_major = !p.b_k_major;
    q.groups = k_grouped ? p.num_groups : 1;
    return q;
}

// The kernel's knobs, in the order of DG_BF16_GEMM_CONFIG's fields (adding one: docs/architecture.md).
const knobs::KnobTable& bf16_knobs() {
    using heuristics::Sm90GemmConfig;
    static const knobs::KnobTable table{
        .variable = kBf16ConfigEnv,
        .required = 3,
        .knobs =
            {
                knobs::block_m_64_128_knob(),
                knobs::block_n_knob(heuristics::kSm90Bf16MaxBlockN),
                knobs::stages_knob(heuristics::kSm90Bf16MinStages, heuristics::kSm90Bf16MaxStages),
                {.name = "multicast", .field = &Sm90GemmConfig::multicast, .legal = {{0, 1}},
                 .meaning = "0 = off, 1 = B multicast over a 2-CTA cluster when legal, absent = the heuristic's",
                 .absent = -1, .offset = 1, .tune = {0, 1},
                 .suffix = [](const GemmKernelKey& k) -> std::string { return k.multicast != 0 ? "_mc2" : ""; },
                 .template_arg = "kNumTMAMulticast (ClusterPairScheduler)"},
            },
    };
    return table;
}

// DG_BF16_GEMM_CONFIG (dense ops only) of the current settings generation. Parsed again only after
// reload_settings(), so a call compares one pointer. Called with the config memo's lock held.
void Bf16GemmTraits::set_override(const char* op, const jit::Settings& settings,
                                  gemm_launch::ConfigQuery& q) {
    if (q.mode != int(GemmGroupedMode::kNone)) return;
    static const jit::Settings* parsed_for = nullptr;
    static knobs::Forced parsed;
    if (parsed_for != &settings) {
        // A throw leaves parsed_for stale.
        parsed = knobs::parse_forced(bf16_knobs(), settings.bf16_gemm_config, op);
        parsed_for = &settings;
    }
    q.forced = parsed;
}

// The einsum layouts' BLOCK_N unit (heuristics::choose_sm90_bf16_config): the head width, or 128 for the
// batch-reduced GEMM (einsum.cpp splits its batches for 128 x 128 tiles); 0 for the other modes.
static int einsum_n_unit(const gemm_launch::ConfigQuery& q) {
    if (q.mode == int(GemmGroupedMode::kHeadBatched)) return q.n;
    return q.mode == int(GemmGroupedMode::kBatchReduced) ? 128 : 0;
}

Bf16GemmTraits::Config Bf16GemmTraits::choose(const char* op, const gemm_launch::ConfigQuery& q) {
    const Sm90GemmEpilogue epilogue = Sm90GemmEpilogue(q.epilogue);
    Config chosen;
    if (q.forced.active()) {
        chosen = with_op_name(op, [&] {
            return apply_sm90_bf16_config_override(knobs::apply_forced(bf16_knobs(), q.forced, Config{}),
                                                   q.b_mn_major != 0, epilogue, q.smem_limit);
        });
    } else {
        chosen = heuristics::choose_sm90_bf16_config(q.m, q.n, q.k, q.num_sms, q.smem_limit, q.b_mn_major != 0,
                                                          epilogue, q.out_bytes, q.rows_per_group, q.groups,
                                                          gemm_launch::block_multiples(q), einsum_n_unit(q));
    }
    // The DG_PRINT_CONFIGS text: the config, and whether it was forced (with a forced multicast that is not
    // legal for this shape / layout, which falls back to off).
    if (jit::settings().print_configs) {
        std::string text = heuristics::sm90_bf16_to_string(chosen);
        if (q.forced.active()) {
            text += std::string(" (forced by ") + kBf16ConfigEnv;
            if (chosen.multicast == 2 &&
                heuristics::choose_sm90_bf16_multicast(q.m, chosen, q.mode, q.b_mn_major != 0, 2) == 1)
                text += "; multicast not legal here, off";
            text += ")";
        }
        log_config(op, q.m, q.n, q.k, q.num_sms, text);
    }
    return chosen;
}

GemmKernelKey Bf16GemmTraits::kernel_key(const char* op, const GemmProblem& p, const Config& config, int,
                                         const CompiledDims& dims) {
    if (config.num_stages < heuristics::kSm90Bf16MinStages) fail(op, "not enough shared memory on this device");
    GemmKernelKey key = gemm_kernel_key(GemmKernel::kBf16, config);
    key.a_mn_major = !p.a_k_major;
    key.b_mn_major = !p.b_k_major;
    set_grouped_layout(op, p, key);
    key.epilogue = uint8_t(epilogue_of(p));
    key.d_fp32 = p.d_fp32;
    key.with_c = p.with_c;
    // A multicast forced by DG_BF16_GEMM_CONFIG wins over the caller's request (it is a tuning override).
    const int request = config.multicast != 0 ? config.multicast : p.multicast;
    key.multicast =
        heuristics::choose_sm90_bf16_multicast(p.m, config, int(p.mode), key.b_mn_major, request) == 2 ? 1 : 0;
    // Head-batched TMA stores: D's 2-D view puts the heads side by side, and a store box straddling a head's
    // last column would write into the next head: only whole tiles (N a multiple of BLOCK_N) store that way.
    if (is_head_batched(p) && key.epilogue == uint8_t(Sm90GemmEpilogue::kBf16Tma) && p.n % config.block_n != 0)
        key.epilogue = uint8_t(Sm90GemmEpilogue::kBf16Direct);
    if (is_batch_reduced(p)) key.batch_splits = uint8_t(p.batch_splits > 1 ? p.batch_splits : 0);
    dims.apply(key, p.m, p.n, p.k);
    if (is_k_grouped(p)) key.k = 0;  // each group has its own K: never a kernel constant
    return key;
}

// The scheduler and epilogue types, at file scope before the entry point.
constexpr char kTypesTemplate[] =
    "\nusing DgScheduler = {scheduler};\n"
    "using DgEpilogue = deep_gemm::{epilogue};\n";
// The entry point's body: the kernel with its compile-time choices.
constexpr char kBodyTemplate[] =
    "    deep_gemm::sm90_bf16_gemm_impl<{bm}u, {bn}u, {stages}u, {group_n}u, {a_mn_major}, {b_mn_major}, {m}u, {n}u, "
    "{k}u, DgScheduler, DgEpilogue, {cluster}u>(\n"
    "        {args});\n";
// The host sizes shared memory with its own formula: make the device layout agree.
constexpr char kTrailerTemplate[] =
    "static_assert(deep_gemm::Sm90Bf16GemmLayout<{bm}u, {bn}u, {stages}u, {a_mn_major}, {b_mn_major}, "
    "DgEpilogue::kSmemBytes>::kSmemBytes == {smem}u, \"host/device shared memory size mismatch\");\n";

GemmKernelSource Bf16GemmTraits::source(const GemmKernelKey& key) {
    GemmKernelSource src;
    src.name = "sm90_bf16_gemm";
    src.symbol = make_symbol(key);
    src.num_threads = 128 + 128 * (key.block_m / 64);
    src.smem_bytes = heuristics::sm90_bf16_smem_bytes(key.block_m, key.block_n, key.num_stages, key.b_mn_major,
                                                      Sm90GemmEpilogue(key.epilogue));
    const unsigned bm = key.block_m, bn = key.block_n;
    const char* amn = key.a_mn_major ? "true" : "false";
    const char* bmn = key.b_mn_major ? "true" : "false";
    const std::string scheduler = scheduler_type(key, key.multicast != 0 ? "ClusterPairScheduler" : "GroupedOrderScheduler");
    std::string epilogue;
    switch (Sm90GemmEpilogue(key.epilogue)) {
        case Sm90GemmEpilogue::kBf16Tma: epilogue = fmt::format("Bf16TmaStoreEpilogue<{}u, {}u>", bm, bn); break;
        case Sm90GemmEpilogue::kBf16Direct: epilogue = fmt::format("Bf16DirectStoreEpilogue<{}u, {}u>", bm, bn); break;
        default:
            epilogue = fmt::format("AccumDirectStoreEpilogue<{}u, {}u, {}, {}>", bm, bn, key.d_fp32 ? "true" : "false",
                                   key.with_c ? "true" : "false");
            break;
    }
    const std::string prelude = wgmma_selection(0, key.block_n) + "#include <deep_gemm/impls/sm90_bf16_gemm.cuh>\n" +
                                fmt::format(kTypesTemplate, fmt::arg("scheduler", scheduler), fmt::arg("epilogue", epilogue));
    const std::string body =
        fmt::format(kBodyTemplate, fmt::arg("bm", bm), fmt::arg("bn", bn), fmt::arg("stages", key.num_stages),
                    fmt::arg("group_n", key.group_n), fmt::arg("a_mn_major", amn), fmt::arg("b_mn_major", bmn),
                    fmt::arg("m", key.m), fmt::arg("n", key.n), fmt::arg("k", key.k),
                    fmt::arg("cluster", key.multicast != 0 ? 2 : 1), fmt::arg("args", param_names<Sm90Bf16GemmParams>()));
    const std::string trailer =
        fmt::format(kTrailerTemplate, fmt::arg("bm", bm), fmt::arg("bn", bn), fmt::arg("stages", key.num_stages),
                    fmt::arg("a_mn_major", amn), fmt::arg("b_mn_major", bmn), fmt::arg("smem", src.smem_bytes));
    src.code = render_kernel_source<Sm90Bf16GemmParams>({prelude, src.symbol, src.num_threads, body, trailer});
    return src;
}

void Bf16GemmTraits::prepare(const char* op, const GemmDesc& desc, const GemmKernelKey& key,
                             int num_sms, gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    const int m = p.m, n = p.n, k = p.k;
    const bool masked = is_masked(p), m_grouped = is_m_grouped(p), k_grouped = is_k_grouped(p);
    const unsigned cluster = key.multicast != 0 ? 2u : 1u;
    const uint32_t bk = heuristics::kSm90Bf16BlockK;
    const std::string what = std::string(op) + ": tensor map for ";
    CUtensorMap* t = prepared.tmaps;
    // Tensor maps (innermost dimension first). A and B are 3-D {inner, outer, group}.
    if (is_head_batched(p)) {
        // x [M, G, K] as {K, G, M}: the head is the middle dimension (increasing strides); box {64, 1, BLOCK_M}
        // lands in shared memory exactly as the usual {64, BLOCK_M} box does.
        const uint64_t dims[3] = {uint64_t(k), uint64_t(p.num_groups), uint64_t(m)};
        const uint64_t strides[2] = {uint64_t(o.a_group_stride) * 2, uint64_t(o.lda) * 2};
        const uint32_t box[3] = {bk, 1u, uint32_t(key.block_m)};
        t[0] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, o.a, dims, strides, box,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, (what + "a").c_str());
    } else {
        const uint64_t a_groups = (masked || is_batch_reduced(p)) ? uint64_t(p.num_groups) : 1;
        const uint64_t a_inner = p.a_k_major ? uint64_t(k) : uint64_t(m), a_outer = p.a_k_major ? uint64_t(m) : uint64_t(k);
        const uint64_t a_gstride = (masked || is_batch_reduced(p)) ? uint64_t(o.a_group_stride) * 2 : uint64_t(o.lda) * 2 * a_outer;
        t[0] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o.a, a_inner, a_outer, a_groups, uint64_t(o.lda) * 2,
                            std::max<uint64_t>(a_gstride, uint64_t(o.lda) * 2), bk,
                            p.a_k_major ? uint32_t(key.block_m) : bk, CU_TENSOR_MAP_SWIZZLE_128B, (what + "a").c_str());
    }
    {
        const bool b_grouped = m_grouped || is_einsum(p);
        const uint64_t b_groups = b_grouped ? uint64_t(p.num_groups) : 1;
        const uint64_t b_inner = p.b_k_major ? uint64_t(k) : uint64_t(n), b_outer = p.b_k_major ? uint64_t(n) : uint64_t(k);
        const uint64_t b_gstride = b_grouped ? uint64_t(o.b_group_stride) * 2 : uint64_t(o.ldb) * 2 * b_outer;
        // Multicast: each CTA of the pair loads half of a K-major B box (MN-major: half of the 64-wide atoms).
        t[1] = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o.b, b_inner, b_outer, b_groups, uint64_t(o.ldb) * 2,
                            std::max<uint64_t>(b_gstride, uint64_t(o.ldb) * 2), bk,
                            p.b_k_major ? uint32_t(key.block_n / cluster) : bk, CU_TENSOR_MAP_SWIZZLE_128B,
                            (what + "b").c_str());
    }
    std::memset(&t[2], 0, sizeof(t[2]));
    if (key.epilogue == int(Sm90GemmEpilogue::kBf16Tma)) {
        const int sw = heuristics::sm90_bf16_d_swizzle_bytes(key.block_n);
        const uint64_t d_rows = masked ? uint64_t(m) * uint64_t(p.num_groups) : uint64_t(m);
        // Head-batched: z [M, G, N] as [M, G * N] (heads side by side).
        const uint64_t d_cols = is_head_batched(p) ? uint64_t(n) * uint64_t(p.num_groups) : uint64_t(n);
        t[2] = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o.d, d_cols, d_rows, uint64_t(o.ldd) * 2,
                            uint32_t(sw / 2), 64u, swizzle_of(sw), (what + "d").c_str());
    }

    const int64_t n_blocks = (n + key.block_n - 1) / key.block_n;
    const int64_t m_blocks = is_batch_reduced(p) ? int64_t(std::max(1, p.batch_splits)) * ((m + key.block_m - 1) / key.block_m)
                           : (masked || k_grouped || is_head_batched(p)) ? int64_t(p.num_groups) * ((m + key.block_m - 1) / key.block_m)
                                                   : (m + key.block_m - 1) / key.block_m;
    jit::LaunchConfig& launch = prepared.launch;
    launch.grid[0] = cluster > 1 ? persistent_pair_grid(num_sms, (m_blocks + 1) / 2 * n_blocks)
                                 : persistent_grid(num_sms, m_blocks * n_blocks);
    launch.block[0] = unsigned(128 + 128 * (key.block_m / 64));
    launch.smem_bytes = unsigned(heuristics::sm90_bf16_smem_bytes(key.block_m, key.block_n, key.num_stages,
                                                                  key.b_mn_major, Sm90GemmEpilogue(key.epilogue)));
    launch.cluster_x = cluster;
}

void Bf16GemmTraits::launch(const GemmDesc& desc, const gemm_launch::PreparedLaunch& prepared) {
    const GemmProblem& p = desc.problem;
    const GemmOperands& o = desc.operands;
    jit::LaunchConfig launch = prepared.launch;
    launch.stream = o.stream;
    const CUtensorMap* t = prepared.tmaps;
    Sm90Bf16GemmParams params{};
    params.tmap_a = tma_descriptor(t[0]), params.tmap_b = tma_descriptor(t[1]), params.tmap_d = tma_descriptor(t[2]);
    params.d = o.d, params.ldd = unsigned(o.ldd), params.c = o.c, params.ldc = unsigned(o.ldc), params.grouped = o.grouped;
    params.m = unsigned(p.m), params.n = unsigned(p.n), params.k = unsigned(p.k);
    params.num_groups = unsigned(p.mode != GemmGroupedMode::kNone ? p.num_groups : 1);
    launch_with_params(*prepared.kernel, launch, params);
}

}  // namespace deep_gemm::kernels
