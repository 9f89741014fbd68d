// DG_FP8_GEMM_CONFIG (forced FP8 GEMM config for tuning) and DG_FP8_1D1D_GEMM_CONFIG: accepted values, including 256-row tiles and the
// "rules" / "legacy" choosers, and every malformed form (each error names the variable and the value).
// No GPU needed.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d1d.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

namespace {

using deep_gemm::heuristics::Sm90Fp8Chooser;
using deep_gemm::kernels::parse_sm90_fp8_config_override;
using deep_gemm::kernels::Sm90Fp8ConfigOverride;

// The error message for `text`, or "" (with a test failure) when it was accepted.
std::string parse_error(const std::string& text) {
    try {
        parse_sm90_fp8_config_override(text);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "accepted DG_FP8_GEMM_CONFIG='" << text << "'";
    return "";
}

TEST(Fp8ConfigOverride, EmptyIsTheModel) {
    const Sm90Fp8ConfigOverride ov = parse_sm90_fp8_config_override("");
    EXPECT_FALSE(ov.active());
    EXPECT_EQ(ov.chooser(), Sm90Fp8Chooser::kModel);
}

TEST(Fp8ConfigOverride, Choosers) {
    EXPECT_EQ(parse_sm90_fp8_config_override("rules").chooser(), Sm90Fp8Chooser::kRules);
    EXPECT_EQ(parse_sm90_fp8_config_override("legacy").chooser(), Sm90Fp8Chooser::kLegacy);
    EXPECT_FALSE(parse_sm90_fp8_config_override("rules").active());
}

TEST(Fp8ConfigOverride, AcceptsTiles) {
    const Sm90Fp8ConfigOverride a = parse_sm90_fp8_config_override("256,128,3,0,2");
    EXPECT_TRUE(a.active());
    EXPECT_EQ(a.block_m, 256);
    EXPECT_EQ(a.block_n, 128);
    EXPECT_EQ(a.num_stages, 3);
    EXPECT_EQ(a.pipelined, 0);
    EXPECT_EQ(a.multicast, 2);
    const Sm90Fp8ConfigOverride b = parse_sm90_fp8_config_override("64,48,16");
    EXPECT_EQ(b.block_m, 64);
    EXPECT_EQ(b.block_n, 48);
    EXPECT_EQ(b.num_stages, 16);
    EXPECT_EQ(b.pipelined, 0);
    EXPECT_EQ(b.multicast, 0);
    EXPECT_EQ(parse_sm90_fp8_config_override("256,112,0").block_n, 112);
    EXPECT_EQ(parse_sm90_fp8_config_override("192,128,0,0,2").block_m, 192);
    EXPECT_EQ(parse_sm90_fp8_config_override("192,80,0,1,1").pipelined, 1);
    EXPECT_EQ(parse_sm90_fp8_config_override("256,112,0").group_n, 0);
    EXPECT_EQ(parse_sm90_fp8_config_override("256,128,0,0,0,16").group_n, 16);
    EXPECT_EQ(parse_sm90_fp8_config_override("256,128,0,0,0,16").split_k, 0);
    EXPECT_EQ(parse_sm90_fp8_config_override("128,64,0,0,0,8,4").split_k, 4);
    EXPECT_EQ(parse_sm90_fp8_config_override("64,32,0,1,0,0,16").split_k, 16);
}

// The field syntax of DG_BF16_GEMM_CONFIG (config_fields.hpp): blanks around the value and the fields are ignored.
TEST(Fp8ConfigOverride, IgnoresBlanksAsTheBf16VariableDoes) {
    const Sm90Fp8ConfigOverride plain = parse_sm90_fp8_config_override("128,112,0,0,1,8");
    for (const char* text : {" 128,112,0,0,1,8", "128 , 112 , 0 , 0 , 1 , 8 ", "\t128,\t112,0,0,1,8\t"})
        EXPECT_EQ(parse_sm90_fp8_config_override(text), plain) << "'" << text << "'";
    EXPECT_FALSE(parse_sm90_fp8_config_override("  \t ").active());
    EXPECT_EQ(parse_sm90_fp8_config_override(" rules ").chooser(), Sm90Fp8Chooser::kRules);
    EXPECT_EQ(parse_sm90_fp8_config_override("legacy\t").chooser(), Sm90Fp8Chooser::kLegacy);
}

TEST(Fp8ConfigOverride, RejectsMalformed) {
    const std::pair<const char*, const char*> cases[] = {
        {"128", "expected"},
        {"128,128", "expected"},
        {"128,128,0,1,0,8,1,1", "at most 7 fields"},
        {"128,128,0,1,0,8,17", "split_k must be 0 or 1 (off) or in [2, 16]"},
        {"256,128,0,0,0,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"192,128,0,0,0,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"128,64,0,0,1,8,2", "split_k needs block_m 64 or 128 and multicast 0"},
        {"128,128,0,1,0,1025", "group_n must be 0 (default) or in [1, 1024]"},
        {"128;128;0", "separated by ','"},
        {"128 128 0", "separated by ','"},
        {"128,,0", "non-negative integers"},
        {"x,128,0", "non-negative integers"},
        {"96,128,0", "block_m must be 64, 128, 192 or 256"},
        {"192,144,0", "block_m 192 needs block_n <= 128"},
        {"192,96,0,1", "block_m 192 with pipelined 1 needs block_n <= 80"},
        {"128,100,0", "block_n must be a multiple of 16"},
        {"128,208,0", "block_n must be a multiple of 16"},
        {"128,128,2", "stages must be 0 (auto) or in [3, 16]"},
        {"128,128,17", "stages must be 0 (auto) or in [3, 16]"},
        {"128,128,0,2", "pipelined must be 0"},
        {"128,128,0,0,3", "multicast must be 0"},
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
    using deep_gemm::kernels::parse_sm90_fp8_1d1d_config_override;
    EXPECT_FALSE(parse_sm90_fp8_1d1d_config_override(" ").active());
    // text -> block_m, block_n, stages, group_n, pipelined, multicast, prefetch_c (absent fields 0)
    const std::pair<const char*, std::array<int, 7>> cases[] = {
        {" 128 , 176 ", {128, 176, 0, 0, 0, 0, 0}},   {"64,144,4,16", {64, 144, 4, 16, 0, 0, 0}},
        {"128,112,0,0,1", {128, 112, 0, 0, 1, 0, 0}}, {"128,160,0,0,0,1", {128, 160, 0, 0, 0, 1, 0}},
        {"128,128,0,0,0,0,1", {128, 128, 0, 0, 0, 0, 1}},
    };
    for (const auto& [text, want] : cases) {
        const auto o = parse_sm90_fp8_1d1d_config_override(text);
        EXPECT_TRUE(o.active()) << text;
        const std::array<int, 7> got = {o.block_m, o.block_n, o.num_stages, o.group_n, o.pipelined, o.multicast, o.prefetch_c};
        EXPECT_EQ(got, want) << text;
    }
}

TEST(Fp8_1d1dConfigOverride, RejectsWithTheVariableNamed) {
    using deep_gemm::kernels::parse_sm90_fp8_1d1d_config_override;
    const std::pair<const char*, const char*> cases[] = {
        {"128", "expected"},
        {"128,128,0,0,0,0,0,0", "expected"},
        {"128,128,0,0,0,0,2", "prefetch_c must be 0"},
        {"128,128,0,0,0,2", "multicast must be 0"},
        {"128,128,0,0,2", "pipelined must be 0"},
        {"128,144,0,0,1", "pipelined needs block_n <= 128"},
        {"128;128", "expected \"block_m,block_n"},
        {"128,x", "separated by ','"},
        {"256,128", "block_m must be 64 or 128"},
        {"128,192", "block_n must be a multiple of 16 in [16, 176]"},
        {"128,120", "block_n must be a multiple of 16"},
        {"128,128,2", "stages must be 0"},
    };
    for (const auto& [text, what] : cases) {
        std::string msg;
        try {
            parse_sm90_fp8_1d1d_config_override(text);
            ADD_FAILURE() << "accepted '" << text << "'";
        } catch (const deep_gemm::jit::Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find(what), std::string::npos) << "'" << text << "': " << msg;
        EXPECT_NE(msg.find("DG_FP8_1D1D_GEMM_CONFIG='" + std::string(text) + "'"), std::string::npos) << msg;
    }
}

}  // namespace
