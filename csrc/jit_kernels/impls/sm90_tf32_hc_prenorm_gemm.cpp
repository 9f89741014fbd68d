#include "sm90_tf32_hc_prenorm_gemm.hpp"

#include <algorithm>
#include <string>

#include "kernel_source.hpp"
#include "split_k_workspace.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/sm90_tf32_hc_prenorm_gemm_params.hpp"

namespace deep_gemm::kernels {

namespace {

constexpr const char* kOp = "tf32_hc_prenorm_gemm";

jit::KernelTable<HcPrenormConfig, HcPrenormConfigHash>& table() {
    static jit::KernelTable<HcPrenormConfig, HcPrenormConfigHash> instance;
    return instance;
}

// The device formula (Layout::smem_bytes): the stage ring, a full and an empty barrier per stage, a flag.
int smem_bytes_of(int block_n, int stages) {
    const int stage = kHcBlockM * kHcBlockK * 2 + block_n * kHcBlockK * 4;
    return stages * stage + stages * 16 + 16;
}

int slot_floats(int block_n) { return block_n / 2 + 2; }

}  // namespace

HcPrenormPlan plan_hc_prenorm(int m, int n, int k, int num_splits, int num_sms) {
    HcPrenormPlan plan;
    plan.config.block_n = std::max(8, (n + 7) / 8 * 8);
    const int stage = kHcBlockM * kHcBlockK * 2 + plan.config.block_n * kHcBlockK * 4;
    plan.config.stages = std::min(kHcMaxStages, (kHcSmemPerCta - 16) / (stage + 16));
    plan.smem_bytes = smem_bytes_of(plan.config.block_n, plan.config.stages);
    plan.num_k_blocks = (k + kHcBlockK - 1) / kHcBlockK;

    // Units per (m block, split): enough for two CTAs per SM when the groups alone do not fill the GPU,
    // each unit keeping kHcMinBlocksPerUnit K blocks, and the last unit's reduction (reduce slots of up to
    // 128 rows, ~14 KB each for n = 24, read by one CTA) bounded: at most 16 slots of full blocks, more
    // when m is small (rows past m cost nothing).
    const int64_t m_blocks = (int64_t(m) + kHcBlockM - 1) / kHcBlockM;
    const int64_t groups = m_blocks * num_splits;
    int reduce = 1;
    if (groups < num_sms) {
        const int64_t fill = 2 * int64_t(num_sms) / groups;
        const int64_t by_k = (plan.num_k_blocks / num_splits) / kHcMinBlocksPerUnit;
        const int64_t by_rows = 16 * kHcBlockM / std::max(1, std::min(m, kHcBlockM));
        reduce = int(std::max<int64_t>(1, std::min({fill, by_k, by_rows, int64_t(64)})));
    }
    plan.reduce = reduce;
    plan.num_units = int(groups * reduce);
    return plan;
}

// The host's shared memory formula and block size, checked against the device's before the entry point.
constexpr char kChecksTemplate[] =
    "\nstatic_assert(deep_gemm::hc_prenorm::Layout<{bn}>::smem_bytes({stages}) == {smem}, "
    "\"host and device shared-memory formulas differ\");\n"
    "static_assert(deep_gemm::hc_prenorm::kThreads == {threads}, \"block size\");\n";
constexpr char kBodyTemplate[] = "    deep_gemm::hc_prenorm::tf32_hc_prenorm_gemm<{bn}, {stages}>(\n        {args});\n";

GemmKernelSource hc_prenorm_source(const HcPrenormConfig& c) {
    GemmKernelSource src;
    src.name = "sm90_tf32_hc_prenorm_gemm";
    src.symbol = fmt::format("deep_gemm_sm90_tf32_hc_prenorm_gemm_n{}_s{}", c.block_n, c.stages);
    src.num_threads = kHcThreads;
    src.smem_bytes = smem_bytes_of(c.block_n, c.stages);
    const std::string prelude =
        "#include <deep_gemm/impls/sm90_tf32_hc_prenorm_gemm.cuh>\n" +
        fmt::format(kChecksTemplate, fmt::arg("bn", c.block_n), fmt::arg("stages", c.stages),
                    fmt::arg("smem", src.smem_bytes), fmt::arg("threads", kHcThreads));
    const std::string body = fmt::format(kBodyTemplate, fmt::arg("bn", c.block_n), fmt::arg("stages", c.stages),
                                         fmt::arg("args", param_names<Sm90Tf32HcPrenormGemmParams>()));
    // Two CTAs per SM.
    src.code = render_kernel_source<Sm90Tf32HcPrenormGemmParams>({prelude, src.symbol, kHcThreads, body, "", 2});
    return src;
}

void tf32_hc_prenorm_gemm(const HcPrenormArgs& args) {
    if (args.m <= 0) return;
    if (args.n < 1 or args.n > kHcMaxN or args.k < 1 or args.num_splits < 1)
        throw jit::Error(std::string(kOp) + ": needs 1 <= n <= 64, k >= 1 and num_splits >= 1");
    const jit::DeviceInfo& dev = sm90_device_info(kOp, args.device);
    const HcPrenormPlan plan = plan_hc_prenorm(args.m, args.n, args.k, args.num_splits, usable_sms(dev, args.num_sms));
    const HcPrenormConfig& c = plan.config;
    const jit::LoadedKernel& kernel = table().get(args.device, c, [&c] { return hc_prenorm_source(c).kernel_source(); });

    // A: 128 rows x 64 BF16 (128 bytes) boxes; B: kBlockN rows x 32 FP32 (128 bytes); 128-byte swizzle.
    const CUtensorMap tmap_a = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, args.a, uint64_t(args.k), uint64_t(args.m),
                                            uint64_t(args.a_row_stride) * 2, kHcBlockK, kHcBlockM, CU_TENSOR_MAP_SWIZZLE_128B,
                                            "tf32_hc_prenorm_gemm: a");
    const CUtensorMap tmap_b = make_tmap_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, args.b, uint64_t(args.k), uint64_t(args.n),
                                            uint64_t(args.b_row_stride) * 4, 32, uint32_t(c.block_n), CU_TENSOR_MAP_SWIZZLE_128B,
                                            "tf32_hc_prenorm_gemm: b");

    float* workspace = nullptr;
    unsigned* counters = nullptr;
    if (plan.reduce > 1) {
        const size_t partial_bytes = size_t(plan.num_units) * size_t(slot_floats(c.block_n)) * 256 * sizeof(float);
        const SplitKWorkspace ws = split_k_workspace(args.device, args.stream, partial_bytes, size_t(plan.num_units / plan.reduce));
        workspace = ws.partials;
        counters = ws.counters;
    }

    jit::LaunchConfig config;
    config.grid[0] = unsigned(plan.num_units);
    config.block[0] = kHcThreads;
    config.smem_bytes = unsigned(plan.smem_bytes);
    config.pdl = args.pdl;
    config.stream = args.stream;

    Sm90Tf32HcPrenormGemmParams params{};
    params.tmap_a = tma_descriptor(tmap_a), params.tmap_b = tma_descriptor(tmap_b);
    params.d = args.d, params.d_row_stride = args.d_row_stride, params.d_split_stride = args.d_split_stride;
    params.sqr_sum = args.sqr_sum, params.s_split_stride = args.s_split_stride;
    params.m = args.m, params.n = args.n;
    params.num_k_blocks = unsigned(plan.num_k_blocks), params.num_splits = unsigned(args.num_splits);
    params.reduce = unsigned(plan.reduce);
    params.workspace = workspace, params.counters = counters;
    launch_with_params(kernel, config, params);
}

}  // namespace deep_gemm::kernels
