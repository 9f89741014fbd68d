// DG_FP8_GEMM_CONFIG (forced FP8 GEMM config for tuning) and DG_FP8_1D1D_GEMM_CONFIG, through their knob tables:
// accepted values, including 256-row tiles and the "rules" / "legacy" choosers, and every malformed form (each
// error names the variable and the value). No GPU needed.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d1d.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

namespace {

using deep_gemm::heuristics::Sm90GemmConfig;
using deep_gemm::kernels::knobs::Forced;

Forced parse(const std::string& text) {
    return deep_gemm::kernels::knobs::parse_forced(deep_gemm::kernels::fp8_1d2d_knobs(), text);
}

// The config a value forces over a default one.
Sm90GemmConfig forced_config(const std::string& text) {
    return deep_gemm::kernels::knobs::apply_forced(deep_gemm::kernels::fp8_1d2d_knobs(), parse(text), Sm90GemmConfig{});
}

Forced parse_1d1d(const std::string& text) {
    return deep_gemm::kernels::knobs::parse_forced(deep_gemm::kernels::fp8_1d1d_knobs(), text);
}

// The error message for `text`, or "" (with a test failure) when it was accepted.
std::string parse_error(const std::string& text) {
    try {
        parse(text);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "accepted DG_FP8_GEMM_CONFIG='" << text << "'";
    return "";
}

TEST(Fp8ConfigOverride, EmptyIsTheModel) {
    EXPECT_EQ(parse("").state, 0);
    EXPECT_FALSE(parse("").active());
}

// The table's words: "legacy" is state 2, "rules" state 3 (the 1D2D host maps them onto its choosers).
TEST(Fp8ConfigOverride, Choosers) {
    EXPECT_EQ(parse("legacy").state, 2);
    EXPECT_EQ(parse("rules").state, 3);
    EXPECT_FALSE(parse("rules").active());
}

TEST(Fp8ConfigOverride, AcceptsTiles) {
    const Sm90GemmConfig a = forced_config("256,128,3,0,2");
    EXPECT_TRUE(parse("256,128,3,0,2").active());
    EXPECT_EQ(a.block_m, 256);
    EXPECT_EQ(a.block_n, 128);
    EXPECT_EQ(a.num_stages, 3);
    EXPECT_EQ(a.pipelined, 0);
    EXPECT_EQ(a.multicast, 2);
    const Sm90GemmConfig b = forced_config("64,48,16");
    EXPECT_EQ(b.block_m, 64);
    EXPECT_EQ(b.block_n, 48);
    EXPECT_EQ(b.num_stages, 16);
    EXPECT_EQ(b.pipelined, 0);
    EXPECT_EQ(b.multicast, 0);
    EXPECT_EQ(forced_config("256,112,0").block_n, 112);
    EXPECT_EQ(forced_config("256,112,0").num_stages, 0);  // as many as fit, resolved by the host
    EXPECT_EQ(forced_config("192,128,0,0,2").block_m, 192);
    EXPECT_EQ(forced_config("192,80,0,1,1").pipelined, 1);
    EXPECT_EQ(forced_config("256,112,0").group_n, 8);  // group_n 0 (absent) keeps the default
    EXPECT_EQ(forced_config("256,128,0,0,0,16").group_n, 16);
    EXPECT_EQ(forced_config("256,128,0,0,0,16").split_k, 0);
    EXPECT_EQ(forced_config("128,64,0,0,0,8,4").split_k, 4);
    EXPECT_EQ(forced_config("64,32,0,1,0,0,16").split_k, 16);
}

// The field syntax of DG_BF16_GEMM_CONFIG (config_fields.hpp): blanks around the value and the fields are ignored.
TEST(Fp8ConfigOverride, IgnoresBlanksAsTheBf16VariableDoes) {
    const Forced plain = parse("128,112,0,0,1,8");
    for (const char* text : {" 128,112,0,0,1,8", "128 , 112 , 0 , 0 , 1 , 8 ", "\t128,\t112,0,0,1,8\t"})
        EXPECT_EQ(parse(text), plain) << "'" << text << "'";
    EXPECT_FALSE(parse("  \t ").active());
    EXPECT_EQ(parse(" rules ").state, 3);
    EXPECT_EQ(parse("legacy\t").state, 2);
}

TEST(Fp8ConfigOverride, RejectsMalformed) {
    const std::pair<const char*, const char*> cases[] = {
        {"128", "1 comma-separated field instead of 3 to 7"},
        {"128,128", "2 comma-separated fields instead of 3 to 7"},
        {"128,128,0,1,0,8,1,1", "8 comma-separated fields instead of 3 to 7"},
        {"128,128,0,1,0,8,17", "split_k 17 is not one of 0..16"},
        {"256,128,0,0,0,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"192,128,0,0,0,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"128,64,0,0,1,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"128,128,0,1,0,1025", "group_n 1025 is not one of 0..1024"},
        {"128;128;0", "separated by ','"},
        {"128 128 0", "separated by ','"},
        {"128,,0", "block_n '' is not a non-negative integer"},
        {"x,128,0", "block_m 'x' is not a non-negative integer"},
        {"96,128,0", "block_m 96 is not one of 64, 128, 192, 256"},
        {"192,144,0", "block_m 192 needs block_n <= 128"},
        {"192,96,0,1", "block_m 192 with pipelined 1 needs block_n <= 80"},
        {"128,100,0", "block_n 100 is not one of 16..192 (step 16)"},
        {"128,208,0", "block_n 208 is not one of"},
        {"128,128,2", "stages 2 is not one of 0, 3..16"},
        {"128,128,17", "stages 17 is not one of 0, 3..16"},
        {"128,128,0,2", "pipelined 2 is not one of 0, 1"},
        {"128,128,0,0,3", "multicast 3 is not one of 0, 1, 2"},
        {"128,192,0,1", "pipelined 1 needs block_n <= 128"},
        {"256,128,0,1", "block_m 256 needs pipelined 0"},
        {"256,192,0,0", "block_m 256 needs block_n <= 128"},
    };
    for (const auto& [text, what] : cases) {
        const std::string msg = parse_error(text);
        EXPECT_NE(msg.find(what), std::string::npos) << "'" << text << "': " << msg;
        EXPECT_NE(msg.find("DG_FP8_GEMM_CONFIG='" + std::string(text) + "'"), std::string::npos) << msg;
    }
}

// DG_FP8_1D1D_GEMM_CONFIG: "block_m,block_n[,stages[,group_n[,pipelined[,multicast[,prefetch_c]]]]]" for the
// FP32-output 1D1D kernel.
TEST(Fp8_1d1dConfigOverride, AcceptsTiles) {
    EXPECT_FALSE(parse_1d1d(" ").active());
    // text -> block_m, block_n, stages, group_n, pipelined, multicast, prefetch_c (absent fields 0)
    const std::pair<const char*, std::array<int, 7>> cases[] = {
        {" 128 , 176 ", {128, 176, 0, 0, 0, 0, 0}},   {"64,144,4,16", {64, 144, 4, 16, 0, 0, 0}},
        {"128,112,0,0,1", {128, 112, 0, 0, 1, 0, 0}}, {"128,160,0,0,0,1", {128, 160, 0, 0, 0, 1, 0}},
        {"128,128,0,0,0,0,1", {128, 128, 0, 0, 0, 0, 1}},
    };
    for (const auto& [text, want] : cases) {
        const Forced o = parse_1d1d(text);
        EXPECT_TRUE(o.active()) << text;
        std::array<int, 7> got;
        std::copy(o.values, o.values + 7, got.begin());
        EXPECT_EQ(got, want) << text;
    }
}

TEST(Fp8_1d1dConfigOverride, RejectsWithTheVariableNamed) {
    const std::pair<const char*, const char*> cases[] = {
        {"128", "1 comma-separated field instead of 2 to 7; expected \"block_m,block_n[,stages[,group_n[,pipelined[,multicast[,prefetch_c]]]]]\""},
        {"128,128,0,0,0,0,0,0", "8 comma-separated fields"},
        {"128,128,0,0,0,0,2", "prefetch_c 2 is not one of 0, 1"},
        {"128,128,0,0,0,2", "multicast 2 is not one of 0, 1"},
        {"128,128,0,0,2", "pipelined 2 is not one of 0, 1"},
        {"128,144,0,0,1", "pipelined 1 needs block_n <= 128"},
        {"128;128", "separated by ','"},
        {"128,x", "block_n 'x' is not a non-negative integer"},
        {"256,128", "block_m 256 is not one of 64, 128"},
        {"128,192", "block_n 192 is not one of 16..176 (step 16)"},
        {"128,120", "block_n 120 is not one of"},
        {"128,128,2", "stages 2 is not one of 0, 3..16"},
    };
    for (const auto& [text, what] : cases) {
        std::string msg;
        try {
            parse_1d1d(text);
            ADD_FAILURE() << "accepted '" << text << "'";
        } catch (const deep_gemm::jit::Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find(what), std::string::npos) << "'" << text << "': " << msg;
        EXPECT_NE(msg.find("DG_FP8_1D1D_GEMM_CONFIG='" + std::string(text) + "'"), std::string::npos) << msg;
    }
}

}  // namespace
