// The knob tables of the SM90 GEMM kernels (knob_table.hpp): each variable accepts exactly its declared values,
// a config's text parses back to it, the help text names every knob, and every enumerated candidate of every
// kernel plans (its finalize accepts it) and - a sample - compiles without local memory. No GPU needed.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "jit/errors.hpp"
#include "jit_kernels/impls/knob_table.hpp"
#include "jit_kernels/impls/sm90_bf16_config_override.hpp"
#include "jit_kernels/impls/sm90_bf16_gemm.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d1d.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::kernels::GemmGroupedMode;
using deep_gemm::kernels::GemmKernel;
using deep_gemm::kernels::GemmProblem;
namespace knobs = deep_gemm::kernels::knobs;

struct Kernel {
    const knobs::KnobTable& table;
    // A value of every knob from which changing any one knob to any declared value obeys the table's rule.
    std::vector<int> base;
};

std::vector<Kernel> kernels() {
    return {{deep_gemm::kernels::fp8_1d2d_knobs(), {64, 32, 0, 0, 0, 0, 0}},
            {deep_gemm::kernels::fp8_1d1d_knobs(), {64, 32, 0, 0, 0, 0, 0}},
            {deep_gemm::kernels::bf16_knobs(), {64, 32, 0, 0}}};
}

bool accepted(const knobs::KnobTable& table, const std::string& text) {
    try {
        return knobs::parse_forced(table, text).active();
    } catch (const deep_gemm::jit::ConfigError&) {
        return false;
    }
}

std::string join(const std::vector<int>& values) {
    std::string text;
    for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
}

TEST(KnobTables, ParserAcceptsExactlyTheDeclaredValues) {
    for (const Kernel& kernel : kernels()) {
        SCOPED_TRACE(kernel.table.variable);
        ASSERT_EQ(kernel.base.size(), kernel.table.knobs.size());
        ASSERT_TRUE(accepted(kernel.table, join(kernel.base)));
        for (size_t i = 0; i < kernel.table.knobs.size(); ++i) {
            const knobs::Knob& knob = kernel.table.knobs[i];
            int num_accepted = 0;
            for (int value = -2; value <= 1100; ++value) {
                std::vector<int> values = kernel.base;
                values[i] = value;
                const bool ok = accepted(kernel.table, join(values));
                EXPECT_EQ(ok, knob.accepts(value)) << knob.name << " = " << value;
                num_accepted += ok;
            }
            EXPECT_GT(num_accepted, 0) << knob.name;
        }
    }
}

// The declared sets themselves, as docs/env_vars.md states them.
TEST(KnobTables, DeclaredValues) {
    const knobs::KnobTable& fp8 = deep_gemm::kernels::fp8_1d2d_knobs();
    std::vector<int> block_m;
    for (int v = 0; v <= 512; ++v)
        if (fp8.knobs[0].accepts(v)) block_m.push_back(v);
    EXPECT_EQ(block_m, (std::vector<int>{64, 128, 192, 256}));
    EXPECT_TRUE(fp8.knobs[2].accepts(0));
    EXPECT_FALSE(fp8.knobs[2].accepts(2));
    EXPECT_TRUE(fp8.knobs[2].accepts(16));
    EXPECT_FALSE(fp8.knobs[2].accepts(17));
    EXPECT_FALSE(deep_gemm::kernels::bf16_knobs().knobs[0].accepts(256));
    EXPECT_TRUE(deep_gemm::kernels::bf16_knobs().knobs[1].accepts(256));
    EXPECT_FALSE(deep_gemm::kernels::fp8_1d1d_knobs().knobs[1].accepts(192));
}

TEST(KnobTables, HelpTextNamesEveryKnobInOrder) {
    for (const Kernel& kernel : kernels()) {
        const std::string help = knobs::help_text(kernel.table);
        size_t at = 0;
        for (const knobs::Knob& knob : kernel.table.knobs) {
            const size_t found = help.find(std::string(" ") + knob.name + " ", at);
            ASSERT_NE(found, std::string::npos) << knob.name << " in " << help;
            EXPECT_NE(help.find(knob.meaning), std::string::npos) << help;
            at = found;
        }
    }
}

// Problems of every kernel: dense, grouped, with C.
std::vector<GemmProblem> problems() {
    std::vector<GemmProblem> out;
    GemmProblem p;
    p.kernel = GemmKernel::kFp8_1d2d, p.m = 4096, p.n = 7168, p.k = 2048;
    out.push_back(p);
    p.m = 128, p.n = 2112, p.k = 7168;
    out.push_back(p);
    p.mode = GemmGroupedMode::kMGroupedContiguous, p.m = 8192, p.n = 4096, p.k = 7168, p.num_groups = 8;
    out.push_back(p);
    p.mode = GemmGroupedMode::kMGroupedMasked, p.m = 256, p.expected_m = 128, p.num_groups = 4;
    out.push_back(p);
    GemmProblem q;
    q.kernel = GemmKernel::kFp8_1d1d, q.op = "fp8_gemm_nt", q.m = 4096, q.n = 7168, q.k = 2048, q.with_c = true;
    out.push_back(q);
    GemmProblem b;
    b.kernel = GemmKernel::kBf16, b.m = 4096, b.n = 7168, b.k = 2048;
    out.push_back(b);
    return out;
}

