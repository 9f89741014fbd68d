// The SM90 GEMM launch path without a GPU: planning a call from a plain description (api::plan_gemm_call)
// yields exactly the kernels the compile-only tests build from the heuristics' configs, the generated
// sources of a few keys stay byte-identical (pinned hashes: a change to the code generation must be
// deliberate), and bad plans raise.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "apis/gemm_plan.hpp"
#include "jit/errors.hpp"
#include "jit/sha256.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/heuristics/sm90_fp8_config.hpp"
#include "jit_kernels/heuristics/sm90_fp8_cost_model.hpp"
#include "jit_kernels/heuristics/sm90_fp8_1d1d.hpp"
#include "jit_kernels/impls/sm90_bf16_gemm.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d1d.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

namespace h = deep_gemm::heuristics;
namespace k = deep_gemm::kernels;
using deep_gemm::api::GemmCallShape;
using deep_gemm::api::plan_gemm_call;
using dg_test::kH200SmemOptin;
using dg_test::kH200Sms;

GemmCallShape call_of(const char* op, int m, int n, int k_) {
    GemmCallShape call;
    call.op = op;
    call.m = m, call.n = n, call.k = k_;
    return call;
}

// The one source a call plans, which must be the source of `expected`.
void expect_plan(const GemmCallShape& call, const k::GemmKernelKey& expected) {
    SCOPED_TRACE(call.op);
    const std::vector<k::GemmKernelSource> plan = plan_gemm_call(call);
    ASSERT_EQ(plan.size(), 1u);
    const k::GemmKernelSource want = k::gemm_kernel_source(expected);
    EXPECT_EQ(plan[0].symbol, want.symbol);
    EXPECT_EQ(plan[0].code, want.code);
    EXPECT_EQ(plan[0].smem_bytes, want.smem_bytes);
}

TEST(GemmLaunch, PlanDenseFp8MatchesTheHeuristicKey) {
    for (const auto& [m, n, kk] : {std::tuple{4096, 7168, 16384}, std::tuple{128, 2112, 7168}, std::tuple{1, 576, 192}}) {
        // Without C the dense op may split K (128x2112x7168 does).
        k::GemmKernelKey key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d,
            h::choose_sm90_fp8_config(m, n, kk, kH200Sms, kH200SmemOptin, h::Sm90Fp8Chooser::kModel, {}, true));
        key.n = uint32_t(n), key.k = uint32_t(kk);  // the op's default compiled_dims "nk"
        expect_plan(call_of("fp8_gemm_nt", m, n, kk), key);
    }
    // N = 100: D rows are not 16-byte multiples, so the direct-store epilogue.
    k::GemmKernelKey key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d,
        h::choose_sm90_fp8_config(128, 100, 512, kH200Sms, kH200SmemOptin, h::Sm90Fp8Chooser::kModel, {}, true));
    key.n = 100, key.k = 512;
    key.epilogue = uint8_t(h::Sm90GemmEpilogue::kBf16Direct);
    expect_plan(call_of("fp8_gemm_nt", 128, 100, 512), key);
}

// A C (bf16 or float32) is added in the 1D2D epilogue: the plan's key carries it, as run_gemm's does.
TEST(GemmLaunch, PlanDenseFp8WithCMatchesTheHeuristicKey) {
    GemmCallShape call = call_of("fp8_gemm_nt", 4096, 7168, 2048);
    call.with_c = true;
    for (const bool c_fp32 : {false, true}) {
        call.c_fp32 = c_fp32;
        k::GemmKernelKey key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d,
                                              h::choose_sm90_fp8_config(4096, 7168, 2048, kH200Sms, kH200SmemOptin));
        key.n = 7168, key.k = 2048;
        key.with_c = true, key.c_fp32 = c_fp32;
        key.epilogue = uint8_t(h::Sm90GemmEpilogue::kAccumDirect);
        expect_plan(call, key);
    }
    GemmCallShape masked = call_of("m_grouped_fp8_gemm_nt_masked", 256, 4096, 7168);
    masked.num_groups = 4, masked.with_c = true;
    EXPECT_THROW(plan_gemm_call(masked), deep_gemm::jit::Error);  // the grouped modes take no C
}

