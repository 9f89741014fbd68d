#include "layout_transpose_sf.hpp"

#include <string>

#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/layout_transpose_sf_params.hpp"

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
    const std::string body = fmt::format("    deep_gemm::layout::transpose_sf_into_mn_major<{}, {}, {}>(\n        {});\n",
                                         kTileM, kTileK, kRowsPerIter, param_names<LayoutTransposeSfParams>());
    // Launch bounds without a blocks-per-SM figure (min_blocks 0).
    std::string code = render_kernel_source<LayoutTransposeSfParams>(
        {"#include <deep_gemm/impls/layout_transpose_sf.cuh>\n", kSymbol, kTileM * kRowsPerIter, body, "", 0});
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

    LayoutTransposeSfParams params{args.in, args.out, args.m, args.k, args.aligned_m,
                                   args.stride_g, args.stride_m, args.stride_k};
    launch_with_params(kernel, config, params);
}

}  // namespace deep_gemm::kernels
