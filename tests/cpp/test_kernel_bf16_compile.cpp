// Compile-only checks of the SM90 BF16 GEMM kernel (no GPU needed): the configs the BF16 heuristics emit
// over a representative shape set, all four operand majorness combinations, BF16 (TMA store and direct
// store) and FP32 outputs with and without C, the contiguous / masked grouped modes and the K-grouped
// mode (k_grouped_bf16_gemm_tn_contiguous: MN-major operands, FP32 D, with and without C), and configs forced
// through DG_BF16_GEMM_CONFIG (benchmarks/sweep_bf16_configs.py) are generated,
// built for sm_90a with NVCC (a subset also with NVRTC), and their SASS is checked: BF16 wgmma (HGMMA),
// TMA loads (UTMALDG), TMA stores where the epilogue uses them, and no local memory (LDL / STL).
// DG_JIT_PTXAS_CHECK=1 additionally makes any spill a compile error.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "jit/jit.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/impls/sm90_bf16_config_override.hpp"
#include "jit_kernels/impls/sm90_bf16_gemm.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmEpilogue;
using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::kernels::GemmGroupedMode;
using deep_gemm::kernels::GemmKernel;
using deep_gemm::kernels::GemmKernelKey;
using dg_test::count_op;
using dg_test::kH200SmemOptin;
using dg_test::kH200Sms;
using dg_test::ScopedEnv;

// GemmKernelKey::multicast of a cluster size from choose_sm90_bf16_multicast (2: B shared by a 2-CTA pair).
uint8_t key_multicast(int cluster) { return cluster == 2 ? 1 : 0; }

std::vector<std::tuple<int, int, int>> bf16_shapes() {
    const int ms[] = {1, 128, 1000, 4096};
    const int nks[][2] = {{7168, 2048}, {2112, 7168}, {24576, 1536}, {4096, 7168}, {576, 7168}, {100, 512}};
    return dg_test::shape_grid(ms, nks);
}

GemmKernelKey make_key(int m, int n, int k, bool a_mn, bool b_mn, Sm90GemmEpilogue epi, bool d_fp32,
                               bool with_c, GemmGroupedMode mode = GemmGroupedMode::kNone, int multicast_request = 0) {
    const int out_bytes = (d_fp32 ? 4 : 2) * (with_c ? 2 : 1);
    const Sm90GemmConfig c =
        deep_gemm::heuristics::choose_sm90_bf16_config(m, n, k, kH200Sms, kH200SmemOptin, b_mn, epi, out_bytes);
    GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kBf16, c);
    key.a_mn_major = a_mn;
    key.b_mn_major = b_mn;
    key.epilogue = int(epi);
    key.d_fp32 = d_fp32;
    key.with_c = with_c;
    key.mode = int(mode);
    key.multicast = key_multicast(deep_gemm::heuristics::choose_sm90_bf16_multicast(m, c, int(mode), b_mn, multicast_request));
    return key;
}

