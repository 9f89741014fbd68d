// Host-side argument checks of the M-grouped FP8 entry (sm90_m_grouped_fp8_gemm_1d2d): violated
// preconditions raise jit::Error naming the op before any device work (so these run without a GPU).
#include <gtest/gtest.h>

#include <string>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

namespace {

using deep_gemm::kernels::Fp8Gemm1d2dArgs;
using deep_gemm::kernels::Fp8GroupedArgs;
using deep_gemm::kernels::GemmGroupedMode;

// Fake, suitably aligned addresses: the checks under test fail before anything is dereferenced.
const void* fake(uintptr_t x) { return reinterpret_cast<const void*>(x); }

// A valid masked call: G = 4, max_m = 100, N = 256, K = 512.
void masked_call(Fp8Gemm1d2dArgs& args, Fp8GroupedArgs& g) {
    args.a = fake(0x10000);
    args.b = fake(0x20000);
    args.sfa = static_cast<const float*>(fake(0x30000));
    args.sfb = static_cast<const float*>(fake(0x40000));
    args.d = const_cast<void*>(fake(0x50000));
    args.m = 100, args.n = 256, args.k = 512;
    args.lda = 512, args.ldb = 512, args.ldd = 256, args.sfa_stride = 100;
    g.mode = GemmGroupedMode::kMGroupedMasked;
    g.grouped = static_cast<const int*>(fake(0x60000));
    g.num_groups = 4;
    g.expected_m = 50;
    g.a_group_stride = 100 * 512;
    g.b_group_stride = 256 * 512;
    g.sfa_group_stride = 100 * 4;
}

std::string error_of(const Fp8Gemm1d2dArgs& args, const Fp8GroupedArgs& g) {
    try {
        deep_gemm::kernels::sm90_m_grouped_fp8_gemm_1d2d(args, g);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    return "";
}

TEST(Fp8GroupedHost, RejectsBadGroupedArguments) {
    Fp8Gemm1d2dArgs args;
    Fp8GroupedArgs g;
    masked_call(args, g);

    Fp8GroupedArgs bad = g;
    bad.num_groups = 0;
    EXPECT_NE(error_of(args, bad).find("m_grouped_fp8_gemm_nt_masked: num_groups must be positive"), std::string::npos);

    bad = g;
    bad.grouped = nullptr;
    EXPECT_NE(error_of(args, bad).find("masked_m is null"), std::string::npos);

    bad = g;
    bad.a_group_stride = 99 * 512;  // one row short of a group
    EXPECT_NE(error_of(args, bad).find("a_group_stride must cover one group"), std::string::npos);

    bad = g;
    bad.b_group_stride = 256 * 512 - 16;
    EXPECT_NE(error_of(args, bad).find("b_group_stride must cover one group"), std::string::npos);

    bad = g;
    bad.sfa_group_stride = 4 * 99;
    EXPECT_NE(error_of(args, bad).find("sfa_group_stride must cover one group"), std::string::npos);

    bad = g;
    bad.mode = GemmGroupedMode::kMGroupedContiguous;
    bad.alignment = 64;
    EXPECT_NE(error_of(args, bad).find("m_grouped_fp8_gemm_nt_contiguous: the group alignment must be a multiple of 128"),
              std::string::npos);

    bad = g;
    bad.mode = GemmGroupedMode::kKGroupedContiguous;
    EXPECT_NE(error_of(args, bad).find("grouped mode must be contiguous"), std::string::npos);
}

}  // namespace
