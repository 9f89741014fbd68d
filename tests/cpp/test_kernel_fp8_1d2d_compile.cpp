// Compile-only checks of the shipped kernel configs (no GPU needed): every config the SM90 FP8 heuristics
// emit over a representative shape set is generated, built for sm_90a with NVCC (a subset also with
// NVRTC), and its SASS is checked: FP8 wgmma (QGMMA), TMA loads and stores (UTMALDG / UTMASTG), and no
// local memory (LDL / STL). DG_JIT_PTXAS_CHECK=1 additionally makes any spill a compile error.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "jit/jit.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/heuristics/sm90_fp8_config.hpp"
#include "jit_kernels/heuristics/sm90_fp8_cost_model.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
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

// GemmKernelKey::epilogue of the bf16 direct-store epilogue (outputs TMA cannot address).
constexpr uint8_t kDirectStore = uint8_t(deep_gemm::heuristics::Sm90GemmEpilogue::kBf16Direct);

// The shapes the library is tuned and tested for (the benchmark shapes of benchmarks/bench_fp8_gemm.py, the GPU tests, typical LLM projections).
std::vector<std::tuple<int, int, int>> representative_shapes() {
    const int ms[] = {1, 64, 100, 128, 256, 512, 1000, 2048, 4096, 8192};
    const int nks[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384}, {4096, 7168}, {7168, 2048},
                          {576, 7168},  {100, 512},    {129280, 7168}, {2112, 192}, {576, 1536}, {4096, 512}};
    return dg_test::shape_grid(ms, nks);
}

using deep_gemm::heuristics::Sm90Fp8Chooser;

// The kernel key of the config the heuristics choose for (m, n, k), all dims at run time.
GemmKernelKey heuristic_key(int m, int n, int k, Sm90Fp8Chooser chooser = Sm90Fp8Chooser::kModel) {
    return deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d2d,
        deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin, chooser));
}

// What decides whether a config compiles cleanly (registers, code paths): tile rows, promotion mode,
// multicast, D swizzle width, B scales straddling 128-column blocks, more than 128 columns. Stage counts and
// other widths of the same kind share all code paths (keeps CI's compile time bounded).
std::tuple<int, int, int, int, int, int> kernel_kind(const GemmKernelKey& key) {
    return {key.block_m, key.pipelined, key.multicast, deep_gemm::heuristics::sm90_fp8_d_swizzle_bytes(key.block_n),
            int(128 % key.block_n != 0), int(key.block_n > 128)};
}

// One config of each kind the heuristics pick for those shapes (all dims at run time) plus a few
// instances with N and K compiled in (the default `compiled_dims='nk'`).
std::vector<GemmKernelKey> shipped_fp8_keys() {
    std::set<std::tuple<int, int, int, int>> seen;
    std::set<std::tuple<int, int, int, int, int, int>> kinds;
    std::vector<GemmKernelKey> keys;
    // The config model (default), the previous rules and the legacy choice (DG_FP8_GEMM_CONFIG=rules /
    // legacy) over the shape set.
    for (const Sm90Fp8Chooser chooser : {Sm90Fp8Chooser::kModel, Sm90Fp8Chooser::kRules, Sm90Fp8Chooser::kLegacy}) {
        for (const auto& [m, n, k] : representative_shapes()) {
            const GemmKernelKey key = heuristic_key(m, n, k, chooser);
            if (!kinds.insert(kernel_kind(key)).second) continue;
            seen.insert({key.block_m, key.block_n, key.num_stages, key.group_n + 100 * key.pipelined + 1000 * key.multicast});
            keys.push_back(key);
        }
    }
    for (const auto& [m, n, k] : {std::tuple{4096, 7168, 16384}, std::tuple{128, 2112, 7168}, std::tuple{1, 576, 192}}) {
        GemmKernelKey key = heuristic_key(m, n, k);
        key.n = uint32_t(n);
        key.k = uint32_t(k);
        keys.push_back(key);
    }
    // Pipelined promotion (two scratch accumulators; DG_FP8_GEMM_CONFIG / sweeps): uniform and straddling
    // B scales, both warpgroup counts, the widest BLOCK_N it allows.
    for (const auto& [bm, bn] : {std::pair{128, 128}, std::pair{128, 112}, std::pair{128, 96}, std::pair{64, 128},
                                 std::pair{64, 64}}) {
        GemmKernelKey key;  // kernel kFp8_1d2d by default
        key.block_m = bm;
        key.block_n = bn;
        key.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin);
        key.pipelined = true;
        if (!seen.insert({bm, bn, key.num_stages, key.group_n + 100}).second) continue;
        keys.push_back(key);
    }
    // 2-CTA cluster multicast of B (M pairs) and of A (N pairs), with and without pipelined promotion; 256-row
    // tiles (two waves per math warpgroup) sharing A or B, and with straddling B scales.
    for (const auto& [bm, bn, pp, mc] : {std::tuple{128, 192, 0, 1}, std::tuple{128, 128, 1, 1},
                                         std::tuple{128, 128, 1, 2}, std::tuple{64, 96, 1, 2},
                                         std::tuple{128, 112, 0, 2}, std::tuple{256, 128, 0, 2},
                                         std::tuple{256, 128, 0, 1}, std::tuple{256, 112, 0, 0}}) {
        GemmKernelKey key;  // kernel kFp8_1d2d by default
        key.block_m = bm;
        key.block_n = bn;
        key.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin);
        key.pipelined = pp;
        key.multicast = mc;
        if (!seen.insert({bm, bn, key.num_stages, key.group_n + 100 * pp + 1000 * mc}).second) continue;
        keys.push_back(key);
    }
    // Direct-store epilogue (outputs TMA cannot address, e.g. N = 100 contiguous).
    for (const auto& [m, n, k] : {std::tuple{128, 100, 512}, std::tuple{4096, 100, 7168}, std::tuple{4096, 7168, 7168}}) {
        GemmKernelKey key = heuristic_key(m, n, k);
        key.epilogue = kDirectStore;
        if (!seen.insert({key.block_m, key.block_n, key.num_stages, key.group_n + 100 * key.pipelined + 10000}).second)
            continue;
        keys.push_back(key);
    }
    return keys;
}