// Every distinct config the heuristics pick for the representative NT BF16 shapes, plus the variants.
std::vector<GemmKernelKey> shipped_bf16_keys() {
    std::vector<GemmKernelKey> keys;
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& [m, n, k] : bf16_shapes()) {
        const auto key = make_key(m, n, k, false, false, Sm90GemmEpilogue::kBf16Tma, false, false);
        if (!seen.insert({key.block_m, key.block_n, key.num_stages * 10 + key.multicast}).second) continue;
        keys.push_back(key);
    }
    // Majorness combos (large and small tiles; MN-major B with BLOCK_N not a multiple of 64 pads atoms).
    for (const auto& [m, n, k] : {std::tuple{4096, 7168, 2048}, std::tuple{128, 2112, 7168}}) {
        for (int combo = 1; combo < 4; ++combo) {
            keys.push_back(make_key(m, n, k, combo & 1, combo & 2, Sm90GemmEpilogue::kBf16Tma, false, false));
        }
    }
    {
        auto key = make_key(4096, 7168, 2048, true, true, Sm90GemmEpilogue::kBf16Tma, false, false);
        key.block_m = 64, key.block_n = 48, key.num_stages = 4;  // sub-atom BLOCK_N, MN-major both
        key.multicast = 0;
        keys.push_back(key);
    }
    // Multicast (off unless requested) forced on for a large-tile and a small-tile shape.
    keys.push_back(make_key(4096, 7168, 2048, true, false, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kNone, 2));
    keys.push_back(make_key(128, 2112, 7168, false, false, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kNone, 2));
    // FP32 D with and without C, BF16 D with C, BF16 direct store.
    keys.push_back(make_key(4096, 7168, 2048, false, false, Sm90GemmEpilogue::kAccumDirect, true, false));
    keys.push_back(make_key(4096, 4096, 7168, false, false, Sm90GemmEpilogue::kAccumDirect, true, true));
    keys.push_back(make_key(128, 2112, 7168, true, true, Sm90GemmEpilogue::kAccumDirect, true, true));
    keys.push_back(make_key(1000, 576, 7168, false, true, Sm90GemmEpilogue::kAccumDirect, false, true));
    keys.push_back(make_key(1000, 100, 512, false, false, Sm90GemmEpilogue::kBf16Direct, false, false));
    // Compiled dims.
    {
        auto key = make_key(4096, 7168, 2048, false, false, Sm90GemmEpilogue::kBf16Tma, false, false);
        key.n = 7168, key.k = 2048;
        keys.push_back(key);
    }
    // Grouped: contiguous (nt and nn; psum layout), masked (TMA store and direct store).
    keys.push_back(make_key(8192, 4096, 7168, false, false, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kMGroupedContiguous));
    keys.push_back(make_key(8192, 4096, 7168, false, true, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kMGroupedContiguous));
    keys.push_back(make_key(8192, 4096, 7168, false, false, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kMGroupedContiguousPsum));
    keys.push_back(make_key(4 * 256, 4096, 7168, false, false, Sm90GemmEpilogue::kBf16Tma, false, false,
                            GemmGroupedMode::kMGroupedMasked));
    keys.push_back(make_key(4 * 100, 2112, 7168, false, false, Sm90GemmEpilogue::kBf16Direct, false, false,
                            GemmGroupedMode::kMGroupedMasked));
    return keys;
}

// K-grouped (weight-gradient) problems as the host sees them: M, N per group, sum of K, G. The config comes
// from the same call the host makes (average K bucketed by sm90_bf16_k_grouped_hint_k, G groups of tiles).
struct KGroupedShape {
    int m, n, sum_k, groups;
};

// (On H200 they pick 128x256, 64x16, 128x32, 128x192, 128x144, 64x208 and 64x112 tiles: both BLOCK_M, and
// BLOCK_N below, at and above one 64-wide MN-major atom, padded or not.)
const KGroupedShape kKGroupedShapes[] = {
    {7168, 2048, 4 * 4096, 4}, {2048, 7168, 8 * 1024, 8}, {4096, 4096, 16 * 512, 16}, {2112, 7168, 32 * 256, 32},
    {136, 200, 3 * 256, 3},    {64, 64, 4 * 128, 4},      {512, 8, 2 * 128, 2},       {768, 136, 4 * 128, 4},
    {128, 256, 32 * 512, 32},  {128, 512, 16 * 2048, 16}, {64, 256, 32 * 2048, 32},   {64, 136, 32 * 8192, 32},
};

GemmKernelKey make_k_grouped_key(const KGroupedShape& s, bool with_c) {
    const Sm90GemmConfig c = deep_gemm::heuristics::choose_sm90_bf16_config(
        s.m, s.n, deep_gemm::heuristics::sm90_bf16_k_grouped_hint_k(s.sum_k, s.groups), kH200Sms, kH200SmemOptin,
        /*b_mn_major=*/true, Sm90GemmEpilogue::kAccumDirect, with_c ? 8 : 4, 0, s.groups);
    GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kBf16, c);
    key.a_mn_major = true;
    key.b_mn_major = true;
    key.mode = int(GemmGroupedMode::kKGroupedContiguous);
    key.epilogue = int(Sm90GemmEpilogue::kAccumDirect);
    key.d_fp32 = true;
    key.with_c = with_c;
    key.multicast = 0;
    return key;
}

