// Writes the generated sources of typical FP8 GEMM kernels as DG_JIT_RECORD lines (JSON, one per kernel) on
// stdout, without a GPU: the kernels fp8_gemm_nt builds on an H200 (132 SMs, 227 KiB of shared memory) for
// a list of shapes, with N and K compiled in (the default compiled_dims="nk"). benchmarks/bench_first_call.py
// times cold compiles of them; `python -m deep_gemm warmup FILE` compiles them into a cache.
//
//   ./build/dg_kernel_sources [COUNT]   (default 10: the first COUNT distinct kernels of the shape list)
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "jit/record.hpp"
#include "jit_kernels/heuristics/sm90_fp8.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

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

}  // namespace

int main(int argc, char** argv) {
    const int count = argc > 1 ? std::atoi(argv[1]) : 10;
    if (count <= 0) {
        std::fprintf(stderr, "usage: %s [COUNT > 0]\n", argv[0]);
        return 2;
    }
    std::set<std::string> symbols;
    for (const auto& [m, n, k] : shapes()) {
        if (static_cast<int>(symbols.size()) == count) break;
        deep_gemm::kernels::Sm90Fp8GemmKernelKey key = deep_gemm::kernels::sm90_fp8_kernel_key(
            deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin));
        key.n = static_cast<uint32_t>(n);
        key.k = static_cast<uint32_t>(k);
        const auto src = deep_gemm::kernels::sm90_fp8_gemm_1d2d_source(key);
        if (!symbols.insert(src.symbol).second) continue;
        std::fputs(deep_gemm::jit::detail::format_record(src.kernel_source(), "sm_90a").c_str(), stdout);
    }
    if (static_cast<int>(symbols.size()) < count) {
        std::fprintf(stderr, "only %zu distinct kernels in the shape list\n", symbols.size());
        return 1;
    }
    return 0;
}
