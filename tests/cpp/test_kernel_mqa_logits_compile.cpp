// Compile-only checks of the SM90 FP8 MQA-logits kernel (deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh,
// host csrc/jit_kernels/impls/sm90_fp8_mqa_logits.cpp): configs built for sm_90a with NVCC and NVRTC, SASS
// checked for the FP8 wgmma of every k32 step of the head dim (QGMMA.64x256x32, D/32 per tile: the N side is
// 256 query-head columns), the two TMA loads (q tile, kv tiles), the quad shuffles of the head reduction and
// no local memory (DG_JIT_PTXAS_CHECK=1 also makes a spill a compile error).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit_kernels/impls/sm90_fp8_mqa_logits.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::kernels::MqaLogitsConfig;
using dg_test::count_op;
using dg_test::ScopedEnv;

struct MqaSource {
    std::string name, symbol, code;
    int smem_bytes = 0;
};

MqaLogitsConfig config(int heads, int dim, bool bf16, bool compressed, bool clean) {
    MqaLogitsConfig c;
    c.num_heads = heads;
    c.head_dim = dim;
    c.bf16_logits = bf16;
    c.compressed = compressed;
    c.clean = clean;
    return c;
}

class MqaLogitsCompile : public dg_test::KernelCompileTest {
protected:
    MqaLogitsCompile() : KernelCompileTest("dg_mqa_compile_") {}

    void build_and_check(const MqaLogitsConfig& c) {
        const auto src = deep_gemm::kernels::sm90_fp8_mqa_logits_source(c);
        const MqaSource s{src.name, src.symbol, src.code, deep_gemm::kernels::mqa_logits_smem_bytes(c)};
        build_and_check_sass(s, [&](const std::string& sass) {
            EXPECT_EQ(count_op(sass, "QGMMA"), c.head_dim / 32) << "one FP8 wgmma per k32 step of D";
            EXPECT_NE(sass.find("QGMMA.64x256x32.F32.E4M3.E4M3"), std::string::npos) << "m64n256k32 FP8 wgmma expected";
            EXPECT_EQ(count_op(sass, "UTMALDG"), 2) << "TMA loads of the q tile and the kv tiles";
            EXPECT_GE(count_op(sass, "SHFL"), 2) << "quad reduce-scatter of the head sums";
            EXPECT_EQ(count_op(sass, "BAR"), 1) << "one CTA barrier (after the mbarrier init), no shared-memory reduction";
        });
    }
};

TEST(MqaLogitsConfigs, SourcesAreDistinctPerConfig) {
    std::vector<MqaLogitsConfig> configs;
    for (int heads : {32, 64})
        for (int dim : {32, 64, 128})
            for (int flags = 0; flags < 8; ++flags) configs.push_back(config(heads, dim, flags & 1, flags & 2, flags & 4));
    dg_test::expect_distinct_sources(configs, deep_gemm::kernels::sm90_fp8_mqa_logits_source,
                                     "deep_gemm/impls/sm90_fp8_mqa_logits.cuh");
}

TEST(MqaLogitsConfigs, RejectsUnsupportedHeadsAndDims) {
    EXPECT_THROW(deep_gemm::kernels::sm90_fp8_mqa_logits_source(config(16, 128, false, false, true)), deep_gemm::jit::Error);
    EXPECT_THROW(deep_gemm::kernels::sm90_fp8_mqa_logits_source(config(64, 256, false, false, true)), deep_gemm::jit::Error);
}

TEST(MqaLogitsConfigs, SharedMemoryFormula) {
    // q tile 256 x D + 8 kv slots 64 x D (1024-aligned) + barriers: under 100 KB for D = 128.
    EXPECT_EQ(deep_gemm::kernels::mqa_logits_smem_bytes(config(64, 128, false, false, true)), 32768 + 8 * 8192 + 17 * 8);
    EXPECT_EQ(deep_gemm::kernels::mqa_logits_smem_bytes(config(32, 32, false, false, true)), 8192 + 8 * 2048 + 17 * 8);
}

TEST_F(MqaLogitsCompile, DenseAndCompressedNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    build_and_check(config(64, 128, false, false, true));   // the indexer's shape: FP32, dense, clean
    build_and_check(config(32, 128, true, true, false));    // BF16, compressed, not cleaned
    build_and_check(config(64, 64, false, true, true));     // 64-byte swizzle, compressed and cleaned
}

TEST_F(MqaLogitsCompile, SmallHeadDimsNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(config(32, 32, true, false, true));     // 32-byte swizzle, 8 queries per CTA
    build_and_check(config(64, 128, true, false, false));
}

}  // namespace
