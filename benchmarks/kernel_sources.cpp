// Writes the generated sources of typical GEMM kernels as DG_JIT_RECORD lines (JSON, one per kernel) on
// stdout, without a GPU: the kernels an op builds on an H200 (132 SMs, 227 KiB of shared memory) for a list
// of shapes, with N and K compiled in (the default compiled_dims="nk"). FAMILY: fp8 (fp8_gemm_nt, the
// default), bf16 (bf16_gemm_nt) or fp8_1d1d (the FP8 GEMM with 1x128 scales on both sides).
// benchmarks/bench_first_call.py times cold compiles of them; `python -m deep_gemm warmup FILE` compiles
// them into a cache.
//
//   ./build/dg_kernel_sources [COUNT [FAMILY]]   (default 10 fp8: the first COUNT distinct kernels)
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "jit/record.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"

namespace {

constexpr int kH200Sms = 132;
constexpr int kH200SmemOptin = 232448;

// Shapes of LLM projections (DeepSeek-V3-like N x K) at decode and prefill Ms, ordered so that the first
// kernels pair each N x K with another M (the first ten already cover small and large M).
std::vector<std::tuple<int, int, int>> shapes() {
    const int nks[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512},  {7168, 16384}, {4096, 7168}, {7168, 2048},
                          {576, 7168},  {2112, 192},   {576, 1536},   {4096, 512},   {1536, 7168}, {3072, 1536},
                          {7168, 4096}, {18432, 7168}, {7168, 9216},  {8192, 7168}};
    const int ms[] = {4096, 128, 64, 2048, 256, 8192, 1, 1024, 512, 16384, 32, 3000, 768, 96, 6144, 192};
    constexpr int kNumM = sizeof(ms) / sizeof(ms[0]), kNumNK = sizeof(nks) / sizeof(nks[0]);
    std::vector<std::tuple<int, int, int>> out;
    for (int round = 0; round < kNumM; ++round)
        for (int j = 0; j < kNumNK; ++j) out.emplace_back(ms[(j + round) % kNumM], nks[j][0], nks[j][1]);
    return out;
}

// The kernel the op of `family` builds for (m, n, k), N and K compiled in (planned as on an H200).
deep_gemm::kernels::GemmKernelSource source_for(const std::string& family, int m, int n, int k) {
    namespace kn = deep_gemm::kernels;
    kn::GemmProblem p;
    p.kernel = family == "bf16" ? kn::GemmKernel::kBf16 : family == "fp8_1d1d" ? kn::GemmKernel::kFp8_1d1d
                                                                               : kn::GemmKernel::kFp8_1d2d;
    p.op = family == "bf16" ? "bf16_gemm_nt" : "fp8_gemm_nt";
    p.m = m, p.n = n, p.k = k;
    p.compiled_dims = "nk";
    return kn::plan_gemm(p, kn::DeviceLimits{kH200Sms, kH200SmemOptin});
}

}  // namespace

int main(int argc, char** argv) {
    const int count = argc > 1 ? std::atoi(argv[1]) : 10;
    const std::string family = argc > 2 ? argv[2] : "fp8";
    if (count <= 0 || (family != "fp8" && family != "bf16" && family != "fp8_1d1d")) {
        std::fprintf(stderr, "usage: %s [COUNT > 0 [fp8|bf16|fp8_1d1d]]\n", argv[0]);
        return 2;
    }
    std::set<std::string> symbols;
    for (const auto& [m, n, k] : shapes()) {
        if (static_cast<int>(symbols.size()) == count) break;
        const auto src = source_for(family, m, n, k);
        if (!symbols.insert(src.symbol).second) continue;
        std::fputs(deep_gemm::jit::detail::format_record(src.kernel_source(), "sm_90a").c_str(), stdout);
    }
    if (static_cast<int>(symbols.size()) < count) {
        std::fprintf(stderr, "only %zu distinct kernels in the shape list\n", symbols.size());
        return 1;
    }
    return 0;
}