// The M-grouped variants (few: each is a full kernel compile) on TARGETS-like shapes: contiguous with zero
// padding (the default) and psum with unspecified padding (ensure_zero_padding=False), both on 256-row tiles
// (forced: two 128-row segments, a block of two groups visited twice), psum with unspecified padding on 64-row
// tiles (groups looked up per 128-row alignment block), masked with the grouped
// heuristics' 64-row tiles (small expected_m), 256-row ones (expected_m 192) and 128-row pipelined ones
// (expected_m 96), and the heuristics' contiguous pick (128-row tiles).
std::vector<GemmKernelKey> grouped_fp8_keys() {
    using deep_gemm::kernels::GemmGroupedMode;
    auto key_of = [](int m, int n, int k, int rows_per_group, int groups, GemmGroupedMode mode, int padding,
                     int group_align) {
        GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(
            GemmKernel::kFp8_1d2d,
            deep_gemm::heuristics::choose_sm90_fp8_grouped_config(m, n, k, kH200Sms, kH200SmemOptin, rows_per_group,
                                                                  groups, mode == GemmGroupedMode::kMGroupedMasked));
        key.mode = int(mode);
        key.padding = padding;
        key.group_align = group_align;
        key.n = uint32_t(n);
        key.k = uint32_t(k);
        return key;
    };
    std::vector<GemmKernelKey> keys = {
        key_of(8 * 4256, 6144, 7168, 0, 8, GemmGroupedMode::kMGroupedContiguous, 1, 0),
        key_of(4 * 8576, 4096, 4096, 0, 4, GemmGroupedMode::kMGroupedContiguousPsum, 0, 128),
        key_of(4 * 8576, 4096, 4096, 0, 4, GemmGroupedMode::kMGroupedContiguousPsum, 0, 128),
        key_of(128, 6144, 7168, 48, 32, GemmGroupedMode::kMGroupedMasked, 0, 0),
        key_of(256, 6144, 7168, 192, 32, GemmGroupedMode::kMGroupedMasked, 0, 0),
        key_of(1024, 7168, 2048, 96, 32, GemmGroupedMode::kMGroupedMasked, 0, 0)};
    keys.push_back(keys[0]);  // the heuristics' contiguous pick
    EXPECT_LE(keys[6].block_m, 128u);
    for (const int i : {0, 1}) {  // 256-row contiguous tiles, as DG_FP8_GEMM_CONFIG forces them
        keys[i].block_m = 256, keys[i].block_n = 128, keys[i].pipelined = 0;
        keys[i].num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(256, 128, kH200SmemOptin);
    }
    EXPECT_EQ(keys[3].block_m, 64u);
    EXPECT_EQ(keys[4].block_m, 256u);
    EXPECT_EQ(keys[5].block_m, 128u);  // pipelined: a last tile's second warpgroup may only pass slots on
    EXPECT_TRUE(keys[5].pipelined);
    // psum with 64-row tiles (DG_FP8_GEMM_CONFIG can force them): blocks before a group's aligned start.
    keys[2].block_m = 64;
    keys[2].num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(64, keys[2].block_n, kH200SmemOptin);
    return keys;
}