TEST(GemmLaunch, PlanGroupedFp8MatchesTheHeuristicKey) {
    GemmCallShape contiguous = call_of("m_grouped_fp8_gemm_nt_contiguous", 8 * 4256, 6144, 7168);
    contiguous.num_groups = 8;
    k::GemmKernelKey key = k::gemm_kernel_key(
        k::GemmKernel::kFp8_1d2d,
        h::choose_sm90_fp8_grouped_config(8 * 4256, 6144, 7168, kH200Sms, kH200SmemOptin, 0, 8, false));
    key.mode = uint8_t(k::GemmGroupedMode::kMGroupedContiguous);
    key.padding = 1;  // zero padding rows (the default)
    key.n = 6144, key.k = 7168;
    expect_plan(contiguous, key);

    // ensure_zero_padding=False: PaddingRows::kUnspecified (0, DeepGEMM's SM90 rows), which looks groups up per
    // alignment block and so carries the alignment, in both layouts.
    contiguous.ensure_zero_padding = false;
    key.padding = 0, key.group_align = 128;
    expect_plan(contiguous, key);
    const k::GemmKernelSource unspecified = plan_gemm_call(contiguous).at(0);
    EXPECT_NE(unspecified.code.find("false, deep_gemm::PaddingRows::kUnspecified, 128u, deep_gemm::GroupedOrderScheduler<"), std::string::npos);
    EXPECT_NE(unspecified.symbol.find("_contig_al128"), std::string::npos) << unspecified.symbol;

    contiguous.use_psum_layout = true;
    key.mode = uint8_t(k::GemmGroupedMode::kMGroupedContiguousPsum);
    expect_plan(contiguous, key);

    // expected_m_for_psum_layout steers the tile height as masked's expected_m does: small groups, 64 rows.
    contiguous.expected_m = 48;
    const h::Sm90GemmConfig hinted =
        h::choose_sm90_fp8_grouped_config(8 * 4256, 6144, 7168, kH200Sms, kH200SmemOptin, 48, 8, false);
    EXPECT_EQ(hinted.block_m, 64);
    key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d, hinted);
    key.mode = uint8_t(k::GemmGroupedMode::kMGroupedContiguousPsum);
    key.padding = 0, key.group_align = 128;
    key.n = 6144, key.k = 7168;
    expect_plan(contiguous, key);

    GemmCallShape masked = call_of("m_grouped_fp8_gemm_nt_masked", 256, 6144, 7168);
    masked.num_groups = 32, masked.expected_m = 48;
    key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d, h::choose_sm90_fp8_grouped_config(256, 6144, 7168, kH200Sms,
                                                                                         kH200SmemOptin, 48, 32, true));
    key.mode = uint8_t(k::GemmGroupedMode::kMGroupedMasked);
    key.n = 6144, key.k = 7168;
    expect_plan(masked, key);
}

