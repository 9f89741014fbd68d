// DG_BF16_GEMM_CONFIG (forced dense BF16 GEMM config for tuning): the parser's accepted values, every
// malformed form (each error names the variable, the value and the accepted form), and the shared-memory fit
// of the forced tile per epilogue and B majorness. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/errors.hpp"
#include "jit_kernels/heuristics/sm90_bf16.hpp"
#include "jit_kernels/impls/sm90_bf16_config_override.hpp"
#include "jit_kernels/impls/sm90_bf16_gemm.hpp"
#include "kernel_compile_util.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmEpilogue;
using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::jit::ConfigError;
using deep_gemm::kernels::apply_sm90_bf16_config_override;
using deep_gemm::kernels::bf16_knobs;
using deep_gemm::kernels::knobs::Forced;
using dg_test::kH200SmemOptin;

// A forced config: the tile, stages and the multicast request (0 = the caller's, 1 = off, 2 = on when legal).
Sm90GemmConfig make(int block_m, int block_n, int stages, int multicast_request) {
    Sm90GemmConfig c;
    c.block_m = block_m;
    c.block_n = block_n;
    c.num_stages = stages;
    c.multicast = multicast_request;
    return c;
}

Forced parse(const std::string& text) { return deep_gemm::kernels::knobs::parse_forced(bf16_knobs(), text); }

// The config a value forces (over a default config, as the BF16 host applies it).
Sm90GemmConfig forced_config(const std::string& text) {
    return deep_gemm::kernels::knobs::apply_forced(bf16_knobs(), parse(text), Sm90GemmConfig{});
}