class KernelCompile : public dg_test::KernelCompileTest {
protected:
    KernelCompile() : KernelCompileTest("dg_kernel_compile_") {}

    // `extra`: more checks of the same SASS (one build).
    void build_and_check(const GemmKernelKey& key, const std::function<void(const std::string&)>& extra = {}) {
        build_and_check_sass(deep_gemm::kernels::gemm_kernel_source(key), [&](const std::string& sass) {
            if (extra) extra(sass);
            EXPECT_GT(count_op(sass, "QGMMA"), 0) << "no FP8 wgmma in SASS";
            EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
            expect_pdl_hooks(sass);
            // (Kernels with N and K compiled in, as every call has by default; with runtime dims the loop keeps
            // some descriptor arithmetic in vector registers, not checked here.)
            if (key.n != 0 && key.k != 0) expect_uniform_wgmma_descriptors(sass, "QGMMA");
            if (key.epilogue == kDirectStore || key.with_c) {
                EXPECT_EQ(count_op(sass, "UTMASTG"), 0) << "direct-store epilogues use no TMA store";
                if (key.with_c) {
                    EXPECT_GT(count_op(sass, "LDG"), 0) << "no C loads in SASS";
                }
                EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
            } else {
                EXPECT_GT(count_op(sass, "UTMASTG"), 0) << "no TMA store in SASS";
            }
            // Split-K: partials stored, the tile counter taken with an atomic, the others' partials read.
            if (key.split_k > 1) {
                EXPECT_GT(count_op(sass, "ATOMG"), 0) << "no tile-counter atomic in SASS";
                EXPECT_GT(count_op(sass, "STG"), 0) << "no partial stores in SASS";
                EXPECT_GT(count_op(sass, "LDG"), 0) << "no partial loads in SASS";
            }
            // The row-clipping epilogue (masked) writes a group's partial slice directly.
            if (key.mode == int(deep_gemm::kernels::GemmGroupedMode::kMGroupedMasked)) {
                EXPECT_GT(count_op(sass, "STG"), 0) << "no direct stores for partial slices";
            }
        });
    }
};

TEST(KernelConfigs, Sm90Fp8HeuristicsAreValid) {
    for (const auto& [m, n, k] : representative_shapes()) {
        const Sm90GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin);
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ": " +
                     deep_gemm::heuristics::sm90_fp8_to_string(c));
        EXPECT_TRUE(c.block_m == 64 || c.block_m == 128 || c.block_m == 192 || c.block_m == 256);
        if (m <= 64) {
            EXPECT_EQ(c.block_m, 64);
        }
        if (c.block_m == 192) {  // the model takes 192-row tiles with the plain promotion only
            EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8MaxBlockN192);
            EXPECT_EQ(c.pipelined, 0);
        }
        if (c.block_m == 256) {
            EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8MaxBlockN256);
            EXPECT_EQ(c.pipelined, 0);
        }
        EXPECT_EQ(c.block_n % 16, 0);
        EXPECT_GE(c.block_n, 16);
        EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8MaxBlockN);
        EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Fp8MinStages);
        EXPECT_LE(deep_gemm::heuristics::sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages), kH200SmemOptin);
    }
}