TEST(GemmLaunch, PlanFp8_1d1dMatchesTheHeuristicKey) {
    GemmCallShape call = call_of("fp8_gemm_nt", 4096, 7168, 2048);
    call.recipe = deep_gemm::api::kRecipe1D1D;
    call.with_c = true;
    k::GemmKernelKey key = k::gemm_kernel_key(
        k::GemmKernel::kFp8_1d1d, h::choose_sm90_fp8_1d1d_config(4096, 7168, 2048, kH200Sms, kH200SmemOptin));
    key.n = 7168, key.k = 2048, key.with_c = true;
    expect_plan(call, key);

    // K-grouped: one kernel for all groups, K at run time (default compiled_dims "mn"), its config chosen as for
    // G * M rows at the groups' mean K rounded up to 128 (8704 / 3 -> 2944).
    GemmCallShape kg = call_of("k_grouped_fp8_gemm_nt_contiguous", 256, 7168, 0);
    kg.num_groups = 3;
    kg.ks = {512, 0, 8192};
    key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d1d,
                             h::choose_sm90_fp8_1d1d_config(3 * 256, 7168, 2944, kH200Sms, kH200SmemOptin));
    key.mode = uint8_t(k::GemmGroupedMode::kKGroupedContiguous);
    key.m = 256, key.n = 7168;
    const auto planned = plan_gemm_call(kg);
    ASSERT_EQ(planned.size(), 1u);
    EXPECT_EQ(planned[0].symbol, k::gemm_kernel_source(key).symbol);
    EXPECT_NE(planned[0].symbol.find("_kgrouped"), std::string::npos);
    // No group with K: nothing launches, nothing to plan.
    kg.ks = {0, 0, 0};
    EXPECT_TRUE(plan_gemm_call(kg).empty());
}

TEST(GemmLaunch, PlanBf16MatchesTheHeuristicKey) {
    const auto epi = h::Sm90GemmEpilogue::kBf16Tma;
    h::Sm90GemmConfig c = h::choose_sm90_bf16_config(4096, 7168, 2048, kH200Sms, kH200SmemOptin, false, epi, 2);
    k::GemmKernelKey key = k::gemm_kernel_key(k::GemmKernel::kBf16, c);
    key.epilogue = uint8_t(epi);
    key.n = 7168, key.k = 2048;
    expect_plan(call_of("bf16_gemm_nt", 4096, 7168, 2048), key);

    // nn: B stored [K, N] (MN-major).
    c = h::choose_sm90_bf16_config(4096, 7168, 2048, kH200Sms, kH200SmemOptin, true, epi, 2);
    key = k::gemm_kernel_key(k::GemmKernel::kBf16, c);
    key.b_mn_major = true, key.epilogue = uint8_t(epi);
    key.n = 7168, key.k = 2048;
    expect_plan(call_of("bf16_gemm_nn", 4096, 7168, 2048), key);

    // K-grouped: MN-major operands, FP32 D with C, config for the bucketed average K, compiled M and N.
    GemmCallShape kg = call_of("k_grouped_bf16_gemm_tn_contiguous", 7168, 2048, 4 * 4096);
    kg.num_groups = 4, kg.with_c = true;
    c = h::choose_sm90_bf16_config(7168, 2048, h::sm90_bf16_k_grouped_hint_k(4 * 4096, 4), kH200Sms, kH200SmemOptin,
                                   true, h::Sm90GemmEpilogue::kAccumDirect, 8, 0, 4);
    key = k::gemm_kernel_key(k::GemmKernel::kBf16, c);
    key.a_mn_major = key.b_mn_major = true;
    key.mode = uint8_t(k::GemmGroupedMode::kKGroupedContiguous);
    key.epilogue = uint8_t(h::Sm90GemmEpilogue::kAccumDirect);
    key.d_fp32 = key.with_c = true;
    key.m = 7168, key.n = 2048;
    expect_plan(kg, key);
}

// m_grouped_fp8_gemm_nt_masked's max_block_n and enable_overlap: the heuristic key with BLOCK_N capped and the
// tile-signal flag; only the masked FP8 op takes them.
TEST(GemmLaunch, PlanMaskedOverlap) {
    GemmCallShape masked = call_of("m_grouped_fp8_gemm_nt_masked", 256, 6144, 7168);
    masked.num_groups = 32, masked.expected_m = 48;
    masked.max_block_n = 64, masked.enable_overlap = true;
    k::GemmKernelKey key = k::gemm_kernel_key(
        k::GemmKernel::kFp8_1d2d, h::choose_sm90_fp8_grouped_config(256, 6144, 7168, kH200Sms, kH200SmemOptin, 48, 32, true,
                                                                    h::Sm90Fp8Chooser::kModel, {}, 64));
    EXPECT_LE(key.block_n, 64);
    key.mode = uint8_t(k::GemmGroupedMode::kMGroupedMasked);
    key.n = 6144, key.k = 7168;
    key.tile_signal = 1;
    expect_plan(masked, key);
    GemmCallShape dense = call_of("fp8_gemm_nt", 256, 6144, 7168);
    dense.enable_overlap = true;
    EXPECT_THROW(plan_gemm_call(dense), deep_gemm::jit::Error);
    masked.max_block_n = 8;
    EXPECT_THROW(plan_gemm_call(masked), deep_gemm::jit::Error);
}

