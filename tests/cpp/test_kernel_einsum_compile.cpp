// Compile-only checks of the einsum variants of the SM90 BF16 and FP8 1D2D GEMM kernels (no GPU needed): the
// batch-reduced ('bmk,bnk->mn': K loop over (batch, K block)) and head-batched ('bhr,hdr->bhd', 'bhd,hdr->bhr',
// fp8_einsum 'bhr,hdr->bhd': A map {K, head, rows}, heads side by side in D) schedulers, planned as
// csrc/apis/einsum.cpp plans them on an H200 (plan_gemm: the op's config choice and key), built for sm_90a with
// NVCC (and some with NVRTC). SASS: the tensor-core instruction (HGMMA: four BF16 wgmmas per stage; QGMMA for
// FP8), 3-D TMA loads (UTMALDG.3D), TMA or direct stores as the epilogue says, no local memory (LDL / STL,
// checked by the fixture).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/jit.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::kernels::GemmGroupedMode;
using deep_gemm::kernels::GemmKernel;
using deep_gemm::kernels::GemmKernelSource;
using deep_gemm::kernels::GemmProblem;
using dg_test::count_op;
using dg_test::ScopedEnv;

struct EinsumCase {
    const char* name;
    GemmKernel kernel;
    GemmGroupedMode mode;
    int m, n, k, groups;
    bool b_k_major, d_fp32, with_c, d_tma_ok;
    bool expect_tma_store;
    int splits = 1;  // batch-reduced: batch splits (FP32 partial tiles, no C), as einsum.cpp picks them
};

// DeepGEMM's test shapes: 'bmk,bnk->mn' with s in {129, 4096, 8192}, (m, n, k) in {(128, 384, 128), (256, 256,
// 256), (384, 128, 384)}; heads (h, r, d) in {(128, 512, 128), (8, 4096, 1024)}, b up to 8192. Plus a ragged
// head width (N not a multiple of BLOCK_N: direct stores) and a BF16 batch-reduced D.
constexpr GemmKernel kBf16 = GemmKernel::kBf16, kFp8 = GemmKernel::kFp8_1d2d;
const EinsumCase kCases[] = {
    {"bmk_split44", kBf16, GemmGroupedMode::kBatchReduced, 128, 384, 128, 4096, true, true, false, false, false, 44},
    {"bmk_split33", kBf16, GemmGroupedMode::kBatchReduced, 256, 256, 256, 129, true, true, false, false, false, 33},
    {"bmk_fp32_c", kBf16, GemmGroupedMode::kBatchReduced, 2048, 2048, 128, 4, true, true, true, true, false},
    {"bmk_bf16", kBf16, GemmGroupedMode::kBatchReduced, 1536, 1536, 384, 8, true, false, false, true, true},
    {"bhr_hdr_bhd", kBf16, GemmGroupedMode::kHeadBatched, 4096, 128, 512, 128, true, false, false, true, true},
    {"bhd_hdr_bhr", kBf16, GemmGroupedMode::kHeadBatched, 8192, 4096, 1024, 8, false, false, false, true, true},
    {"bhr_hdr_bhd_ragged", kBf16, GemmGroupedMode::kHeadBatched, 100, 200, 512, 8, true, false, false, true, false},
    {"fp8_bhr_hdr_bhd", kFp8, GemmGroupedMode::kHeadBatched, 4096, 1024, 4096, 8, true, false, false, true, true},
    {"fp8_bhr_hdr_bhd_small", kFp8, GemmGroupedMode::kHeadBatched, 4, 1024, 4096, 8, true, false, false, true, true},
    {"fp8_bhr_hdr_bhd_ragged", kFp8, GemmGroupedMode::kHeadBatched, 77, 200, 512, 8, true, false, false, true, false},
};

GemmKernelSource plan(const EinsumCase& c) {
    GemmProblem p;
    p.kernel = c.kernel;
    p.mode = c.mode;
    p.m = c.m, p.n = c.n, p.k = c.k, p.num_groups = c.groups;
    p.b_k_major = c.b_k_major;
    p.d_fp32 = c.d_fp32, p.with_c = c.with_c, p.d_tma_ok = c.d_tma_ok;
    p.compiled_dims = "nk";
    p.batch_splits = c.splits;
    return deep_gemm::kernels::plan_gemm(p, deep_gemm::kernels::DeviceLimits{});
}

class KernelCompileEinsum : public dg_test::KernelCompileTest {
protected:
    KernelCompileEinsum() : KernelCompileTest("dg_kernel_einsum_") {}

    void build_and_check(const EinsumCase& c) {
        SCOPED_TRACE(c.name);
        const GemmKernelSource src = plan(c);
        build_and_check_sass(src, [&](const std::string& sass) {
            if (c.kernel == kBf16) {
                EXPECT_EQ(count_op(sass, "HGMMA"), 4) << "expected four BF16 wgmmas (HGMMA) per stage";
            } else {
                EXPECT_GT(count_op(sass, "QGMMA"), 0) << "no FP8 wgmma (QGMMA) in SASS";
                EXPECT_EQ(count_op(sass, "HGMMA"), 0);
            }
            EXPECT_GT(count_op(sass, "UTMALDG.3D"), 0) << "no 3-D TMA load in SASS";
            if (c.expect_tma_store) {
                EXPECT_GT(count_op(sass, "UTMASTG"), 0) << "no TMA store in SASS";
            } else {
                EXPECT_EQ(count_op(sass, "UTMASTG"), 0);
                EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
            }
            if (c.with_c) {
                EXPECT_GT(count_op(sass, "LDG"), 0) << "C is never loaded";
            }
        });
    }
};

TEST(KernelConfigsEinsum, SchedulersAndSymbols) {
    std::vector<std::string> symbols;
    for (const auto& c : kCases) {
        SCOPED_TRACE(c.name);
        const GemmKernelSource src = plan(c);
        SCOPED_TRACE(src.symbol);
        const bool batch = c.mode == GemmGroupedMode::kBatchReduced;
        EXPECT_NE(src.code.find(batch ? "BatchReducedScheduler" : "HeadBatchedScheduler"), std::string::npos);
        EXPECT_NE(src.symbol.find(batch ? "_bred" : "_heads"), std::string::npos);
        EXPECT_EQ(src.symbol.find("_bs"), c.splits > 1 ? src.symbol.size() - 5 : std::string::npos) << src.symbol;
        if (c.splits > 1) {
            EXPECT_NE(src.code.find(", " + std::to_string(c.splits) + "u>"), std::string::npos) << "splits in the scheduler";
        }
        EXPECT_EQ(src.symbol.find("_mc"), std::string::npos) << "no multicast for the einsum layouts";
        EXPECT_EQ(src.code.find("Epilogue = deep_gemm::Bf16TmaStoreEpilogue") != std::string::npos, c.expect_tma_store);
        for (const auto& s : symbols) EXPECT_NE(s, src.symbol);
        symbols.push_back(src.symbol);
    }
}

TEST_F(KernelCompileEinsum, Sm90Bf16EinsumNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& c : kCases) build_and_check(c);
}

TEST_F(KernelCompileEinsum, Sm90Bf16EinsumNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(kCases[0]);  // batch-reduced, split batches
    build_and_check(kCases[2]);  // batch-reduced, FP32 D with C
    build_and_check(kCases[5]);  // head-batched, N-major y
    build_and_check(kCases[7]);  // FP8 head-batched
}

}  // namespace