TEST(KernelConfigs, Sm90Fp8GroupedHeuristicsAreValid) {
    using deep_gemm::heuristics::Sm90Fp8Chooser;
    for (const auto& [m, n, k] : representative_shapes()) {
        for (const int rows_per_group : {0, 1, 48, 64, 65, 192, 1024}) {
            for (const bool masked : {false, true}) {
                for (const Sm90Fp8Chooser chooser : {Sm90Fp8Chooser::kModel, Sm90Fp8Chooser::kRules, Sm90Fp8Chooser::kLegacy}) {
                    if (masked && rows_per_group == 0) continue;
                    const Sm90GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_grouped_config(
                        m, n, k, kH200Sms, kH200SmemOptin, rows_per_group, 8, masked, chooser);
                    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " rows/group " +
                                 std::to_string(rows_per_group) + (masked ? " masked" : " contiguous") + " chooser " +
                                 std::to_string(int(chooser)) + ": " + deep_gemm::heuristics::sm90_fp8_to_string(c));
                    // The contiguous schedulers look groups up per 128-row segment (no 192-row tiles); grouped
                    // schedulers pair no CTAs.
                    EXPECT_TRUE(c.block_m == 64 || c.block_m == 128 || c.block_m == 256);
                    EXPECT_EQ(c.multicast, 0);
                    // The psum layout's rows hint (contiguous with rows per group) keeps 64 / 128; the contiguous
                    // model keeps 128-row tiles (256-row ones are forced only: measured slower, see the model).
                    if (!masked && rows_per_group > 0) {
                        EXPECT_EQ(c.block_m, rows_per_group <= 64 ? 64 : 128);
                    }
                    if (!masked && chooser == Sm90Fp8Chooser::kModel) {
                        EXPECT_LE(c.block_m, 128);
                    }
                    EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Fp8MinStages);
                    EXPECT_LE(deep_gemm::heuristics::sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages), kH200SmemOptin);
                    if (c.pipelined) {
                        EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8MaxBlockNPipelined);
                    }
                }
            }
        }
    }
}

TEST(KernelConfigs, Sm90Fp8GroupedSourcesNameTheirScheduler) {
    const auto keys = grouped_fp8_keys();
    dg_test::expect_distinct_sources(keys, deep_gemm::kernels::gemm_kernel_source,
                                     "deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh");
    const std::pair<size_t, const char*> expected[] = {
        {0, "PaddingRows::kZero"},
        {0, "ContiguousLayoutScheduler<256u"},
        {1, "true, deep_gemm::PaddingRows::kUnspecified, 128u, deep_gemm::GroupedOrderScheduler<"},
        {2, "PaddingRows::kUnspecified, 128u, deep_gemm::GroupedOrderScheduler<64u"},
        {2, "ContiguousLayoutScheduler<64u"},
        {3, "MaskedGroupedScheduler<64u"},
        {4, "MaskedGroupedScheduler<256u"},
    };
    for (const auto& [i, text] : expected)
        EXPECT_NE(deep_gemm::kernels::gemm_kernel_source(keys[i]).code.find(text), std::string::npos) << "key " << i << ": " << text;
}

// With too little shared memory for any tile, the model returns a stage count below the minimum (the op then
// raises "not enough shared memory") rather than a config that does not fit.
TEST(KernelConfigs, Sm90Fp8ModelReportsNoFit) {
    const Sm90GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(4096, 4096, 4096, kH200Sms, 20000);
    EXPECT_LT(c.num_stages, deep_gemm::heuristics::kSm90Fp8MinStages);
}

TEST(KernelConfigs, Sm90Fp8SourceIsDistinctPerKey) {
    dg_test::expect_distinct_sources(shipped_fp8_keys(), deep_gemm::kernels::gemm_kernel_source,
                                     "deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh");
}

TEST_F(KernelCompile, Sm90Fp8Gemm1d2dNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    for (const auto& key : shipped_fp8_keys()) build_and_check(key);
}

TEST_F(KernelCompile, Sm90Fp8Gemm1d2dNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    // A subset: both math-warpgroup counts, uniform and straddling B scales, each D swizzle width.
    const auto keys = shipped_fp8_keys();
    std::set<std::tuple<int, int>> kinds;
    for (const auto& key : keys) {
        const int swizzle = deep_gemm::heuristics::sm90_fp8_d_swizzle_bytes(key.block_n);
        const int straddles = (128 % key.block_n) != 0;
        if (!kinds.insert({key.block_m * 1000 + swizzle + ((key.epilogue == kDirectStore) ? 100000 : 0) + (key.pipelined ? 1000000 : 0) +
                               key.multicast * 10000000,
                           straddles}).second)
            continue;
        build_and_check(key);
    }
    EXPECT_GE(kinds.size(), 3u);
}