TEST(GemmLaunch, PlanRejectsWhatRunWould) {
    EXPECT_THROW(plan_gemm_call(call_of("fp8_gemm_xx", 128, 128, 128)), deep_gemm::jit::Error);
    GemmCallShape bad_dims = call_of("bf16_gemm_nt", 128, 128, 128);
    bad_dims.compiled_dims = "nq";
    EXPECT_THROW(plan_gemm_call(bad_dims), deep_gemm::jit::Error);
    k::DeviceLimits ampere;
    ampere.cc_major = 8;
    EXPECT_THROW(plan_gemm_call(call_of("fp8_gemm_nt", 128, 128, 128), ampere), deep_gemm::jit::Error);
    k::DeviceLimits tiny;
    tiny.smem_optin = 32 * 1024;  // not even 3 stages of the smallest FP8 tile (33584 bytes) fit
    EXPECT_THROW(plan_gemm_call(call_of("fp8_gemm_nt", 4096, 4096, 4096), tiny), deep_gemm::jit::Error);
}

// The one problem description (apis/gemm_problem.hpp) that run_gemm and plan_gemm_call both build: the kernel
// of each op's recipes, the grouped mode of each grouping and the BF16 operand majors of the op's letters.
TEST(GemmLaunch, OneProblemDescriptionPerOp) {
    namespace api = deep_gemm::api;
    for (const api::GemmOpSpec& spec : api::kSpecs) {
        SCOPED_TRACE(spec.name);
        const bool k_grouped = spec.grouping == api::Grouping::kKContiguous;
        const std::optional<k::GemmKernel> kernel = api::recipe_kernel(spec, api::default_fp8_recipe(spec));
        ASSERT_TRUE(kernel.has_value());
        if (spec.family == api::Family::kBf16) {
            EXPECT_EQ(*kernel, k::GemmKernel::kBf16);
        } else {
            EXPECT_EQ(*kernel, k_grouped ? k::GemmKernel::kFp8_1d1d : k::GemmKernel::kFp8_1d2d);
            // 1D2D: every FP8 op but the K-grouped one; 1D1D: the dense and K-grouped ones.
            EXPECT_EQ(api::recipe_kernel(spec, api::kRecipe1D2D).has_value(), !k_grouped);
            EXPECT_EQ(api::recipe_kernel(spec, api::kRecipe1D1D).has_value(),
                      k_grouped || spec.grouping == api::Grouping::kNone);
        }
        api::GemmCallScalars s;
        s.kernel = *kernel;
        s.m = 256, s.n = 512, s.k = 1024, s.num_groups = 4, s.expected_m = 64;
        const k::GemmProblem p = api::gemm_problem(spec, s);
        EXPECT_EQ(p.kernel, *kernel);
        EXPECT_STREQ(p.op, spec.name);
        const k::GemmGroupedMode modes[] = {k::GemmGroupedMode::kNone, k::GemmGroupedMode::kMGroupedContiguous,
                                            k::GemmGroupedMode::kMGroupedMasked, k::GemmGroupedMode::kKGroupedContiguous};
        EXPECT_EQ(p.mode, modes[int(spec.grouping)]);
        EXPECT_EQ(p.num_groups, spec.grouping == api::Grouping::kNone ? 0 : 4);
        EXPECT_EQ(p.expected_m, spec.grouping == api::Grouping::kMMasked ? 64 : 0);  // contiguous: psum layout only
        if (spec.family == api::Family::kBf16) {
            EXPECT_EQ(p.a_k_major, !spec.trans_a && !k_grouped);
            EXPECT_EQ(p.b_k_major, !spec.trans_b && !k_grouped);
            EXPECT_EQ(p.d_fp32, k_grouped);
        }
    }
    // A K-grouped FP8 problem plans one kernel per distinct non-empty group K, and nothing else does.
    k::GemmProblem kg = deep_gemm::api::gemm_problem(*deep_gemm::api::find_op_spec("k_grouped_fp8_gemm_nt_contiguous"),
                                                     {.kernel = k::GemmKernel::kFp8_1d1d, .m = 256, .n = 512, .k = 1024,
                                                      .num_groups = 3, .compiled_dims = "mn"});
    const std::vector<int> ks = {512, 0, 512};
    EXPECT_EQ(k::plan_k_grouped_fp8_gemm(kg, ks, {}).size(), 1u);
    EXPECT_THROW(k::plan_k_grouped_fp8_gemm(kg, std::vector<int>{512, 512}, {}), deep_gemm::jit::Error);
    kg.mode = k::GemmGroupedMode::kNone;
    EXPECT_THROW(k::plan_k_grouped_fp8_gemm(kg, ks, {}), deep_gemm::jit::Error);
}

