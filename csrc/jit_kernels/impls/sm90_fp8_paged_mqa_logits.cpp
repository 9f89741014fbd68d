#include "sm90_fp8_paged_mqa_logits.hpp"

#include <string>

#include "common.hpp"
#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits_params.hpp"

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
    if (c.block_kv != kPagedMqaBlockKv and c.block_kv != kPagedMqaSmallBlockKv)
        throw jit::Error("sm90_fp8_paged_mqa_logits: block_kv must be 64 or 32; got " + std::to_string(c.block_kv));
}

}  // namespace

uint32_t PagedMqaConfig::key() const {
    uint32_t k = uint32_t(num_heads) * 256u + uint32_t(next_n);
    for (bool flag : {lens_2d, clean, bf16_logits, block_kv == kPagedMqaSmallBlockKv}) k = k * 2 + (flag ? 1 : 0);
    return k;
}

int paged_mqa_smem_bytes(const PagedMqaConfig& c) {
    const int n = c.num_heads * c.next_n;
    return kPagedMqaStages * (kPagedMqaBlockKv * kPagedMqaHeadDim + kPagedMqaBlockKv * 4) + 2 * n * kPagedMqaHeadDim +
           (2 * kPagedMqaStages + 4) * 8;
}

namespace {

constexpr char kBodyTemplate[] =
    "    deep_gemm::paged_mqa::paged_mqa_logits_impl<{heads}u, {next_n}u, {stages}u, {math_wgs}u, {lens_2d}, {clean}, "
    "{logits_t}, {block_kv}u>({args});\n";
// The host's thread count and shared memory formula: make the device agree.
constexpr char kTrailerTemplate[] =
    "static_assert(deep_gemm::paged_mqa::threads_of<{math_wgs}u> == {threads}, \"host/device thread count\");\n"
    "static_assert(deep_gemm::paged_mqa::Layout<{heads}u, {next_n}u, {stages}u>::kSmemBytes == {smem}, "
    "\"host/device shared memory size mismatch\");\n";

}  // namespace

jit::KernelSource paged_mqa_logits_source(const PagedMqaConfig& c) {
    check_config(c);
    const std::string symbol = fmt::format("deep_gemm_sm90_fp8_paged_mqa_logits_h{}_n{}{}{}{}{}", c.num_heads, c.next_n,
                                           c.lens_2d ? "_lens2d" : "_lens1d", c.clean ? "_clean" : "",
                                           c.bf16_logits ? "_bf16" : "_f32",
                                           c.block_kv == kPagedMqaBlockKv ? "" : "_kv" + std::to_string(c.block_kv));
    const std::string prelude = fmt::format("#define DG_WGMMA_FP8_N {}\n#define DG_WGMMA_BF16_N 0\n"
                                            "#include <deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh>\n",
                                            c.num_heads * c.next_n);
    const int math_wgs = paged_mqa_math_warpgroups(c);
    const std::string body =
        fmt::format(kBodyTemplate, fmt::arg("heads", c.num_heads), fmt::arg("next_n", c.next_n),
                    fmt::arg("stages", kPagedMqaStages), fmt::arg("math_wgs", math_wgs), fmt::arg("lens_2d", b(c.lens_2d)),
                    fmt::arg("clean", b(c.clean)), fmt::arg("logits_t", c.bf16_logits ? "__nv_bfloat16" : "float"),
                    fmt::arg("block_kv", c.block_kv),
                    fmt::arg("args", param_names<Sm90Fp8PagedMqaLogitsParams>()));
    const std::string trailer =
        fmt::format(kTrailerTemplate, fmt::arg("math_wgs", math_wgs), fmt::arg("threads", paged_mqa_threads(c)),
                    fmt::arg("heads", c.num_heads), fmt::arg("next_n", c.next_n), fmt::arg("stages", kPagedMqaStages),
                    fmt::arg("smem", paged_mqa_smem_bytes(c)));
    std::string code =
        render_kernel_source<Sm90Fp8PagedMqaLogitsParams>({prelude, symbol, paged_mqa_threads(c), body, trailer});
    return jit::KernelSource{"sm90_fp8_paged_mqa_logits", symbol, std::move(code)};
}

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
    // q as [B * next_n * H, 128] bytes; one box = the N rows of a batch. kv as {128 B, block_kv rows, blocks}, one
    // box per block (a 64-row tile is one box, or two with 32-row blocks).
    const int rows = c.block_kv;
    const CUtensorMap tmap_q = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, a.q, kPagedMqaHeadDim, uint64_t(a.batch) * uint64_t(n),
                                            kPagedMqaHeadDim, kPagedMqaHeadDim, uint32_t(n), CU_TENSOR_MAP_SWIZZLE_128B, "q");
    const CUtensorMap tmap_kv = make_tmap_3d(CU_TENSOR_MAP_DATA_TYPE_UINT8, a.kv_cache, kPagedMqaHeadDim, uint64_t(rows),
                                             uint64_t(a.num_pages), kPagedMqaHeadDim, uint64_t(a.page_stride), kPagedMqaHeadDim,
                                             uint32_t(rows), CU_TENSOR_MAP_SWIZZLE_128B, "kv_cache");
    // The scales: block_kv float32 after each block's FP8 rows, one box per block.
    const uint64_t sf_stride = uint64_t(a.page_stride);
    const CUtensorMap tmap_sf = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                             static_cast<const uint8_t*>(a.kv_cache) + rows * kPagedMqaHeadDim, uint64_t(rows),
                                             uint64_t(a.num_pages), sf_stride, uint32_t(rows), 1, CU_TENSOR_MAP_SWIZZLE_NONE,
                                             "kv_cache scales");
    const paged_mqa::Args args{a.context_lens, a.block_table, a.schedule, a.weights,
                               static_cast<const u8*>(a.kv_cache), a.logits, (long long)a.page_stride,
                               (long long)a.logits_stride, a.batch, a.num_pages, a.table_width, a.table_stride,
                               a.max_context_len};

    jit::LaunchConfig config;
    config.grid[0] = unsigned(a.schedule_sms);
    config.block[0] = unsigned(paged_mqa_threads(c));
    config.smem_bytes = unsigned(smem);
    config.stream = a.stream;
    Sm90Fp8PagedMqaLogitsParams params{tma_descriptor(tmap_q), tma_descriptor(tmap_kv), tma_descriptor(tmap_sf), args};
    launch_with_params(kernel, config, params);
}

}  // namespace deep_gemm::kernels