// D = C + acc in the epilogue (AccumDirectStoreEpilogue): a bfloat16 C on 128-row tiles, a float32 C on
// 256-row tiles (two waves per math warpgroup), C aliasing D or not being the caller's business.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dWithC) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d2d, Sm90GemmConfig{128, 128, 5, 8, 1, 0});
    key.with_c = true;
    key.epilogue = uint8_t(deep_gemm::heuristics::Sm90GemmEpilogue::kAccumDirect);
    build_and_check(key);
    key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d2d, Sm90GemmConfig{
        256, 128, deep_gemm::heuristics::sm90_fp8_max_stages(256, 128, kH200SmemOptin), 8, 0, 2});
    key.with_c = true, key.c_fp32 = true;
    key.epilogue = uint8_t(deep_gemm::heuristics::Sm90GemmEpilogue::kAccumDirect);
    build_and_check(key);
}

// Split-K (SplitKScheduler, partials and the last unit's sum): 64-row tiles with the pipelined promotion
// and 128-row tiles (two math warpgroups) with the plain one; BLOCK_N 64 with the TMA store and 32 straddling
// nothing; N and K compiled in as by default.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dSplitK) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    for (const auto& [bm, bn, pp, splits] : {std::tuple{128, 64, 0, 4}, std::tuple{64, 32, 1, 3}}) {
        GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d2d, Sm90GemmConfig{
            bm, bn, deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin), 8, pp, 0, splits});
        key.n = 2112;
        key.k = 7168;
        EXPECT_EQ(key.split_k, splits);
        build_and_check(key);
    }
}

// 192-row tiles (three math warpgroups, 512 threads, 152 registers each): the widest tile each promotion
// allows, with A multicast; build_and_check also checks that nothing spills.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dThreeMathWarpgroups) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    for (const auto& [bn, pp, mc] : {std::tuple{128, 0, 2}, std::tuple{80, 1, 0}}) {
        GemmKernelKey key = deep_gemm::kernels::gemm_kernel_key(GemmKernel::kFp8_1d2d, Sm90GemmConfig{
            192, bn, deep_gemm::heuristics::sm90_fp8_max_stages(192, bn, kH200SmemOptin), 8, pp, mc});
        EXPECT_EQ(deep_gemm::heuristics::sm90_fp8_num_threads(192), 512);
        build_and_check(key);
    }
}

// Grouped variants: contiguous (zero padding) and psum (unspecified padding) on 256-row tiles with NVCC; psum on 64-row tiles and masked on 64- and 256-row tiles with NVRTC.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dGroupedNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    const auto keys = grouped_fp8_keys();
    build_and_check(keys[0]);
    build_and_check(keys[1]);
}

TEST_F(KernelCompile, Sm90Fp8Gemm1d2dGroupedNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    const auto keys = grouped_fp8_keys();
    for (size_t i = 2; i < keys.size(); ++i) build_and_check(keys[i]);
}

// Contiguous on 2-CTA clusters, as DG_FP8_GEMM_CONFIG forces them: the generated source names the pair order, the
// SASS has the multicast TMA load besides build_and_check's checks.
//   Sharing A (multicast 2: pairs of N blocks of one M block, so of one group): the heuristics' index-layout pick
//   with zero padding (NVCC), and psum with unspecified padding on 256-row tiles (two segments, second visits)
//   with NVRTC.
//   Sharing B (multicast 1: M blocks 2p and 2p + 1, which may hold two groups; B is multicast only when they
//   hold one, each CTA loads its own otherwise): the heuristics' index-layout pick (NVCC), psum with unspecified
//   padding on the pipelined 128x128 tile and on 64-row tiles (NVRTC); the SASS also has the own B loads.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dContiguousMulticast) {
    const auto keys = grouped_fp8_keys();
    GemmKernelKey pipelined = keys[6];
    pipelined.mode = int(deep_gemm::kernels::GemmGroupedMode::kMGroupedContiguousPsum);
    pipelined.padding = 0, pipelined.group_align = 128;
    pipelined.block_n = 128, pipelined.pipelined = 1;
    pipelined.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(128, 128, kH200SmemOptin);
    struct Case {
        GemmKernelKey base;
        const char* nvrtc;
        uint8_t multicast;
    };
    for (const auto& [base, nvrtc, multicast] : {Case{keys[6], "0", 2}, Case{keys[1], "1", 2}, Case{keys[6], "0", 1},
                                                 Case{pipelined, "1", 1}, Case{keys[2], "1", 1}}) {
        // (Masked pairs: Sm90Fp8Gemm1d2dMaskedMulticastB below.)
        ScopedEnv compiler("DG_JIT_USE_NVRTC", nvrtc);
        GemmKernelKey key = base;
        key.multicast = multicast;
        const bool share_b = multicast == 1;
        const auto src = deep_gemm::kernels::gemm_kernel_source(key);
        const std::string order = share_b ? "u, deep_gemm::ClusterPairScheduler<" : "u, deep_gemm::ClusterPairNScheduler<";
        EXPECT_NE(src.code.find(order), std::string::npos) << "no pair order in " << src.code;
        EXPECT_NE(src.symbol.find(share_b ? "_mcb_" : "_mca_"), std::string::npos) << src.symbol;
        build_and_check(key, [share_b](const std::string& sass) {
            EXPECT_NE(sass.find("UTMALDG.3D.MULTICAST"), std::string::npos) << "no multicast TMA load in SASS";
            // Sharing B: A and its scales, and B's two half-tile loads of a pair that holds two groups.
            if (share_b) {
                EXPECT_GE(count_op(sass, "UTMALDG.3D") - count_op(sass, "UTMALDG.3D.MULTICAST"), 4)
                    << "no own B loads in SASS";
            }
        });
    }
}