// The contiguous schedulers look groups up per segment: BLOCK_M up to 128, or a 128-row half of a 256-row
// block. The group alignment must be a multiple of the segment, and 192-row tiles (three 64-row warpgroups)
// fit no segment.
TEST(GemmLaunch, GroupedLayoutNeedsWholeSegments) {
    k::GemmProblem p;
    p.mode = k::GemmGroupedMode::kMGroupedContiguous;
    p.alignment = 128;
    for (const int block_m : {64, 128, 256}) {
        k::GemmKernelKey key;
        key.block_m = block_m;
        EXPECT_NO_THROW(k::set_grouped_layout("op", p, key)) << block_m;
    }
    k::GemmKernelKey key;
    key.block_m = 192;
    EXPECT_THROW(k::set_grouped_layout("op", p, key), deep_gemm::jit::Error);
    p.mode = k::GemmGroupedMode::kMGroupedMasked;  // no segments: rows per group
    EXPECT_NO_THROW(k::set_grouped_layout("op", p, key));
}

// set_block_size_multiple_of: every chooser picks only tiles whose BLOCK_M / BLOCK_N are multiples of the
// knob's values, over small and large, dense and grouped shapes.
TEST(GemmLaunch, ChoosersHonourBlockSizeMultiples) {
    const std::tuple<int, int, int> shapes[] = {{1, 576, 192},      {64, 2112, 7168}, {128, 2112, 7168},
                                                {1000, 100, 512},   {4096, 7168, 2048}, {8192, 24576, 1536}};
    for (const h::BlockMultiples mult : {h::BlockMultiples{1, 1}, h::BlockMultiples{128, 1}, h::BlockMultiples{64, 32},
                                         h::BlockMultiples{1, 48}, h::BlockMultiples{128, 64}}) {
        for (const auto& [m, n, kk] : shapes) {
            SCOPED_TRACE(std::to_string(mult.m) + "x" + std::to_string(mult.n) + " at " + std::to_string(m) + "x" +
                         std::to_string(n) + "x" + std::to_string(kk));
            auto expect_allowed = [&](int block_m, int block_n, int stages, int min_stages) {
                EXPECT_TRUE(mult.allows(block_m, block_n)) << block_m << "x" << block_n;
                EXPECT_GE(stages, min_stages);
            };
            for (const auto chooser : {h::Sm90Fp8Chooser::kModel, h::Sm90Fp8Chooser::kRules, h::Sm90Fp8Chooser::kLegacy}) {
                const auto dense = h::choose_sm90_fp8_config(m, n, kk, kH200Sms, kH200SmemOptin, chooser, mult);
                expect_allowed(dense.block_m, dense.block_n, dense.num_stages, h::kSm90Fp8MinStages);
                for (const int rows_per_group : {0, 48, 200}) {
                    for (const bool masked : {false, true}) {
                        if (masked && rows_per_group == 0) continue;
                        const auto grouped = h::choose_sm90_fp8_grouped_config(8 * m, n, kk, kH200Sms, kH200SmemOptin,
                                                                               rows_per_group, 8, masked, chooser, mult);
                        expect_allowed(grouped.block_m, grouped.block_n, grouped.num_stages, h::kSm90Fp8MinStages);
                        if (!masked) {
                            EXPECT_NE(grouped.block_m, 192);
                        }
                    }
                }
            }
            const auto c1d1d = h::choose_sm90_fp8_1d1d_config(m, n, kk, kH200Sms, kH200SmemOptin, mult);
            expect_allowed(c1d1d.block_m, c1d1d.block_n, c1d1d.num_stages, h::kSm90Fp8MinStages);
            for (const int rows_per_group : {0, 48}) {
                const auto bf16 = h::choose_sm90_bf16_config(m, n, kk, kH200Sms, kH200SmemOptin, false,
                                                             h::Sm90GemmEpilogue::kBf16Tma, 2, rows_per_group, 1, mult);
                expect_allowed(bf16.block_m, bf16.block_n, bf16.num_stages, h::kSm90Bf16MinStages);
            }
            const auto kgrouped = h::choose_sm90_bf16_config(m, n, kk, kH200Sms, kH200SmemOptin, true,
                                                             h::Sm90GemmEpilogue::kAccumDirect, 4, 0, 4, mult);
            expect_allowed(kgrouped.block_m, kgrouped.block_n, kgrouped.num_stages, h::kSm90Bf16MinStages);
        }
    }
}