// The ConfigError message for `text`, or "" (with a test failure) when it was accepted.
std::string parse_error(const std::string& text) {
    try {
        parse(text);
    } catch (const ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << "accepted DG_BF16_GEMM_CONFIG='" << text << "'";
    return "";
}

// The candidates of benchmarks/sweep_bf16_configs.py (keep in sync): all must be accepted and fit on an
// H200 with bf16_gemm_nt's TMA-store epilogue.
const char* const kSweepCandidates[] = {
    "128,256,0,1", "128,256,0,0", "128,192,0,1", "128,192,0,0", "128,128,0,1", "128,128,0,0", "128,224,0,1",
    "128,224,0,0", "128,160,0,1", "128,160,0,0", "64,64,0,0",   "64,96,0,0",   "64,128,0,0",  "64,256,0,0",
    "64,128,0,1",  "128,32,0,0",  "128,64,0,0",  "128,128,0,0", "128,176,0,1", "128,176,0,0", "128,144,0,1",
    "128,208,0,1",
};

TEST(Bf16ConfigOverride, EmptyOrBlankIsNoOverride) {
    for (const char* text : {"", " ", "\t "}) {
        EXPECT_FALSE(parse(text).active()) << "'" << text << "'";
        EXPECT_EQ(parse(text), Forced{});
    }
}

TEST(Bf16ConfigOverride, AcceptsGoodValues) {
    struct Case {
        const char* text;
        Sm90GemmConfig expected;
    };
    // The multicast field maps onto GemmProblem::multicast requests: absent 0 (heuristic), 0 -> 1 (off),
    // 1 -> 2 (on when legal).
    const Case cases[] = {
        {"128,256,0", make(128, 256, 0, 0)},
        {"128,256,0,1", make(128, 256, 0, 2)},
        {"128,160,0,0", make(128, 160, 0, 1)},
        {"64,16,3", make(64, 16, 3, 0)},
        {"64,96,8,0", make(64, 96, 8, 1)},
        {" 128 , 192 ,\t4 , 1 ", make(128, 192, 4, 2)},
        {"0128,0256,00", make(128, 256, 0, 0)},
    };
    for (const auto& c : cases) {
        EXPECT_TRUE(parse(c.text).active()) << c.text;
        EXPECT_EQ(forced_config(c.text), c.expected) << c.text;
    }
    // Every BLOCK_N the heuristics may choose is accepted.
    for (int block_n = 16; block_n <= deep_gemm::heuristics::kSm90Bf16MaxBlockN; block_n += 16) {
        EXPECT_EQ(forced_config("64," + std::to_string(block_n) + ",0").block_n, block_n);
    }
}

TEST(Bf16ConfigOverride, RejectsMalformedForms) {
    struct Case {
        const char* text;
        const char* problem;  // part of the message that says what is wrong
    };
    const Case cases[] = {
        // Field count and separators.
        {"128", "1 comma-separated field instead of 3 or 4"},
        {"128,256", "2 comma-separated fields"},
        {"128,256,0,1,0", "5 comma-separated fields"},
        {"128,256,0,", "multicast '' is not a non-negative integer"},
        {",128,256", "block_m '' is not"},
        {"128,,0", "block_n '' is not"},
        {"128;256;0", "1 comma-separated field"},
        {"legacy", "1 comma-separated field"},  // FP8-only keyword
        // Not plain non-negative decimal integers.
        {"abc,256,0", "block_m 'abc' is not a non-negative integer"},
        {"-64,256,0", "block_m '-64'"},
        {"+64,256,0", "block_m '+64'"},
        {"0x80,256,0", "block_m '0x80'"},
        {"128,256.0,0", "block_n '256.0'"},
        {"128,1e2,0", "block_n '1e2'"},
        {"128,2 56,0", "block_n '2 56'"},
        {"128,256,auto", "stages 'auto'"},
        {"128,256,0,on", "multicast 'on'"},
        {"128,9999999,0", "block_n '9999999'"},
        // Out of range.
        {"0,128,0", "block_m 0 is not one of 64, 128"},
        {"32,128,0", "block_m 32 is not one of 64, 128"},
        {"256,128,0", "block_m 256 is not one of 64, 128"},
        {"128,0,0", "block_n 0 is not one of 16..256 (step 16)"},
        {"128,8,0", "block_n 8 is not"},
        {"128,24,0", "block_n 24 is not"},
        {"128,272,0", "block_n 272 is not"},
        {"128,128,1", "stages 1 is not one of 0, 3..16"},
        {"128,128,2", "stages 2 is not one of"},
        {"128,128,17", "stages 17 is not one of"},
        {"128,128,0,2", "multicast 2 is not one of 0, 1"},
    };
    for (const auto& c : cases) {
        const std::string what = parse_error(c.text);
        SCOPED_TRACE(c.text);
        EXPECT_NE(what.find(std::string("DG_BF16_GEMM_CONFIG='") + c.text + "'"), std::string::npos) << what;
        EXPECT_NE(what.find(c.problem), std::string::npos) << what;
        EXPECT_NE(what.find("expected \"block_m,block_n,stages[,multicast]\""), std::string::npos) << what;
        EXPECT_NE(what.find("block_m 64, 128"), std::string::npos) << what;
    }
}

TEST(Bf16ConfigOverride, StagesZeroFillsSharedMemory) {
    using deep_gemm::heuristics::sm90_bf16_max_stages;
    for (bool b_mn : {false, true}) {
        for (auto epi : {Sm90GemmEpilogue::kBf16Tma, Sm90GemmEpilogue::kBf16Direct, Sm90GemmEpilogue::kAccumDirect}) {
            for (const auto& [bm, bn] : {std::pair{128, 256}, std::pair{128, 160}, std::pair{64, 96}, std::pair{64, 16}}) {
                const Sm90GemmConfig c =
                    apply_sm90_bf16_config_override(make(bm, bn, 0, 0), b_mn, epi, kH200SmemOptin);
                EXPECT_EQ(c.block_m, bm);
                EXPECT_EQ(c.block_n, bn);
                EXPECT_EQ(c.num_stages, sm90_bf16_max_stages(bm, bn, b_mn, epi, kH200SmemOptin));
                EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Bf16MinStages);
                EXPECT_EQ(c.group_n, Sm90GemmConfig{}.group_n);
            }
        }
    }
    // 128x256 with the TMA-store epilogue's 64 KB staging leaves room for 3 stages; without staging (direct
    // epilogues), 4.
    EXPECT_EQ(apply_sm90_bf16_config_override(make(128, 256, 0, 0), false, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin)
                  .num_stages,
              3);
    EXPECT_EQ(apply_sm90_bf16_config_override(make(128, 256, 0, 0), false, Sm90GemmEpilogue::kBf16Direct,
                                              kH200SmemOptin)
                  .num_stages,
              4);
    EXPECT_EQ(apply_sm90_bf16_config_override(make(128, 256, 0, 0), false, Sm90GemmEpilogue::kAccumDirect,
                                              kH200SmemOptin)
                  .num_stages,
              4);
}

