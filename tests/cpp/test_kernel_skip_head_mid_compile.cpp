// fp8_gemm_nt_skip_head_mid: the FP8 1D2D kernel with the head-split epilogue (HeadSplitStoreEpilogue),
// planned as the op plans it and compiled for sm_90a (NVCC and NVRTC); its SASS has the FP8 wgmma, TMA
// loads, register stores and no TMA store, no local memory, and the wgmma descriptors stay in uniform
// registers. Keys without head splits generate the same source as before (no new header, no new text).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "jit/errors.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::kernels::GemmProblem;
using dg_test::count_op;

constexpr const char* kHeader = "#include <deep_gemm/epilogue/head_split_store.cuh>";

GemmProblem head_split_problem(int m, int num_heads, int k, int left, int mid, int right) {
    GemmProblem p;
    p.op = "fp8_gemm_nt_skip_head_mid";
    p.m = m, p.n = num_heads * (left + right), p.k = k;
    p.head_left = left, p.head_mid = mid, p.head_right = right;
    return p;
}

class SkipHeadMidCompile : public dg_test::KernelCompileTest {
protected:
    SkipHeadMidCompile() : KernelCompileTest("dg_skip_head_mid_compile_") {}

    void build_and_check(const deep_gemm::kernels::GemmKernelSource& src) {
        EXPECT_NE(src.code.find("HeadSplitStoreEpilogue<"), std::string::npos);
        EXPECT_NE(src.code.find(kHeader), std::string::npos);
        build_and_check_sass(src, [&](const std::string& sass) {
            EXPECT_GT(count_op(sass, "QGMMA"), 0) << "no FP8 wgmma in SASS";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            EXPECT_EQ(count_op(sass, "UTMASTG"), 0) << "the head-split epilogue stores from registers";
            EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
            expect_uniform_wgmma_descriptors(sass, "QGMMA");
        });
    }
};

// DeepGEMM's test shapes (head_splits (128, 64, 128)): M 128 and 4096, N 32768 and 8192, K 512.
TEST_F(SkipHeadMidCompile, DeepGemmShapesNvcc) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& [m, heads] : {std::tuple{128, 128}, std::tuple{4096, 32}}) {
        const auto src = deep_gemm::kernels::plan_gemm(head_split_problem(m, heads, 512, 128, 64, 128), {});
        EXPECT_NE(src.symbol.find("_hs128_64_128"), std::string::npos) << src.symbol;
        build_and_check(src);
    }
}

// Odd widths (element stores), a split-K tile (small M and N, long K) and 256-row tiles (two waves).
TEST_F(SkipHeadMidCompile, OddSplitsSplitKAnd256RowTilesNvrtc) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(deep_gemm::kernels::plan_gemm(head_split_problem(200, 12, 384, 3, 5, 7), {}));
    const auto split = deep_gemm::kernels::plan_gemm(head_split_problem(128, 2, 7168, 128, 64, 128), {});
    EXPECT_NE(split.symbol.find("_sk"), std::string::npos) << "expected the model to split K: " << split.symbol;
    build_and_check(split);
    const auto big = deep_gemm::kernels::plan_gemm(head_split_problem(4096, 64, 2048, 64, 32, 64), {});
    EXPECT_NE(big.symbol.find("bm256"), std::string::npos) << big.symbol;
    build_and_check(big);
}

TEST(SkipHeadMidKeys, OtherKeysKeepTheirSource) {
    // A plain dense key, and the same problem with head splits: only the latter names the epilogue.
    GemmProblem p = head_split_problem(4096, 32, 512, 128, 64, 128);
    p.head_left = p.head_mid = p.head_right = 0;
    const auto plain = deep_gemm::kernels::plan_gemm(p, {});
    EXPECT_EQ(plain.code.find("head_split"), std::string::npos);
    EXPECT_EQ(plain.code.find("HeadSplit"), std::string::npos);
    EXPECT_EQ(plain.symbol.find("_hs"), std::string::npos);
    const auto split = deep_gemm::kernels::plan_gemm(head_split_problem(4096, 32, 512, 128, 64, 128), {});
    EXPECT_NE(plain.symbol, split.symbol);
}

TEST(SkipHeadMidKeys, GroupedOrWithCIsRejected) {
    GemmProblem p = head_split_problem(4096, 32, 512, 128, 64, 128);
    p.with_c = true;
    EXPECT_THROW(deep_gemm::kernels::plan_gemm(p, {}), deep_gemm::jit::Error);
    p = head_split_problem(4096, 32, 512, 128, 64, 128);
    p.n += 1;  // not a multiple of left + right
    EXPECT_THROW(deep_gemm::kernels::plan_gemm(p, {}), deep_gemm::jit::Error);
}

}  // namespace
