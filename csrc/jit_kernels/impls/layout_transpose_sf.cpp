#include "layout_transpose_sf.hpp"

#include <string>

namespace deep_gemm::kernels {

namespace {

constexpr int kTileM = 32, kTileK = 32, kRowsPerIter = 8;
constexpr const char* kSymbol = "deep_gemm_layout_transpose_sf";

jit::KernelTable<int>& table() {
    static jit::KernelTable<int> instance;  // one translation unit: the only definition
    return instance;
}

}  // namespace

jit::KernelSource layout_transpose_sf_source() {
    std::string code =
        "#include <deep_gemm/impls/layout_transpose_sf.cuh>\n"
        "\n"
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kTileM * kRowsPerIter) + ")\n" +
        kSymbol + "(const float* __restrict__ in, float* __restrict__ out, int m, int k, int aligned_m,\n"
        "        long long in_stride_g, long long in_stride_m, long long in_stride_k) {\n"
        "    deep_gemm::layout::transpose_sf_into_mn_major<" + std::to_string(kTileM) + ", " + std::to_string(kTileK) + ", " +
        std::to_string(kRowsPerIter) + ">(\n"
        "        in, out, m, k, aligned_m, in_stride_g, in_stride_m, in_stride_k);\n"
        "}\n";
    return jit::KernelSource{"layout_transpose_sf", kSymbol, std::move(code)};
}

void layout_transpose_sf(const TransposeSfArgs& args) {
    if (args.num_groups <= 0 or args.k <= 0 or args.aligned_m <= 0) return;
    if (args.aligned_m < args.m or args.aligned_m % 4 != 0)
        throw jit::Error("layout_transpose_sf: aligned_m must be a multiple of 4 and >= m");
    if (args.num_groups > 65535)
        throw jit::Error("layout_transpose_sf: at most 65535 groups are supported; got " + std::to_string(args.num_groups));

    const jit::LoadedKernel& kernel = table().get(args.device, 0, [] { return layout_transpose_sf_source(); });

    jit::LaunchConfig config;
    config.grid[0] = static_cast<unsigned>((args.aligned_m + kTileM - 1) / kTileM);
    config.grid[1] = static_cast<unsigned>((args.k + kTileK - 1) / kTileK);
    config.grid[2] = static_cast<unsigned>(args.num_groups);
    config.block[0] = kTileM;
    config.block[1] = kRowsPerIter;
    config.stream = args.stream;

    const float* in = args.in;
    float* out = args.out;
    int m = args.m, k = args.k, aligned_m = args.aligned_m;
    long long stride_g = args.stride_g, stride_m = args.stride_m, stride_k = args.stride_k;
    void* params[] = {&in, &out, &m, &k, &aligned_m, &stride_g, &stride_m, &stride_k};
    kernel.launch(config, params);
}

}  // namespace deep_gemm::kernels