// Every distinct K-grouped config the heuristics pick for the shapes above, with and without C, plus one
// with compiled M and N (the op's default compiled_dims "mn").
std::vector<GemmKernelKey> k_grouped_bf16_keys() {
    std::vector<GemmKernelKey> keys;
    std::set<std::tuple<int, int, int, bool>> seen;
    for (const auto& shape : kKGroupedShapes) {
        for (bool with_c : {false, true}) {
            const auto key = make_k_grouped_key(shape, with_c);
            if (seen.insert({key.block_m, key.block_n, key.num_stages, with_c}).second) keys.push_back(key);
        }
    }
    auto key = make_k_grouped_key(kKGroupedShapes[0], true);
    key.m = 7168, key.n = 2048;
    keys.push_back(key);
    return keys;
}

// The kernel key bf16_gemm_nt (K-major A and B, bf16 D through the TMA store, default compiled_dims "nk")
// builds for m x n x k with DG_BF16_GEMM_CONFIG=`config`, on an H200.
GemmKernelKey forced_nt_key(const char* config, int m, int n, int k) {
    namespace knobs = deep_gemm::kernels::knobs;
    const auto& table = deep_gemm::kernels::bf16_knobs();
    const Sm90GemmConfig c = deep_gemm::kernels::apply_sm90_bf16_config_override(
        knobs::apply_forced(table, knobs::parse_forced(table, config), Sm90GemmConfig{}), /*b_mn_major=*/false,
        Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin);
    GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kBf16, c);
    key.epilogue = int(Sm90GemmEpilogue::kBf16Tma);
    key.multicast = key_multicast(deep_gemm::heuristics::choose_sm90_bf16_multicast(m, c, 0, false, c.multicast));
    key.n = uint32_t(n), key.k = uint32_t(k);
    return key;
}

class KernelCompileBf16 : public dg_test::KernelCompileTest {
protected:
    KernelCompileBf16() : KernelCompileTest("dg_kernel_bf16_") {}

    void build_and_check(const GemmKernelKey& key) {
        build_and_check_sass(deep_gemm::kernels::gemm_kernel_source(key), [&](const std::string& sass) {
            EXPECT_EQ(count_op(sass, "HGMMA"), 4) << "expected four BF16 wgmmas (HGMMA) per stage";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            expect_pdl_hooks(sass);
            if (key.epilogue == int(Sm90GemmEpilogue::kBf16Tma)) {
                EXPECT_GT(count_op(sass, "UTMASTG"), 0) << "no TMA store in SASS";
            } else {
                EXPECT_EQ(count_op(sass, "UTMASTG"), 0);
                EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
            }
            if (key.with_c) {
                EXPECT_GT(count_op(sass, "LDG"), 0) << "C is never loaded";
            }
            if (key.multicast != 0) {
                EXPECT_NE(sass.find("UTMALDG.3D.MULTICAST"), std::string::npos) << "no multicast TMA load in SASS";
            }
        });
    }
};

TEST(KernelConfigsBf16, HeuristicsAreValid) {
    for (bool b_mn : {false, true}) {
        for (auto epi : {Sm90GemmEpilogue::kBf16Tma, Sm90GemmEpilogue::kAccumDirect}) {
            for (const auto& [m, n, k] : bf16_shapes()) {
                const Sm90GemmConfig c = deep_gemm::heuristics::choose_sm90_bf16_config(
                    m, n, k, kH200Sms, kH200SmemOptin, b_mn, epi, epi == Sm90GemmEpilogue::kBf16Tma ? 2 : 4);
                SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ": " +
                             deep_gemm::heuristics::sm90_bf16_to_string(c));
                EXPECT_TRUE(c.block_m == 64 || c.block_m == 128);
                if (m <= 64) {
                    EXPECT_EQ(c.block_m, 64);
                }
                EXPECT_EQ(c.block_n % 16, 0);
                EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Bf16MinStages);
                EXPECT_LE(deep_gemm::heuristics::sm90_bf16_smem_bytes(c.block_m, c.block_n, c.num_stages, b_mn, epi),
                          kH200SmemOptin);
            }
        }
    }
}