// Masked on 2-CTA clusters pairing M blocks of one group (multicast 1, B shared), as DG_FP8_GEMM_CONFIG forces them:
// the pipelined 128-row tile (a warpgroup without rows only passes slots on) and the 256-row one.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dMaskedMulticastB) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    const auto keys = grouped_fp8_keys();
    for (const size_t i : {size_t(5), size_t(4)}) {
        GemmKernelKey key = keys[i];
        key.multicast = 1;
        const auto src = deep_gemm::kernels::gemm_kernel_source(key);
        EXPECT_NE(src.code.find("u, 2u>;"), std::string::npos) << "no pair order in " << src.code;
        build_and_check(key, [](const std::string& sass) {
            EXPECT_NE(sass.find("UTMALDG.3D.MULTICAST"), std::string::npos) << "no multicast TMA load in SASS";
        });
    }
}

// Tile signals (m_grouped_fp8_gemm_nt_masked with enable_overlap; epilogue/tile_signal.cuh): the masked heuristics'
// 64-row, pipelined 128-row and 256-row tiles, and the 128-row one on B-sharing pairs (whose second tile past a
// group's last M block signals nothing). The source takes the counters as its last parameter and names the variant;
// the SASS has the GPU-scope release add (REDG) besides build_and_check's checks. A key without the flag generates
// no trace of it.
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dMaskedTileSignal) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    const auto keys = grouped_fp8_keys();
    for (const auto& [i, multicast] : {std::pair{size_t(3), 0}, std::pair{size_t(5), 0}, std::pair{size_t(4), 0},
                                       std::pair{size_t(5), 1}}) {
        GemmKernelKey key = keys[i];
        key.multicast = uint8_t(multicast);
        const auto plain = deep_gemm::kernels::gemm_kernel_source(key);
        EXPECT_EQ(plain.code.find("tile_signal"), std::string::npos) << plain.code;
        key.tile_signal = 1;
        const auto src = deep_gemm::kernels::gemm_kernel_source(key);
        EXPECT_NE(src.symbol.find("_signal"), std::string::npos) << src.symbol;
        EXPECT_NE(src.code.find("DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D2D_SIGNAL_PARAMS)"), std::string::npos) << src.code;
        EXPECT_NE(src.code.find(", nullptr, nullptr, tile_signal"), std::string::npos) << src.code;
        build_and_check(key, [](const std::string& sass) {
            EXPECT_GT(count_op(sass, "REDG"), 0) << "no signal add in SASS";
        });
    }
}

// The contiguous schedulers look groups up per 128-row segment: 192-row tiles (three 64-row warpgroups) do not
// fit, and the scheduler refuses to instantiate them (the host rejects them before that:
// GemmLaunch.GroupedLayoutNeedsWholeSegments).
TEST_F(KernelCompile, Sm90Fp8Gemm1d2dContiguous192RowTilesRejected) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    GemmKernelKey key = grouped_fp8_keys()[0];
    key.block_m = 192;
    key.block_n = 128;
    key.pipelined = false;
    key.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(192, 128, kH200SmemOptin);
    const auto src = deep_gemm::kernels::gemm_kernel_source(key);
    try {
        deep_gemm::jit::build({src.name, src.symbol, src.code}, "sm_90a");
        ADD_FAILURE() << "a contiguous kernel with 192-row tiles compiled";
    } catch (const deep_gemm::jit::Error& e) {
        EXPECT_NE(std::string(e.what()).find("BLOCK_M 64, 128 or 256"), std::string::npos) << e.what();
    }
}

}  // namespace
