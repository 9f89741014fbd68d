#include "sm90_fp8_mqa_logits.hpp"

#include <string>

#include "common.hpp"

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

jit::KernelSource sm90_fp8_mqa_logits_source(const MqaLogitsConfig& c) {
    check_config(c);
    const int queries = mqa_queries_per_block(c.num_heads);
    const std::string symbol = "deep_gemm_sm90_fp8_mqa_logits_h" + std::to_string(c.num_heads) + "_d" + std::to_string(c.head_dim) +
                               (c.bf16_logits ? "_bf16" : "_f32") + (c.compressed ? "_compressed" : "") + (c.clean ? "_clean" : "");
    const std::string out_t = c.bf16_logits ? "__nv_bfloat16" : "float";
    const std::string params = std::to_string(c.num_heads) + ", " + std::to_string(c.head_dim) + ", " + std::to_string(queries) + ", " +
                               std::to_string(kMqaStages);
    std::string code =
        "#define DG_WGMMA_FP8_N " + std::to_string(kMqaQTileColumns) + "\n"
        "#define DG_WGMMA_BF16_N 0\n"
        "#include <deep_gemm/impls/sm90_fp8_mqa_logits.cuh>\n"
        "\n"
        "using Layout = deep_gemm::mqa::Sm90MqaLogitsLayout<" + params + ">;\n"
        "static_assert(Layout::kSmemBytes == " + std::to_string(mqa_logits_smem_bytes(c)) + ", \"host smem formula\");\n"
        "static_assert(Layout::kNumThreads == " + std::to_string(kMqaThreads) + ", \"host thread count\");\n"
        "\n"
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kMqaThreads) + ", 1)\n" +
        symbol + "(const __grid_constant__ deep_gemm::TmaDescriptor tmap_q, const __grid_constant__ deep_gemm::TmaDescriptor tmap_kv,\n"
        "        const float* kv_scale, const float* weights, unsigned long long ld_w, const int* ks, const int* ke,\n"
        "        " + out_t + "* logits, unsigned long long ld_logits, unsigned seq_len, unsigned seq_len_kv, unsigned num_cols) {\n"
        "    deep_gemm::mqa::sm90_fp8_mqa_logits_impl<" + params + ", " + out_t + ", " + (c.compressed ? "true" : "false") + ", " +
        (c.clean ? "true" : "false") + ">(\n"
        "        tmap_q, tmap_kv, kv_scale, weights, ld_w, ks, ke, logits, ld_logits, seq_len, seq_len_kv, num_cols);\n"
        "}\n";
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

    const float* kv_scale = args.kv_scale;
    const float* weights = args.weights;
    unsigned long long ld_w = static_cast<unsigned long long>(args.weights_stride);
    const int* ks = args.ks;
    const int* ke = args.ke;
    void* logits = args.logits;
    unsigned long long ld_logits = static_cast<unsigned long long>(args.logits_stride);
    unsigned seq_len = static_cast<unsigned>(args.seq_len), seq_len_kv = static_cast<unsigned>(args.seq_len_kv),
             num_cols = static_cast<unsigned>(args.num_cols);
    void* params[] = {const_cast<CUtensorMap*>(&tmap_q), const_cast<CUtensorMap*>(&tmap_kv), &kv_scale, &weights, &ld_w, &ks, &ke,
                      &logits, &ld_logits, &seq_len, &seq_len_kv, &num_cols};
    kernel.launch(config, params);
}

}  // namespace deep_gemm::kernels
