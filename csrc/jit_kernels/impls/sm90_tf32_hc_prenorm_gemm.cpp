#include "sm90_tf32_hc_prenorm_gemm.hpp"

#include <algorithm>
#include <string>

#include "split_k_workspace.hpp"

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

GemmKernelSource hc_prenorm_source(const HcPrenormConfig& c) {
    const std::string bn = std::to_string(c.block_n), st = std::to_string(c.stages);
    GemmKernelSource src;
    src.name = "sm90_tf32_hc_prenorm_gemm";
    src.symbol = "deep_gemm_sm90_tf32_hc_prenorm_gemm_n" + bn + "_s" + st;
    src.num_threads = kHcThreads;
    src.smem_bytes = smem_bytes_of(c.block_n, c.stages);
    src.code =
        "#include <deep_gemm/impls/sm90_tf32_hc_prenorm_gemm.cuh>\n"
        "\n"
        "static_assert(deep_gemm::hc_prenorm::Layout<" + bn + ">::smem_bytes(" + st + ") == " + std::to_string(src.smem_bytes) +
        ", \"host and device shared-memory formulas differ\");\n"
        "static_assert(deep_gemm::hc_prenorm::kThreads == " + std::to_string(kHcThreads) + ", \"block size\");\n"
        "\n"
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kHcThreads) + ", 2)\n" + src.symbol +
        "(const __grid_constant__ deep_gemm::TmaDescriptor tmap_a, const __grid_constant__ deep_gemm::TmaDescriptor tmap_b,\n"
        "        float* d, long long d_row_stride, long long d_split_stride, float* sqr_sum, long long s_split_stride,\n"
        "        int m, int n, unsigned num_k_blocks, unsigned num_splits, unsigned reduce, float* workspace,\n"
        "        unsigned* counters) {\n"
        "    deep_gemm::hc_prenorm::tf32_hc_prenorm_gemm<" + bn + ", " + st + ">(\n"
        "        tmap_a, tmap_b, d, d_row_stride, d_split_stride, sqr_sum, s_split_stride, m, n, num_k_blocks, num_splits,\n"
        "        reduce, workspace, counters);\n"
        "}\n";
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

    float* d = args.d;
    float* sqr_sum = args.sqr_sum;
    long long d_row_stride = args.d_row_stride, d_split_stride = args.d_split_stride, s_split_stride = args.s_split_stride;
    int m = args.m, n = args.n;
    unsigned num_k_blocks = unsigned(plan.num_k_blocks), num_splits = unsigned(args.num_splits), reduce = unsigned(plan.reduce);
    void* params[] = {const_cast<CUtensorMap*>(&tmap_a), const_cast<CUtensorMap*>(&tmap_b), &d, &d_row_stride, &d_split_stride,
                      &sqr_sum, &s_split_stride, &m, &n, &num_k_blocks, &num_splits, &reduce, &workspace, &counters};
    kernel.launch(config, params);
}

}  // namespace deep_gemm::kernels