TEST(Bf16ConfigOverride, ExplicitStagesMustFit) {
    // Fits: kept as given.
    EXPECT_EQ(apply_sm90_bf16_config_override(make(64, 96, 5, 0), false, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin)
                  .num_stages,
              5);
    // 128x256 x 4 stages = 64 KB staging + 4 x 48 KB > 227 KB with the bf16 epilogue, fine without staging.
    EXPECT_EQ(apply_sm90_bf16_config_override(make(128, 256, 4, 0), false, Sm90GemmEpilogue::kAccumDirect,
                                              kH200SmemOptin)
                  .num_stages,
              4);
    try {
        apply_sm90_bf16_config_override(make(128, 256, 4, 0), false, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("DG_BF16_GEMM_CONFIG (block_m=128, block_n=256, stages=4)"), std::string::npos) << what;
        EXPECT_NE(what.find("4 stages need 262208 bytes"), std::string::npos) << what;
        EXPECT_NE(what.find("TMA-store epilogue"), std::string::npos) << what;
        EXPECT_NE(what.find("allows 232448"), std::string::npos) << what;
        EXPECT_NE(what.find("use fewer stages"), std::string::npos) << what;
    }
    // MN-major B pads BLOCK_N = 208 to 256 columns: 128x208 with 4 stages fits K-major, not MN-major.
    EXPECT_NO_THROW(
        apply_sm90_bf16_config_override(make(128, 208, 4, 0), false, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin));
    try {
        apply_sm90_bf16_config_override(make(128, 208, 4, 0), true, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("MN-major B"), std::string::npos) << e.what();
    }
}

TEST(Bf16ConfigOverride, NothingFitsOnASmallDevice) {
    // stages 0 on a device with too little shared memory for even the minimum pipeline.
    try {
        apply_sm90_bf16_config_override(make(128, 256, 0, 0), false, Sm90GemmEpilogue::kBf16Tma, 100 * 1024);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("3 stages need"), std::string::npos) << what;
        EXPECT_NE(what.find("use a smaller tile"), std::string::npos) << what;
    }
}

TEST(Bf16ConfigOverride, SweepCandidatesAreValid) {
    for (const char* text : kSweepCandidates) {
        SCOPED_TRACE(text);
        ASSERT_TRUE(parse(text).active());
        const Sm90GemmConfig ov = forced_config(text);
        Sm90GemmConfig c;
        ASSERT_NO_THROW(c = apply_sm90_bf16_config_override(ov, false, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin));
        // A forced multicast is legal at M = 4096 (bf16_gemm_nt: K-major B), so the sweep times what it names.
        const int mc = deep_gemm::heuristics::choose_sm90_bf16_multicast(4096, c, 0, false, ov.multicast);
        EXPECT_EQ(mc, ov.multicast == 2 ? 2 : 1);
    }
}

TEST(Bf16ConfigOverride, ForcedMulticastFallsBackWhenNotLegal) {
    // "multicast 1" means "when legal": one M block (nothing to pair), or a B half that is not 1024-byte aligned
    // (MN-major B with an odd number of 64-column atoms) runs without multicast, as the heuristic would.
    const int request = forced_config("128,192,0,1").multicast;
    const Sm90GemmConfig c =
        apply_sm90_bf16_config_override(make(128, 192, 0, request), true, Sm90GemmEpilogue::kBf16Tma, kH200SmemOptin);
    using deep_gemm::heuristics::choose_sm90_bf16_multicast;
    EXPECT_EQ(choose_sm90_bf16_multicast(4096, c, 0, false, request), 2);
    EXPECT_EQ(choose_sm90_bf16_multicast(128, c, 0, false, request), 1);
    EXPECT_EQ(choose_sm90_bf16_multicast(4096, c, 0, true, request), 1);
}

}  // namespace
