// The FP8 1D2D kernel with block-32 scales (recipe (1, 32, 32): GemmProblem::sf_gran_k 32), without a GPU: the
// planner's configs for the benchmark shapes and forced variants (both promotions, one to three math warpgroups,
// 256-row tiles, every BLOCK_N from 32 to 192, multicast, split-K, C, the direct-store epilogue) compile for sm_90a
// with NVCC and NVRTC without spills (DG_JIT_PTXAS_CHECK=1 makes a spill a compile error; no LDL / STL in SASS),
// with one k32 wgmma per 32-K step and the wgmma descriptors in uniform registers. The default granularity's keys
// keep their source (no template argument, no symbol suffix).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "jit/errors.hpp"
#include "jit_kernels/heuristics/sm90_fp8_config.hpp"
#include "jit_kernels/heuristics/sm90_fp8_cost_model.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::kernels::GemmKernel;
using deep_gemm::kernels::GemmKernelKey;
using deep_gemm::kernels::GemmKernelSource;
using deep_gemm::kernels::GemmProblem;
using dg_test::count_op;
using dg_test::kH200SmemOptin;

GemmProblem block32_problem(int m, int n, int k) {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k;
    p.sf_gran_k = 32;
    return p;
}

// A forced config's key as kernel_key makes it for a dense block-32 call (N and K compiled in unless 0).
GemmKernelKey block32_key(int bm, int bn, int pipelined, int multicast, int split_k = 1, int n = 2112, int k = 7168) {
    GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(
        GemmKernel::kFp8_1d2d,
        Sm90GemmConfig{bm, bn, deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin,
                                                                           deep_gemm::heuristics::kSm90Fp8MaxStages, 32),
                       8, pipelined, multicast, split_k});
    key.sf_gran_k = 32;
    key.n = uint32_t(n), key.k = uint32_t(k);
    return key;
}

// The issue's shapes: M 128 / 1024 / 4096 x DeepSeek-like N x K.
std::vector<std::tuple<int, int, int>> issue_shapes() {
    std::vector<std::tuple<int, int, int>> shapes;
    for (int m : {128, 1024, 4096})
        for (const auto& [n, k] : {std::pair{2112, 7168}, std::pair{24576, 1536}, std::pair{7168, 2048}, std::pair{4096, 7168}})
            shapes.emplace_back(m, n, k);
    return shapes;
}

// The wgmma descriptors stay in uniform registers: no QGMMA reads a descriptor register that an R2UR (a move from
// a vector register) wrote last. (The block-32 K loop does move its B scales, warp-uniform values, into uniform
// registers for the scale products: those R2URs feed FMULs, not descriptors, so the blanket "no R2UR between the
// wgmmas" check of the other FP8 kernels does not apply.)
void expect_descriptors_not_from_vector_registers(const std::string& sass) {
    std::map<int, bool> from_vector;  // uniform register -> last written by R2UR
    std::istringstream lines(sass);
    std::string line;
    int checked = 0;
    auto ur_index = [](const std::string& text, size_t at) { return std::stoi(text.substr(at + 2)); };
    while (std::getline(lines, line)) {
        const size_t close = line.find("*/");
        if (line.find("/*") == std::string::npos || close == std::string::npos) continue;
        std::istringstream words(line.substr(close + 2));
        std::string op, dst;
        words >> op;
        if (op.empty() || op[0] == '@') words >> op;  // a predicated instruction
        words >> dst;
        if (op.rfind("QGMMA", 0) == 0) {
            const size_t g = line.find("gdesc[UR");
            ASSERT_NE(g, std::string::npos) << line;
            const int base = ur_index(line, g + 6);
            for (int r = base; r < base + 4; ++r) EXPECT_FALSE(from_vector[r]) << "UR" << r << " from R2UR feeds " << line;
            ++checked;
        } else if (dst.rfind("UR", 0) == 0 && dst != "URZ," && op.rfind("UST", 0) != 0) {
            const int r = ur_index(dst, 0);
            from_vector[r] = op.rfind("R2UR", 0) == 0;
            if (op.find(".WIDE") != std::string::npos || op.find(".64") != std::string::npos) from_vector[r + 1] = from_vector[r];
        }
    }
    EXPECT_GT(checked, 0) << "no QGMMA in SASS";
}

class Block32Compile : public dg_test::KernelCompileTest {
protected:
    Block32Compile() : KernelCompileTest("dg_block32_compile_") {}

