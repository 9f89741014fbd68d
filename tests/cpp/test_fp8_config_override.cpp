// DG_FP8_GEMM_CONFIG (forced FP8 GEMM config for tuning): accepted values, and every malformed form raising an
// error that names the variable, the value and what is wrong. No GPU needed.
#include <gtest/gtest.h>

#include <string>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

namespace {

using deep_gemm::kernels::check_fp8_gemm_config;

// The error message for `text`, or "" (with a test failure) when it was accepted.
std::string config_error(const std::string& text) {
    try {
        check_fp8_gemm_config(text);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "accepted DG_FP8_GEMM_CONFIG='" << text << "'";
    return "";
}

}  // namespace

TEST(Fp8ConfigOverride, AcceptsGoodValues) {
    for (const char* text : {"", "legacy", "128,128,0", "64,64,4", "128,192,10", "128,128,3,1", "128,128,5,1,1",
                             "128,160,0,0,2", "64,16,0,0,0"}) {
        EXPECT_NO_THROW(check_fp8_gemm_config(text)) << "'" << text << "'";
    }
}

TEST(Fp8ConfigOverride, RejectsMalformedValues) {
    const struct {
        const char* text;
        const char* reason;
    } cases[] = {
        {"abc", "non-negative integers"},
        {"128", "block_m,block_n,stages"},
        {"128,128", "block_m,block_n,stages"},
        {"128,128,0,0,0,0", "at most 5 fields"},
        {"128;128;0", "separated by ','"},
        {"128,128,0,", "non-negative integers"},
        {"128,128,0 ", "separated by ','"},
        {"-1,128,0", "non-negative integers"},
        {"Legacy", "non-negative integers"},
        {"96,128,0", "block_m must be 64 or 128"},
        {"128,8,0", "block_n must be a multiple of 16 in [16, 192]"},
        {"128,130,0", "block_n must be a multiple of 16"},
        {"128,256,0", "block_n must be a multiple of 16"},
        {"128,128,2", "stages must be 0 (auto) or in [3, 10]"},
        {"128,128,11", "stages must be 0 (auto) or in [3, 10]"},
        {"128,128,0,2", "pipelined must be 0 (off) or 1"},
        {"128,128,0,0,3", "multicast must be 0 (off), 1 (share B) or 2 (share A)"},
        {"128,144,0,1", "pipelined 1 needs block_n <= 128"},
        {"128,128,999999", "non-negative integers"},
    };
    for (const auto& c : cases) {
        const std::string what = config_error(c.text);
        EXPECT_NE(what.find(std::string("DG_FP8_GEMM_CONFIG='") + c.text + "'"), std::string::npos) << what;
        EXPECT_NE(what.find(c.reason), std::string::npos) << "'" << c.text << "': " << what;
    }
}
