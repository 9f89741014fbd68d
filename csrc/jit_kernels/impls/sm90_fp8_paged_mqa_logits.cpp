#include "sm90_fp8_paged_mqa_logits.hpp"

#include <string>

#include "common.hpp"

namespace deep_gemm::kernels {

namespace {

jit::KernelTable<PagedMqaConfig, PagedMqaConfigHash>& table() {
    static jit::KernelTable<PagedMqaConfig, PagedMqaConfigHash> instance;
    return instance;
}

const char* b(bool v) { return v ? "true" : "false"; }

void check_config(const PagedMqaConfig& c) {
    if (c.num_heads != 32 and c.num_heads != 64)
        throw jit::Error("sm90_fp8_paged_mqa_logits: num_heads must be 32 or 64; got " + std::to_string(c.num_heads));
    if (c.next_n != 1 and c.next_n != 2 and c.next_n != 4)
        throw jit::Error("sm90_fp8_paged_mqa_logits: next_n must be 1, 2 or 4; got " + std::to_string(c.next_n));
}

}  // namespace

uint32_t PagedMqaConfig::key() const {
    uint32_t k = uint32_t(num_heads) * 256u + uint32_t(next_n);
    for (bool flag : {lens_2d, clean, bf16_logits}) k = k * 2 + (flag ? 1 : 0);
    return k;
}

int paged_mqa_smem_bytes(const PagedMqaConfig& c) {
    const int n = c.num_heads * c.next_n;
    return kPagedMqaStages * (kPagedMqaBlockKv * kPagedMqaHeadDim + kPagedMqaBlockKv * 4) + 2 * n * kPagedMqaHeadDim +
           (2 * kPagedMqaStages + 4) * 8;
}

jit::KernelSource paged_mqa_logits_source(const PagedMqaConfig& c) {
    check_config(c);
    const std::string symbol = "deep_gemm_sm90_fp8_paged_mqa_logits_h" + std::to_string(c.num_heads) + "_n" + std::to_string(c.next_n) +
                               (c.lens_2d ? "_lens2d" : "_lens1d") + (c.clean ? "_clean" : "") + (c.bf16_logits ? "_bf16" : "_f32");
    const std::string n = std::to_string(c.num_heads * c.next_n);
    const std::string tparams = std::to_string(c.num_heads) + "u, " + std::to_string(c.next_n) + "u, " +
                                std::to_string(kPagedMqaStages) + "u";
    const std::string wgs = std::to_string(paged_mqa_math_warpgroups(c));
    const std::string tmap = "const __grid_constant__ deep_gemm::TmaDescriptor";
    std::string code = "#define DG_WGMMA_FP8_N " + n + "\n#define DG_WGMMA_BF16_N 0\n"
        "#include <deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh>\n"
        "\n"
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(paged_mqa_threads(c)) + ", 1)\n" +
        symbol + "(" + tmap + " tmap_q, " + tmap + " tmap_kv, " + tmap + " tmap_sf, const deep_gemm::paged_mqa::Args args) {\n"
        "    deep_gemm::paged_mqa::paged_mqa_logits_impl<" + tparams + ", " + wgs + "u, " + b(c.lens_2d) + ", " + b(c.clean) + ", " +
        (c.bf16_logits ? "__nv_bfloat16" : "float") + ">(tmap_q, tmap_kv, tmap_sf, args);\n"
        "}\n"
        "static_assert(deep_gemm::paged_mqa::threads_of<" + wgs + "u> == " + std::to_string(paged_mqa_threads(c)) +
        ", \"host/device thread count\");\n"
        "static_assert(deep_gemm::paged_mqa::Layout<" + tparams + ">::kSmemBytes == " + std::to_string(paged_mqa_smem_bytes(c)) +
        ", \"host/device shared memory size mismatch\");\n";
    return jit::KernelSource{"sm90_fp8_paged_mqa_logits", symbol, std::move(code)};
}

// Mirrors deep_gemm::paged_mqa::Args (passed by value as one kernel parameter).
struct PagedMqaDeviceArgs {
    const int* context_lens;
    const int* block_table;
    const int* schedule;
    const float* weights;
    const void* kv_cache;
    void* logits;
    long long page_stride, logits_stride;
    int batch, num_pages, table_width, table_stride, max_context_len;
};

void sm90_fp8_paged_mqa_logits(const PagedMqaArgs& a) {
    const PagedMqaConfig& c = a.config;
    check_config(c);
    if (a.batch <= 0 or a.schedule_sms <= 0) return;
    const jit::DeviceInfo& dev = sm90_device_info("fp8_paged_mqa_logits", a.device);
    const int smem = paged_mqa_smem_bytes(c);
    if (smem > dev.max_smem_per_block_optin)
        throw jit::Error("fp8_paged_mqa_logits: the kernel needs " + std::to_string(smem) + " bytes of shared memory; the device allows " +
                         std::to_string(dev.max_smem_per_block_optin));
    const jit::LoadedKernel& kernel = table().get(a.device, c, [&c] { return paged_mqa_logits_source(c); });

    const int n = c.num_heads * c.next_n;
    // q as [B * next_n * H, 128] bytes; one box = the N rows of a batch. kv as {128 B, 64 rows, pages}.
    const CUtensorMap tmap_q = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, a.q, kPagedMqaHeadDim, uint64_t(a.batch) * uint64_t(n),
                                            kPagedMqaHeadDim, kPagedMqaHeadDim, uint32_t(n), CU_TENSOR_MAP_SWIZZLE_128B, "q");
    const CUtensorMap tmap_kv = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, a.kv_cache, kPagedMqaHeadDim, kPagedMqaBlockKv,
                                             uint64_t(a.num_pages), kPagedMqaHeadDim, uint64_t(a.page_stride), kPagedMqaHeadDim,
                                             kPagedMqaBlockKv, CU_TENSOR_MAP_SWIZZLE_128B, "kv_cache");
    // The scales: 64 float32 after each page's FP8 rows, one box per page.
    const uint64_t sf_stride = uint64_t(a.page_stride);
    const CUtensorMap tmap_sf = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                             static_cast<const uint8_t*>(a.kv_cache) + kPagedMqaBlockKv * kPagedMqaHeadDim,
                                             kPagedMqaBlockKv, uint64_t(a.num_pages), sf_stride, kPagedMqaBlockKv, 1,
                                             CU_TENSOR_MAP_SWIZZLE_NONE, "kv_cache scales");
    PagedMqaDeviceArgs args{a.context_lens, a.block_table, a.schedule, a.weights, a.kv_cache, a.logits,
                            (long long)a.page_stride, (long long)a.logits_stride,
                            a.batch, a.num_pages, a.table_width, a.table_stride, a.max_context_len};

    jit::LaunchConfig config;
    config.grid[0] = unsigned(a.schedule_sms);
    config.block[0] = unsigned(paged_mqa_threads(c));
    config.smem_bytes = unsigned(smem);
    config.stream = a.stream;
    CUtensorMap q_map = tmap_q, kv_map = tmap_kv, sf_map = tmap_sf;
    void* params[] = {&q_map, &kv_map, &sf_map, &args};
    kernel.launch(config, params);
}

}  // namespace deep_gemm::kernels
