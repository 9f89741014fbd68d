#include "sm90_fp8_mqa_logits.hpp"

#include <string>

#include "common.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits_params.hpp"

namespace deep_gemm::kernels {

namespace {

jit::KernelTable<MqaLogitsConfig, MqaLogitsConfigHash>& table() {
    static jit::KernelTable<MqaLogitsConfig, MqaLogitsConfigHash> instance;
    return instance;
}

int align1024(int bytes) { return (bytes + 1023) / 1024 * 1024; }

void check_config(const MqaLogitsConfig& c) {
    if (c.num_heads != 32 and c.num_heads != 64)
        throw jit::Error("sm90_fp8_mqa_logits: num_heads must be 32 or 64; got " + std::to_string(c.num_heads));
    if (c.head_dim != 32 and c.head_dim != 64 and c.head_dim != 128)
        throw jit::Error("sm90_fp8_mqa_logits: head_dim must be 32, 64 or 128; got " + std::to_string(c.head_dim));
}

}  // namespace

uint32_t MqaLogitsConfig::key() const {
    uint32_t k = static_cast<uint32_t>(num_heads) * 1024u + static_cast<uint32_t>(head_dim);
    for (bool flag : {bf16_logits, compressed, clean}) k = k * 2 + (flag ? 1 : 0);
    return k;
}

int mqa_logits_smem_bytes(const MqaLogitsConfig& c) {
    // Mirrors Sm90MqaLogitsLayout: q tile, kv slots (each 1024-aligned), 1 + 2 * stages mbarriers.
    return align1024(kMqaQTileColumns * c.head_dim) + kMqaStages * align1024(64 * c.head_dim) + (1 + 2 * kMqaStages) * 8;
}

namespace {

// Before the entry point: the host's shared memory formula and thread count, checked by the device.
constexpr char kPreludeTemplate[] =
    "#define DG_WGMMA_FP8_N {columns}\n"
    "#define DG_WGMMA_BF16_N 0\n"
    "#define DG_MQA_LOGITS_T {logits_t}\n"
    "#include <deep_gemm/impls/sm90_fp8_mqa_logits.cuh>\n"
    "\n"
    "using Layout = deep_gemm::mqa::Sm90MqaLogitsLayout<{params}>;\n"
    "static_assert(Layout::kSmemBytes == {smem}, \"host smem formula\");\n"
    "static_assert(Layout::kNumThreads == {threads}, \"host thread count\");\n";
constexpr char kBodyTemplate[] =
    "    deep_gemm::mqa::sm90_fp8_mqa_logits_impl<{params}, DG_MQA_LOGITS_T, {compressed}, {clean}>(\n"
    "        {args});\n";

}  // namespace

jit::KernelSource sm90_fp8_mqa_logits_source(const MqaLogitsConfig& c) {
    check_config(c);
    const int queries = mqa_queries_per_block(c.num_heads);
    const std::string symbol = fmt::format("deep_gemm_sm90_fp8_mqa_logits_h{}_d{}{}{}{}", c.num_heads, c.head_dim,
                                           c.bf16_logits ? "_bf16" : "_f32", c.compressed ? "_compressed" : "",
                                           c.clean ? "_clean" : "");
    const std::string params = fmt::format("{}, {}, {}, {}", c.num_heads, c.head_dim, queries, kMqaStages);
    const std::string prelude =
        fmt::format(kPreludeTemplate, fmt::arg("columns", kMqaQTileColumns),
                    fmt::arg("logits_t", c.bf16_logits ? "__nv_bfloat16" : "float"), fmt::arg("params", params),
                    fmt::arg("smem", mqa_logits_smem_bytes(c)), fmt::arg("threads", kMqaThreads));
    const std::string body = fmt::format(kBodyTemplate, fmt::arg("params", params),
                                         fmt::arg("compressed", c.compressed ? "true" : "false"),
                                         fmt::arg("clean", c.clean ? "true" : "false"),
                                         fmt::arg("args", param_names<Sm90Fp8MqaLogitsParams>()));
    std::string code = render_kernel_source<Sm90Fp8MqaLogitsParams>({prelude, symbol, kMqaThreads, body, ""});
    return jit::KernelSource{"sm90_fp8_mqa_logits", symbol, std::move(code)};
}

void sm90_fp8_mqa_logits(const MqaLogitsArgs& args) {
    const MqaLogitsConfig& c = args.config;
    check_config(c);
    if (args.seq_len <= 0) return;
    sm90_device_info("sm90_fp8_mqa_logits", args.device);
    const jit::LoadedKernel& kernel = table().get(args.device, c, [&c] { return sm90_fp8_mqa_logits_source(c); });

    const int queries = mqa_queries_per_block(c.num_heads);
    const auto swizzle = swizzle_of(c.head_dim);
    // q as the [S * H, D] matrix: one box = the N rows of one CTA's queries (rows past S * H read zeros).
    const CUtensorMap tmap_q = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.q, uint64_t(c.head_dim),
                                            uint64_t(args.seq_len) * uint64_t(c.num_heads), uint64_t(c.head_dim),
                                            uint32_t(c.head_dim), uint32_t(kMqaQTileColumns), swizzle, "q");
    // kv: 64-row boxes; with S_kv == 0 no tile is loaded, but the map needs one row.
    const uint64_t kv_rows = args.seq_len_kv > 0 ? uint64_t(args.seq_len_kv) : 1;
    const CUtensorMap tmap_kv = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.kv, uint64_t(c.head_dim), kv_rows,
                                             uint64_t(args.kv_stride), uint32_t(c.head_dim), 64u, swizzle, "kv");

    jit::LaunchConfig config;
    config.grid[0] = static_cast<unsigned>((args.seq_len + queries - 1) / queries);
    config.block[0] = kMqaThreads;
    config.smem_bytes = static_cast<unsigned>(mqa_logits_smem_bytes(c));
    config.stream = args.stream;

    Sm90Fp8MqaLogitsParams params{tma_descriptor(tmap_q),
                                  tma_descriptor(tmap_kv),
                                  args.kv_scale,
                                  args.weights,
                                  static_cast<unsigned long long>(args.weights_stride),
                                  args.ks,
                                  args.ke,
                                  args.logits,
                                  static_cast<unsigned long long>(args.logits_stride),
                                  static_cast<unsigned>(args.seq_len),
                                  static_cast<unsigned>(args.seq_len_kv),
                                  static_cast<unsigned>(args.num_cols)};
    launch_with_params(kernel, config, params);
}

}  // namespace deep_gemm::kernels
