// Compile-only checks of the SM90 FP8 1D1D kernel (no GPU needed): the heuristics' configs are valid for the
// H200, and a few instances (both warpgroup counts, with and without C, a narrow and the widest tile, the
// K-grouped entry point) build
// for sm_90a with FP8 wgmma (QGMMA), TMA loads, global stores, no TMA store and no local memory. Kept to
// four NVCC builds and one NVRTC build for CI time.
#include <gtest/gtest.h>

#include <string>

#include "jit_kernels/heuristics/sm90_fp8_1d1d.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d1d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::kernels::GemmKernel;
using deep_gemm::kernels::GemmKernelKey;
using dg_test::count_op;
using dg_test::kH200SmemOptin;
using dg_test::kH200Sms;
using dg_test::ScopedEnv;

TEST(KernelConfigs, Sm90Fp8_1d1dHeuristicsAreValid) {
    const int ms[] = {1, 64, 100, 2048, 4096, 7168};
    const int nks[][2] = {{4096, 4096}, {2112, 4096}, {129280, 128}, {576, 7168}, {100, 512}};
    for (const auto& [m, n, k] : dg_test::shape_grid(ms, nks)) {
        const Sm90GemmConfig c =
            deep_gemm::heuristics::choose_sm90_fp8_1d1d_config(m, n, k, kH200Sms, kH200SmemOptin);
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ": " +
                     deep_gemm::heuristics::sm90_fp8_1d1d_to_string(c));
        EXPECT_TRUE(c.block_m == 64 || c.block_m == 128);
        if (m <= 64) {
            EXPECT_EQ(c.block_m, 64);
        }
        EXPECT_EQ(c.block_n % 16, 0);
        EXPECT_GE(c.block_n, 16);
        EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8_1d1dMaxBlockN);
        EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Fp8MinStages);
        EXPECT_LE(deep_gemm::heuristics::sm90_fp8_1d1d_smem_bytes(c.block_m, c.block_n, c.num_stages), kH200SmemOptin);
    }
    // A large square problem uses the big tile.
    const Sm90GemmConfig big = deep_gemm::heuristics::choose_sm90_fp8_1d1d_config(7168, 4096, 4096, kH200Sms,
                                                                                  kH200SmemOptin);
    EXPECT_EQ(big.block_m, 128);
    EXPECT_GE(big.block_n, 64);
}

TEST(KernelConfigs, Sm90Fp8_1d1dSourceIsDistinctPerKey) {
    std::vector<GemmKernelKey> keys(3,
                                    deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d1d, Sm90GemmConfig{}));
    keys[1].with_c = true;
    keys[2].n = 4096;
    keys[2].k = 7168;
    dg_test::expect_distinct_sources(keys, deep_gemm::kernels::gemm_kernel_source,
                                     "deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh");
}

class KernelCompile1d1d : public dg_test::KernelCompileTest {
protected:
    KernelCompile1d1d() : KernelCompileTest("dg_kernel_1d1d_compile_") {}