    // `src` of a block-32 key (its tile read from the symbol, "..._bm<M>_bn<N>_...").
    void build_and_check(const GemmKernelSource& src) {
        EXPECT_NE(src.code.find(", 32u>("), std::string::npos) << "the granularity is not a template argument";
        EXPECT_NE(src.symbol.find("_sfk32"), std::string::npos) << src.symbol;
        const int block_m = std::stoi(src.symbol.substr(src.symbol.find("_bm") + 3));
        const int block_n = std::stoi(src.symbol.substr(src.symbol.find("_bn") + 3));
        build_and_check_sass(src, [&](const std::string& sass) {
            // One k32 wgmma per 32-K step and wave: four per K block and wave, the K loop not unrolled.
            EXPECT_EQ(count_op(sass, "QGMMA"), 4 * (block_m == 256 ? 2 : 1)) << "expected one k32 wgmma per 32-K step";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            // A K block's B scales: one 16-byte load per 32-column slice.
            EXPECT_GE(count_op(sass, "LDG.E.128"), block_n / 32) << "B scales not loaded 16 bytes at a time";
            expect_descriptors_not_from_vector_registers(sass);
        });
    }
    void build_and_check(const GemmKernelKey& key) { build_and_check(deep_gemm::kernels::gemm_kernel_source(key)); }
};

// The descriptor check itself: a descriptor register last written by R2UR fails it, one rewritten by a uniform
// instruction after the R2UR (register reuse) does not.
TEST(Block32Keys, DescriptorCheckSeesVectorDescriptors) {
    const std::string bad =
        "        /*0100*/                   R2UR UR13, R10 ;\n"
        "        /*0110*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], RZ, !UPT, gsb0 ;\n";
    EXPECT_NONFATAL_FAILURE(expect_descriptors_not_from_vector_registers(bad), "from R2UR feeds");
    const std::string reused =
        "        /*0100*/                   R2UR UR13, R10 ;\n"
        "        /*0108*/                   UMOV UR13, 0x40000040 ;\n"
        "        /*0110*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], RZ, !UPT, gsb0 ;\n";
    expect_descriptors_not_from_vector_registers(reused);
}

TEST(Block32Keys, PlannedConfigsTakeWholeScaleSlices) {
    std::set<std::string> symbols;
    for (const auto& [m, n, k] : issue_shapes()) {
        const GemmKernelSource src = deep_gemm::kernels::plan_gemm(block32_problem(m, n, k), {});
        SCOPED_TRACE(src.symbol);
        EXPECT_NE(src.symbol.find("_sfk32"), std::string::npos);
        EXPECT_NE(src.code.find(", 32u>::kSmemBytes == " + std::to_string(src.smem_bytes)), std::string::npos);
        EXPECT_LE(src.smem_bytes, kH200SmemOptin);
        const size_t at = src.symbol.find("_bn");
        ASSERT_NE(at, std::string::npos);
        EXPECT_EQ(std::stoi(src.symbol.substr(at + 3)) % 32, 0) << "BLOCK_N must be whole 32-column slices";
        symbols.insert(src.symbol);
    }
    EXPECT_GE(symbols.size(), 3u);
}

// The config model charges block-32 tiles four promotions per K block: all four exposed when each step waits,
// one (the last step's) with two scratch accumulators; so it takes the pipelined one where it may, and a block-32
// tile never scores below the same 128-granular tile.
TEST(Block32Keys, ModelChargesThePromotionOfEachStep) {
    namespace h = deep_gemm::heuristics;
    for (const auto& [m, n, k] : issue_shapes()) {
        const double plain32 = h::sm90_fp8_model_cost(m, n, k, dg_test::kH200Sms, 128, 128, 5, 0, 0, 1, 32);
        const double pipelined32 = h::sm90_fp8_model_cost(m, n, k, dg_test::kH200Sms, 128, 128, 5, 1, 0, 1, 32);
        const double plain128 = h::sm90_fp8_model_cost(m, n, k, dg_test::kH200Sms, 128, 128, 5, 0, 0);
        EXPECT_LE(pipelined32, plain32) << m << "x" << n << "x" << k;
        EXPECT_GE(plain32, plain128) << m << "x" << n << "x" << k;
        const Sm90GemmConfig c = h::choose_sm90_fp8_config(m, n, k, dg_test::kH200Sms, kH200SmemOptin,
                                                           h::Sm90Fp8Chooser::kModel, {1, 32}, true, 32);
        EXPECT_EQ(c.block_n % 32, 0) << m << "x" << n << "x" << k;
        if (c.block_m <= 128) EXPECT_EQ(c.pipelined, 1) << m << "x" << n << "x" << k << ": " << h::sm90_fp8_to_string(c, 32);
    }
    // A 128-row block-32 tile whose steps wait scores above the pipelined one on a shape that is not memory-bound.
    EXPECT_GT(h::sm90_fp8_model_cost(4096, 7168, 2048, dg_test::kH200Sms, 128, 128, 5, 0, 0, 1, 32),
              h::sm90_fp8_model_cost(4096, 7168, 2048, dg_test::kH200Sms, 128, 128, 5, 1, 0, 1, 32));
}