TEST(KnobTables, CandidatesParseBackAndPlan) {
    const deep_gemm::kernels::DeviceLimits h200;
    for (const GemmProblem& p : problems()) {
        const auto found = deep_gemm::kernels::gemm_config_candidates(p, h200);
        SCOPED_TRACE(found.heuristic.symbol);
        EXPECT_GE(found.candidates.size(), 3u);
        std::set<std::string> symbols{found.heuristic.symbol};
        const knobs::KnobTable& table = p.kernel == GemmKernel::kFp8_1d2d   ? deep_gemm::kernels::fp8_1d2d_knobs()
                                        : p.kernel == GemmKernel::kFp8_1d1d ? deep_gemm::kernels::fp8_1d1d_knobs()
                                                                            : deep_gemm::kernels::bf16_knobs();
        EXPECT_EQ(found.variable, table.variable);
        for (const auto& c : found.candidates) {
            const knobs::Forced forced = knobs::parse_forced(table, c.config);  // throws when not legal text
            EXPECT_TRUE(forced.active());
            EXPECT_EQ(knobs::format_config(table, knobs::apply_forced(table, forced, Sm90GemmConfig{})), c.config);
            EXPECT_TRUE(symbols.insert(c.kernel.symbol).second) << c.kernel.symbol;
            EXPECT_LE(c.kernel.smem_bytes, dg_test::kH200SmemOptin) << c.config;
        }
    }
}

// Candidates differ from the pick in at most `max_changed` knobs, obey the rule, and include the pick.
TEST(KnobTables, CandidatesStayAroundThePick) {
    const knobs::KnobTable& table = deep_gemm::kernels::fp8_1d2d_knobs();
    Sm90GemmConfig pick;
    pick.block_m = 128, pick.block_n = 128, pick.num_stages = 0, pick.group_n = 8;
    for (int max_changed : {1, 2}) {
        const auto configs = knobs::candidates(table, pick, max_changed);
        ASSERT_FALSE(configs.empty());
        EXPECT_EQ(configs.front(), pick);
        for (const Sm90GemmConfig& c : configs) {
            int changed = 0;
            for (const knobs::Knob& knob : table.knobs) changed += c.*knob.field != pick.*knob.field;
            EXPECT_LE(changed, max_changed);
            EXPECT_EQ(table.rule(c), nullptr);
            EXPECT_TRUE(knobs::parse_forced(table, knobs::format_config(table, c)).active());
        }
    }
    EXPECT_LT(knobs::candidates(table, pick, 1).size(), knobs::candidates(table, pick, 2).size());
}

// The problem-dependent rules live in the kernel's finalize (kernel_key), whichever config reaches it: the
// settings' forced config here, a candidate or a tuned pick elsewhere.
TEST(KnobTables, FinalizeHoldsTheGroupedRules) {
    const deep_gemm::kernels::DeviceLimits h200;
    GemmProblem contiguous = problems()[2], masked = problems()[3];
    const auto plan_error = [&](const GemmProblem& p, const char* config) -> std::string {
        dg_test::ScopedEnv env("DG_FP8_GEMM_CONFIG", config);
        try {
            deep_gemm::kernels::plan_gemm(p, h200);
        } catch (const deep_gemm::jit::Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(plan_error(contiguous, "192,128,0").find("block_m 192 is for the dense and masked GEMMs only"), std::string::npos);
    EXPECT_NE(plan_error(contiguous, "128,64,0,0,0,8,2").find("split_k is for the dense GEMM only"), std::string::npos);
    EXPECT_EQ(plan_error(masked, "192,128,0"), "");
    dg_test::ScopedEnv env("DG_FP8_GEMM_CONFIG", "128,128,0,0,2");  // A pairs: not the masked scheduler's
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(masked, h200).symbol.find("_mc"), std::string::npos);
    env.set("DG_FP8_GEMM_CONFIG", "128,128,0,0,1");  // B pairs of one group: kept
    EXPECT_NE(deep_gemm::kernels::plan_gemm(masked, h200).symbol.find("_mcb"), std::string::npos);
    env.set("DG_FP8_GEMM_CONFIG", std::nullopt);
    for (const auto& c : deep_gemm::kernels::gemm_config_candidates(contiguous, h200).candidates)
        EXPECT_EQ(c.kernel.symbol.find("_bm192_"), std::string::npos) << c.config;
}

class KnobCandidateCompile : public dg_test::KernelCompileTest {
protected:
    KnobCandidateCompile() : KernelCompileTest("dg_knob_candidates_") {}
};

// A sample of the candidates (one per problem, a different position each): built for sm_90a, no local memory.
TEST_F(KnobCandidateCompile, SampledCandidatesCompile) {
    dg_test::ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    const deep_gemm::kernels::DeviceLimits h200;
    int built = 0;
    for (const GemmProblem& p : problems()) {
        const auto found = deep_gemm::kernels::gemm_config_candidates(p, h200);
        ASSERT_FALSE(found.candidates.empty());
        const size_t i = (size_t(built) * 5 + 2) % found.candidates.size();
        build_and_check_sass(found.candidates[i].kernel, [](const std::string&) {});
        ++built;
    }
    EXPECT_EQ(built, int(problems().size()));
}

}  // namespace
