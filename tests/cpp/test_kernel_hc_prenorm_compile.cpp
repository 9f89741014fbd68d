// Compile-only tests of the TF32 hc_prenorm GEMM (deep_gemm/include/deep_gemm/impls/sm90_tf32_hc_prenorm_gemm.cuh):
// the launch plan for DeepGEMM's test shapes, and the SASS of the kernels those shapes use (TF32 wgmma =
// HGMMA with A from registers, TMA loads, B rounded to nearest TF32 in shared memory, no local memory), built
// for sm_90a with NVCC and NVRTC. The ptxas report (registers, spills) is read through DG_JIT_PTXAS_VERBOSE.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit_kernels/impls/sm90_tf32_hc_prenorm_gemm.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::kernels::HcPrenormConfig;
using deep_gemm::kernels::HcPrenormPlan;
using deep_gemm::kernels::plan_hc_prenorm;
using dg_test::count_op;
using dg_test::kH200SmemOptin;
using dg_test::kH200Sms;
using dg_test::ScopedEnv;

constexpr int kMs[] = {1, 13, 137, 4096, 8192};
constexpr int kKs[] = {28672, 7680, 7168, 100, 64};

TEST(HcPrenormPlan, CoversTheGridAndFitsTwoCtasPerSm) {
    for (int n : {1, 8, 24, 32, 33, 64}) {
        for (int m : kMs) {
            for (int k : kKs) {
                for (int splits : {1, 2, 16, 200}) {
                    const HcPrenormPlan p = plan_hc_prenorm(m, n, k, splits, kH200Sms);
                    SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k << " splits=" << splits);
                    EXPECT_EQ(p.config.block_n % 8, 0);
                    EXPECT_GE(p.config.block_n, n);
                    EXPECT_LT(p.config.block_n - n, 8);
                    EXPECT_GE(p.config.stages, 2);
                    EXPECT_LE(2 * (p.smem_bytes + 1024), 228 * 1024) << "two CTAs must fit an SM";
                    EXPECT_EQ(p.num_k_blocks, (k + 63) / 64);
                    const int m_blocks = (m + 127) / 128;
                    EXPECT_EQ(p.num_units, m_blocks * splits * p.reduce);
                    EXPECT_GE(p.reduce, 1);
                    EXPECT_LE(p.reduce, 64);
                    if (m_blocks * splits >= kH200Sms) {
                        EXPECT_EQ(p.reduce, 1) << "the groups alone fill the GPU";
                    }
                    if (p.reduce > 1) {
                        // A unit of a split keeps at least kHcMinBlocksPerUnit blocks once the split is divided.
                        EXPECT_GE(p.num_k_blocks / splits / p.reduce, deep_gemm::kernels::kHcMinBlocksPerUnit);
                        EXPECT_LE(p.num_units, 2 * kH200Sms);
                    }
                }
            }
        }
    }
    // DeepGEMM's small-m shapes are split over the GPU.
    EXPECT_GE(plan_hc_prenorm(13, 24, 28672, 1, kH200Sms).num_units, 64);
    EXPECT_GE(plan_hc_prenorm(4096, 24, 7168, 1, kH200Sms).num_units, kH200Sms);
    EXPECT_EQ(plan_hc_prenorm(8192, 24, 7168, 16, kH200Sms).reduce, 1);
}

int count_substr(const std::string& text, const std::string& what) {
    int count = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++count;
    return count;
}

class KernelCompileHc : public dg_test::KernelCompileTest {
protected:
    KernelCompileHc() : KernelCompileTest("dg_kernel_hc_") {}

    // Builds the config and checks its SASS and ptxas report; returns the register count.
    int build_and_check(const HcPrenormConfig& c) {
        std::vector<std::string> infos;
        deep_gemm::jit::set_log_sink([&](deep_gemm::jit::LogLevel level, const std::string& message) {
            if (level == deep_gemm::jit::LogLevel::kInfo) infos.push_back(message);
        });
        ScopedEnv verbose("DG_JIT_PTXAS_VERBOSE", "1");
        const auto src = deep_gemm::kernels::hc_prenorm_source(c);
        EXPECT_LE(src.smem_bytes, kH200SmemOptin);
        build_and_check_sass(src, [&](const std::string& sass) {
            // 8 K steps per 64-wide block, each one m64nNk8 TF32 wgmma.
            EXPECT_EQ(count_op(sass, "HGMMA"), 8) << "expected eight TF32 wgmmas (HGMMA) per K block";
            EXPECT_NE(sass.find(".TF32"), std::string::npos) << "the wgmmas are not TF32";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            EXPECT_GT(count_op(sass, "ACQBULK"), 0) << "no griddepcontrol.wait (PDL) in SASS";
            // B is rounded to nearest TF32 in shared memory before its wgmmas: cvt.rna.tf32.f32 becomes an
            // add of 0x1000 and this mask per value (four per 16-byte vector); then a fence for the async
            // proxy and the math threads' barrier 2, all before the first wgmma.
            EXPECT_GE(count_substr(sass, "0xffffe000"), 4) << "no TF32 rounding (cvt.rna.tf32.f32) of B in SASS";
            const size_t mask = sass.rfind("0xffffe000"), wgmma = sass.find("HGMMA");
            const size_t fence = sass.find("FENCE.VIEW.ASYNC.S", mask == std::string::npos ? 0 : mask);
            const size_t barrier = sass.find("BAR.SYNC.DEFER_BLOCKING 0x2,", fence == std::string::npos ? 0 : fence);
            EXPECT_NE(fence, std::string::npos) << "no fence.proxy.async after rounding B";
            EXPECT_NE(barrier, std::string::npos) << "no barrier 2 after the fence";
            EXPECT_LT(barrier, wgmma) << "B must be rounded, fenced and the barrier passed before the first HGMMA";
        });
        deep_gemm::jit::set_log_sink(nullptr);
        int registers = -1;
        const std::regex used("Used ([0-9]+) registers");
        for (const auto& m : infos) {
            std::smatch match;
            if (m.find("ptxas report") != std::string::npos && std::regex_search(m, match, used)) registers = std::stoi(match[1]);
            if (m.find("ptxas report") != std::string::npos) {
                EXPECT_NE(m.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << m;
            }
        }
        std::printf("[hc_prenorm] %s: %d registers, %d bytes of shared memory\n", src.symbol.c_str(), registers, src.smem_bytes);
        // __launch_bounds__(288, 2): 65536 / 576 threads.
        EXPECT_GT(registers, 0) << "no ptxas report";
        EXPECT_LE(registers, 112);
        return registers;
    }
};

std::vector<HcPrenormConfig> shipped_configs() {
    std::set<std::pair<int, int>> seen;
    std::vector<HcPrenormConfig> configs;
    for (int n : {24, 8, 64, 20}) {
        const HcPrenormConfig c = plan_hc_prenorm(4096, n, 7168, 1, kH200Sms).config;
        if (seen.insert({c.block_n, c.stages}).second) configs.push_back(c);
    }
    return configs;
}

TEST_F(KernelCompileHc, Sm90Tf32HcPrenormNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& c : shipped_configs()) build_and_check(c);
}

// Every n rounded up to 8 (each its own wgmma wrapper and stage count), with NVRTC.
TEST_F(KernelCompileHc, Sm90Tf32HcPrenormNvrtcEveryN) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    for (int n = 8; n <= deep_gemm::kernels::kHcMaxN; n += 8) build_and_check(plan_hc_prenorm(13, n, 28672, 1, kH200Sms).config);
}

}  // namespace