TEST(Block32Keys, DefaultGranularityKeepsItsSource) {
    GemmProblem p = block32_problem(4096, 7168, 2048);
    p.sf_gran_k = 128;
    const GemmKernelSource plain = deep_gemm::kernels::plan_gemm(p, {});
    EXPECT_EQ(plain.symbol.find("_sfk"), std::string::npos) << plain.symbol;
    EXPECT_EQ(plain.code.find("32u>("), std::string::npos);
    EXPECT_NE(plain.code.find(", false>(\n"), std::string::npos) << "the default call ends at kMulticastOnA";
    EXPECT_EQ(plain.code.find("u>::kSmemBytes"), std::string::npos) << "the default layout takes no granularity";
}

TEST(Block32Keys, GroupedAndHeadSplitProblemsAreRejected) {
    GemmProblem p = block32_problem(256, 512, 1024);
    p.mode = deep_gemm::kernels::GemmGroupedMode::kMGroupedMasked;
    p.num_groups = 2, p.expected_m = 128;
    EXPECT_THROW(deep_gemm::kernels::plan_gemm(p, {}), deep_gemm::jit::Error);
    GemmProblem heads = block32_problem(256, 512, 1024);
    heads.head_left = heads.head_right = 128, heads.head_mid = 64;
    EXPECT_THROW(deep_gemm::kernels::plan_gemm(heads, {}), deep_gemm::jit::Error);
}

TEST_F(Block32Compile, PlannedConfigsNvcc) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    std::set<std::string> kinds;
    for (const auto& [m, n, k] : issue_shapes()) {
        const GemmKernelSource src = deep_gemm::kernels::plan_gemm(block32_problem(m, n, k), {});
        // One per kind: the symbol without its stages and compiled dims (which change no code path).
        const std::string kind = std::regex_replace(src.symbol, std::regex("_s[0-9]+_g|_n[0-9]+_k[0-9]+"), "_");
        if (kinds.insert(kind).second) build_and_check(src);
    }
    EXPECT_GE(kinds.size(), 2u);
}

// Forced variants: pipelined 0 and 1 on one and two math warpgroups, three warpgroups (152 registers each) with
// either, 256-row tiles (two waves) with A and B multicast, BLOCK_N 32 to 192, split-K, runtime dims.
TEST_F(Block32Compile, ForcedVariantsNvrtc) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    for (const auto& [bm, bn, pp, mc, split] :
         {std::tuple{128, 128, 0, 0, 1}, std::tuple{128, 128, 1, 0, 1}, std::tuple{64, 128, 1, 0, 1},
          std::tuple{64, 32, 1, 2, 1}, std::tuple{128, 96, 1, 1, 1}, std::tuple{128, 192, 0, 1, 1},
          std::tuple{128, 160, 0, 2, 1}, std::tuple{192, 128, 0, 0, 1}, std::tuple{192, 64, 1, 1, 1},
          std::tuple{256, 128, 0, 2, 1}, std::tuple{256, 96, 0, 1, 1}, std::tuple{64, 32, 1, 0, 4},
          std::tuple{128, 64, 0, 0, 3}}) {
        build_and_check(block32_key(bm, bn, pp, mc, split));
    }
    build_and_check(block32_key(128, 128, 1, 0, 1, 0, 0));  // M, N and K at run time
}

// D = C + A @ B^T (float32 C) and the direct-store epilogue (D rows TMA cannot address).
TEST_F(Block32Compile, EpiloguesNvcc) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    GemmKernelKey key = block32_key(128, 128, 1, 0);
    key.with_c = true, key.c_fp32 = true;
    key.epilogue = uint8_t(deep_gemm::heuristics::Sm90GemmEpilogue::kAccumDirect);
    build_and_check(key);
    key = block32_key(256, 128, 0, 0);
    key.epilogue = uint8_t(deep_gemm::heuristics::Sm90GemmEpilogue::kBf16Direct);
    build_and_check(key);
}

}  // namespace