// The launch path applies the knob (the plan's tile respects it) and rejects multiples no tile has.
TEST(GemmLaunch, PlanHonoursBlockSizeMultiples) {
    GemmCallShape call = call_of("fp8_gemm_nt", 128, 2112, 7168);
    call.block_m_multiple = 128, call.block_n_multiple = 64;
    k::GemmKernelKey key = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d,
        h::choose_sm90_fp8_config(128, 2112, 7168, kH200Sms, kH200SmemOptin, h::Sm90Fp8Chooser::kModel, {128, 64}));
    EXPECT_EQ(key.block_m % 128, 0);
    EXPECT_EQ(key.block_n % 64, 0);
    key.n = 2112, key.k = 7168;
    expect_plan(call, key);

    GemmCallShape masked = call_of("m_grouped_bf16_gemm_nt_masked", 256, 4096, 7168);
    masked.num_groups = 8, masked.expected_m = 32;
    masked.block_m_multiple = 128;  // 64-row tiles (the small-group choice) are not allowed: 128
    const std::vector<k::GemmKernelSource> plan = plan_gemm_call(masked);
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_NE(plan[0].symbol.find("_bm128_"), std::string::npos) << plan[0].symbol;

    call.block_m_multiple = 512;  // no SM90 tile has 512 rows
    try {
        plan_gemm_call(call);
        ADD_FAILURE() << "no error for BLOCK_M multiples of 512";
    } catch (const deep_gemm::jit::Error& e) {
        EXPECT_NE(std::string(e.what()).find("fp8_gemm_nt: no kernel config has BLOCK_M a multiple of 512"),
                  std::string::npos)
            << e.what();
    }
}