TEST(KernelConfigsBf16, KGroupedHeuristicsAreValid) {
    using deep_gemm::heuristics::sm90_bf16_k_grouped_hint_k;
    // The config K is a power-of-two bucket of the average K, so changing ks rarely changes the kernel.
    EXPECT_EQ(sm90_bf16_k_grouped_hint_k(0, 4), 128);
    EXPECT_EQ(sm90_bf16_k_grouped_hint_k(4 * 1000, 4), 1024);
    EXPECT_EQ(sm90_bf16_k_grouped_hint_k(4 * 1024, 4), 1024);
    EXPECT_EQ(sm90_bf16_k_grouped_hint_k(int64_t(1) << 40, 1), 16384);
    for (const auto& s : kKGroupedShapes) {
        for (bool with_c : {false, true}) {
            const auto key = make_k_grouped_key(s, with_c);
            SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + " G=" + std::to_string(s.groups));
            EXPECT_TRUE(key.block_m == 64 || key.block_m == 128);
            if (s.m <= 64) {
                EXPECT_EQ(key.block_m, 64);
            }
            EXPECT_GE(key.num_stages, deep_gemm::heuristics::kSm90Bf16MinStages);
            EXPECT_LE(deep_gemm::heuristics::sm90_bf16_smem_bytes(key.block_m, key.block_n, key.num_stages, true,
                                                                  Sm90GemmEpilogue::kAccumDirect),
                      kH200SmemOptin);
        }
    }
    EXPECT_GE(k_grouped_bf16_keys().size(), 4u);
}

TEST(KernelConfigsBf16, SourceIsDistinctPerKey) {
    auto keys = shipped_bf16_keys();
    for (const auto& key : k_grouped_bf16_keys()) keys.push_back(key);
    dg_test::expect_distinct_sources(keys, deep_gemm::kernels::gemm_kernel_source);
    for (const auto& key : k_grouped_bf16_keys()) {
        EXPECT_NE(deep_gemm::kernels::gemm_kernel_source(key).code.find("KGroupedScheduler"), std::string::npos);
    }
}

TEST_F(KernelCompileBf16, Sm90Bf16GemmNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& key : shipped_bf16_keys()) build_and_check(key);
}

TEST_F(KernelCompileBf16, Sm90Bf16GemmNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    // A subset: one key per (majorness, epilogue, grouped mode).
    std::set<std::tuple<bool, bool, int, int, bool>> kinds;
    for (const auto& key : shipped_bf16_keys()) {
        if (!kinds.insert({key.a_mn_major, key.b_mn_major, key.epilogue, key.mode * 10 + key.multicast, key.with_c})
                 .second)
            continue;
        build_and_check(key);
    }
    EXPECT_GE(kinds.size(), 8u);
}

// The K-grouped kernels: every config the heuristics emit for the K-grouped shapes with NVCC, and with
// NVRTC one with and one without C (FP32 D through the direct-store epilogue, MN-major A and B).
TEST_F(KernelCompileBf16, Sm90Bf16KGroupedNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& key : k_grouped_bf16_keys()) build_and_check(key);
}

TEST_F(KernelCompileBf16, Sm90Bf16KGroupedNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    std::set<bool> with_c;
    for (const auto& key : k_grouped_bf16_keys()) {
        if (with_c.insert(key.with_c).second) build_and_check(key);
    }
    EXPECT_EQ(with_c.size(), 2u);
}

// Two configs the sweep forces, with NVRTC: the widest tile with B multicast at a large M, and a small tile
// the heuristics never pick for M = 128.
TEST_F(KernelCompileBf16, ForcedSweepConfigsNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    const GemmKernelKey wide = forced_nt_key("128,256,0,1", 4096, 7168, 2048);
    EXPECT_EQ(wide.block_m, 128);
    EXPECT_EQ(wide.block_n, 256);
    EXPECT_EQ(wide.num_stages, 3) << "stages 0: as many as fit next to the 64 KB D staging";
    EXPECT_EQ(wide.multicast, 1);
    build_and_check(wide);
    const GemmKernelKey narrow = forced_nt_key("64,96,0", 128, 2112, 7168);
    EXPECT_EQ(narrow.block_m, 64);
    EXPECT_EQ(narrow.block_n, 96);
    EXPECT_EQ(narrow.multicast, 0) << "heuristic multicast (field absent) is off below M = 1024";
    build_and_check(narrow);
}

}  // namespace
