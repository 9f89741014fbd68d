// Compile-only checks of the paged MQA-logits kernel (no GPU needed): every head count / next_n / context-length
// form the op dispatches to, for kv blocks of 64 and 32 rows, is generated and built for sm_90a with NVCC (a subset
// with NVRTC), and its SASS is checked: FP8 wgmma (QGMMA), TMA loads (UTMALDG: q, and rows + scales once per kv
// block of a tile), no local memory (LDL / STL; DG_JIT_PTXAS_CHECK=1 also makes a spill a compile error).
#include <gtest/gtest.h>

#include <vector>

#include "jit/jit.hpp"
#include "jit_kernels/impls/sm90_fp8_paged_mqa_logits.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::kernels::PagedMqaConfig;
using dg_test::count_op;
using dg_test::ScopedEnv;

struct PagedSource {
    std::string name, symbol, code;
    int smem_bytes = 0;
};

PagedSource source_of(const PagedMqaConfig& c) {
    const auto src = deep_gemm::kernels::paged_mqa_logits_source(c);
    return {src.name, src.symbol, src.code, deep_gemm::kernels::paged_mqa_smem_bytes(c)};
}

PagedMqaConfig config(int heads, int next_n, bool lens_2d, bool clean, bool bf16, int block_kv = 64) {
    PagedMqaConfig c;
    c.num_heads = heads, c.next_n = next_n, c.lens_2d = lens_2d, c.clean = clean, c.bf16_logits = bf16;
    c.block_kv = block_kv;
    return c;
}

class PagedMqaCompile : public dg_test::KernelCompileTest {
protected:
    PagedMqaCompile() : KernelCompileTest("dg_paged_mqa_compile_") {}

    void build_and_check(const PagedMqaConfig& c) {
        build_and_check_sass(source_of(c), [&](const std::string& sass) {
            // One QGMMA per 32-byte K step of the 128-byte rows.
            EXPECT_EQ(count_op(sass, "QGMMA"), 4) << "FP8 wgmma (QGMMA) count";
            // q, then rows and scales of each block of a tile (one block of 64 rows or two of 32, unrolled).
            EXPECT_EQ(count_op(sass, "UTMALDG"), 1 + 2 * (64 / c.block_kv)) << "TMA loads of q, the kv rows and the kv scales";
            EXPECT_EQ(count_op(sass, "HGMMA"), 0);
        });
    }
};

TEST_F(PagedMqaCompile, EveryDispatchedShapeNvcc) {
    for (int heads : {32, 64})
        for (int next_n : {1, 2})
            for (bool lens_2d : {false, true}) build_and_check(config(heads, next_n, lens_2d, /*clean=*/lens_2d, /*bf16=*/!lens_2d));
    build_and_check(config(32, 4, true, true, false));
    build_and_check(config(64, 4, false, false, true));  // the widest N (256)
}

TEST_F(PagedMqaCompile, ThirtyTwoRowBlocksNvcc) {
    for (int heads : {32, 64})
        for (int next_n : {1, 2, 4}) build_and_check(config(heads, next_n, next_n != 1, heads == 32, next_n == 2, 32));
}

TEST_F(PagedMqaCompile, Nvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    build_and_check(config(64, 2, true, false, true));
    build_and_check(config(32, 1, false, true, false));
    build_and_check(config(64, 4, true, true, false, 32));
}

TEST(PagedMqaSource, DistinctSymbolsAndRejectedConfigs) {
    std::vector<PagedMqaConfig> keys;
    for (int heads : {32, 64})
        for (int next_n : {1, 2})
            for (int bits = 0; bits < 16; ++bits) keys.push_back(config(heads, next_n, bits & 1, bits & 2, bits & 4, bits & 8 ? 32 : 64));
    dg_test::expect_distinct_sources(keys, [](const PagedMqaConfig& c) { return source_of(c); },
                                     "deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh");
    EXPECT_THROW(deep_gemm::kernels::paged_mqa_logits_source(config(16, 1, false, false, false)), deep_gemm::jit::Error);
    EXPECT_THROW(deep_gemm::kernels::paged_mqa_logits_source(config(64, 3, false, false, false)), deep_gemm::jit::Error);
    EXPECT_THROW(deep_gemm::kernels::paged_mqa_logits_source(config(64, 0, false, false, false)), deep_gemm::jit::Error);
    EXPECT_THROW(deep_gemm::kernels::paged_mqa_logits_source(config(64, 1, false, false, false, 16)), deep_gemm::jit::Error);
    EXPECT_THROW(deep_gemm::kernels::paged_mqa_logits_source(config(64, 1, false, false, false, 128)), deep_gemm::jit::Error);
}

}  // namespace