// The code generation of one key per kernel, pinned: symbol and the SHA-256 of the source text. The GEMM
// launch path was introduced with these unchanged from the per-kernel hosts it replaced; since then the
// sources start with the wgmma selection (wgmma_selection), and the entry points declare and pass on their
// parameters through the kernels' parameter lists (impls/*_params.hpp; the same tokens after preprocessing).
TEST(GemmLaunch, GeneratedSourcesArePinned) {
    k::GemmKernelKey fp8 = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d, h::Sm90GemmConfig{128, 128, 5, 8, 1, 2});
    fp8.n = 7168, fp8.k = 2048;
    k::GemmKernelKey fp8_masked = k::gemm_kernel_key(k::GemmKernel::kFp8_1d2d, h::Sm90GemmConfig{64, 96, 5, 8, 1, 0});
    fp8_masked.mode = uint8_t(k::GemmGroupedMode::kMGroupedMasked);
    fp8_masked.epilogue = uint8_t(h::Sm90GemmEpilogue::kBf16Direct);
    k::GemmKernelKey fp8_1d1d = k::gemm_kernel_key(k::GemmKernel::kFp8_1d1d, h::Sm90GemmConfig{128, 112, 4, 8});
    fp8_1d1d.with_c = true;
    k::GemmKernelKey bf16 = k::gemm_kernel_key(k::GemmKernel::kBf16, h::Sm90GemmConfig{128, 256, 6, 8});
    bf16.b_mn_major = true, bf16.multicast = 1, bf16.n = 7168, bf16.k = 2048;
    const struct {
        k::GemmKernelKey key;
        const char* symbol;
        const char* sha256;
    } pinned[] = {
        {fp8, "sm90_fp8_gemm_1d2d_bm128_bn128_s5_g8_m0_n7168_k2048_pp_mca", 
         "b1ebc7f65a2f3daec09c549eb639f2a044a2720bd7785b164bf163501187ba7a"},
        {fp8_masked, "sm90_fp8_gemm_1d2d_bm64_bn96_s5_g8_m0_n0_k0_direct_pp_masked", 
         "55e478464468e16b5dbceef143744e622772d5dcbc6431f103f751cc402718ea"},
        {fp8_1d1d, "sm90_fp8_gemm_1d1d_bm128_bn112_s4_g8_m0_n0_k0_c", 
         "01004ec5b2c8e1ba829a50b262a8f96da72b7c40ee2dfb1bf4708bee07934ea6"},
        {bf16, "sm90_bf16_gemm_nn_bm128_bn256_s6_g8_m0_n7168_k2048_tma_bf16_mc2", 
         "9b0f7510539d2601e06d842c95c0ac84b085b887960d175fbe27ff827508d3d9"},
    };
    for (const auto& p : pinned) {
        const k::GemmKernelSource src = k::gemm_kernel_source(p.key);
        EXPECT_EQ(src.symbol, p.symbol);
        EXPECT_EQ(deep_gemm::jit::detail::sha256_hex(src.code), p.sha256) << src.symbol;
    }
    // Each source selects the wgmma of its own operand type and BLOCK_N (a wrong N fails to compile: the
    // compile-only tests build every kernel family).
    EXPECT_EQ(k::gemm_kernel_source(fp8).code.rfind("#define DG_WGMMA_FP8_N 128\n#define DG_WGMMA_BF16_N 0\n", 0), 0u);
    EXPECT_EQ(k::gemm_kernel_source(fp8_masked).code.rfind("#define DG_WGMMA_FP8_N 96\n#define DG_WGMMA_BF16_N 0\n", 0),
              0u);
    EXPECT_EQ(k::gemm_kernel_source(fp8_1d1d).code.rfind("#define DG_WGMMA_FP8_N 112\n#define DG_WGMMA_BF16_N 0\n", 0),
              0u);
    EXPECT_EQ(k::gemm_kernel_source(bf16).code.rfind("#define DG_WGMMA_FP8_N 0\n#define DG_WGMMA_BF16_N 256\n", 0), 0u);
}

}  // namespace