    void build_and_check(int block_m, int block_n, bool with_c, bool k_grouped = false, bool pipelined = false,
                         bool multicast = false, bool prefetch_c = false, uint32_t sf_k_align = 0) {
        GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d1d, Sm90GemmConfig{});
        key.sf_k_align = sf_k_align;
        key.block_m = block_m;
        key.block_n = block_n;
        key.pipelined = pipelined;
        key.multicast = multicast;
        key.prefetch_c = prefetch_c;
        key.num_stages = deep_gemm::heuristics::sm90_fp8_1d1d_max_stages(block_m, block_n, kH200SmemOptin);
        key.with_c = with_c;
        if (k_grouped) key.mode = uint8_t(deep_gemm::kernels::GemmGroupedMode::kKGroupedContiguous), key.k = 0;
        const auto source = deep_gemm::kernels::gemm_kernel_source(key);
        if (k_grouped) {  // the K-grouped entry point, with the groups' maps in its parameters
            EXPECT_NE(source.code.find("sm90_fp8_gemm_1d1d_k_grouped_impl"), std::string::npos);
            EXPECT_NE(source.symbol.find("_kgrouped"), std::string::npos);
        }
        EXPECT_EQ(source.symbol.find("_pp") != std::string::npos, pipelined) << source.symbol;
        EXPECT_EQ(source.symbol.find("_mcb") != std::string::npos, multicast) << source.symbol;
        EXPECT_EQ(source.symbol.find("_pfc") != std::string::npos, prefetch_c) << source.symbol;
        EXPECT_EQ(source.symbol.find("_sfk") != std::string::npos, sf_k_align != 0) << source.symbol;
        // The scale layout is the entry's last template argument; without it the source is the default kernel's.
        EXPECT_EQ(source.code.find(", " + std::to_string(sf_k_align) + "u>(") != std::string::npos, sf_k_align != 0);
        build_and_check_sass(source, [pipelined, multicast, prefetch_c](const std::string& sass) {
            // prefetch_c: L2 prefetches of C's lines (CCTL.E.PF2) before the epilogue.
            EXPECT_EQ(count_op(sass, "CCTL.E.PF2") > 0, prefetch_c) << "L2 prefetch of C";
            // Multicast: B's half-tile loads go to both CTAs, and the CTAs meet at cluster barriers (setup, exit).
            EXPECT_EQ(sass.find("UTMALDG.2D.MULTICAST") != std::string::npos, multicast) << "multicast B load";
            EXPECT_EQ(count_op(sass, "UCGABAR_ARV") > 0, multicast) << "cluster barrier";
            // The pipelined loop waits for all but the newest K block's wgmmas (one group left in flight).
            EXPECT_EQ(sass.find("WARPGROUP.DEPBAR.LE gsb0, 0x1") != std::string::npos, pipelined)
                << "wgmma wait with one group in flight";
            EXPECT_GT(count_op(sass, "QGMMA"), 0) << "no FP8 wgmma in SASS";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            expect_uniform_wgmma_descriptors(sass, "QGMMA");
            EXPECT_EQ(count_op(sass, "UTMASTG"), 0) << "the FP32 epilogue stores from registers";
            EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
        });
    }
};

TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    build_and_check(128, 128, true);
    build_and_check(64, 48, false);
    build_and_check(128, 112, false);
}

TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(128, 128, true);
}

// K-grouped: one launch for all groups, each group's tensor maps read from the kernel parameters (8.3 KB of them),
// on the widest tile DG_FP8_1D1D_GEMM_CONFIG may force (no local memory: the check above).
TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dKGroupedNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    build_and_check(128, deep_gemm::heuristics::kSm90Fp8_1d1dMaxForcedBlockN, true, true);
}

// The pipelined promotion (two scratch accumulators), as DG_FP8_1D1D_GEMM_CONFIG forces it, on the widest tile it
// allows: dense with C and K-grouped, without local memory (build_and_check_sass) and with a wgmma group in flight.
TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dPipelined) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(128, deep_gemm::heuristics::kSm90Fp8MaxBlockNPipelined, true, false, true);
    build_and_check(128, deep_gemm::heuristics::kSm90Fp8MaxBlockNPipelined, true, true, true);
    build_and_check(64, 96, false, true, true);
}

// 2-CTA clusters on pairs of M blocks sharing B, as DG_FP8_1D1D_GEMM_CONFIG forces them: dense with C on the widest
// tile it allows, K-grouped with the pipelined promotion.
TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dMulticastB) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(128, deep_gemm::heuristics::kSm90Fp8_1d1dMaxForcedBlockN, true, false, false, true);
    build_and_check(128, 128, true, true, true, true);
}

// C pulled into L2 ahead of the epilogue, as DG_FP8_1D1D_GEMM_CONFIG forces it: dense, and K-grouped with the other
// forced options.
TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dPrefetchC) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(128, 128, true, false, false, false, true);
    build_and_check(128, 128, true, true, true, true, true);
}

// The compact / padded per-group scales (k_grouped_fp8_gemm_nt_contiguous with a group K that is not a multiple of
// 128, or use_padded_sf_layout with a larger alignment): the scale block of each group summed from the launch's K
// values in the kernel parameters; with the other forced options too, still without local memory.
TEST_F(KernelCompile1d1d, Sm90Fp8Gemm1d1dKGroupedScaleLayouts) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(128, 128, true, true, false, false, false, 128);
    build_and_check(128, 128, true, true, true, true, true, 256);
    ScopedEnv nvcc("DG_JIT_USE_NVRTC", "0");
    build_and_check(64, 96, false, true, false, false, false, 384);
}

}  // namespace
