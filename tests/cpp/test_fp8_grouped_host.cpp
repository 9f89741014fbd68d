// Host-side argument checks of the M-grouped FP8 1D2D GEMM through the host pipeline (kernels::run_gemm):
// violated preconditions raise jit::Error naming the op before any device work (so these run without a GPU).
#include <gtest/gtest.h>

#include <string>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"

namespace {

using deep_gemm::kernels::GemmDesc;
using deep_gemm::kernels::GemmGroupedMode;

// Fake, suitably aligned addresses: the checks under test fail before anything is dereferenced.
const void* fake(uintptr_t x) { return reinterpret_cast<const void*>(x); }

// A valid masked call: G = 4, max_m = 100, N = 256, K = 512.
GemmDesc masked_call() {
    GemmDesc desc;
    desc.problem.kernel = deep_gemm::kernels::GemmKernel::kFp8_1d2d;
    desc.problem.m = 100, desc.problem.n = 256, desc.problem.k = 512;
    desc.problem.mode = GemmGroupedMode::kMGroupedMasked;
    desc.problem.num_groups = 4;
    desc.problem.expected_m = 50;
    auto& o = desc.operands;
    o.a = fake(0x10000);
    o.b = fake(0x20000);
    o.sfa = static_cast<const float*>(fake(0x30000));
    o.sfb = static_cast<const float*>(fake(0x40000));
    o.d = const_cast<void*>(fake(0x50000));
    o.lda = 512, o.ldb = 512, o.ldd = 256, o.sfa_stride = 100;
    o.grouped = static_cast<const int*>(fake(0x60000));
    o.a_group_stride = 100 * 512;
    o.b_group_stride = 256 * 512;
    o.sfa_group_stride = 100 * 4;
    return desc;
}

std::string error_of(const GemmDesc& desc) {
    try {
        deep_gemm::kernels::run_gemm(desc);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    return "";
}

TEST(Fp8GroupedHost, RejectsBadGroupedArguments) {
    const GemmDesc good = masked_call();

    GemmDesc bad = good;
    bad.problem.num_groups = 0;
    EXPECT_NE(error_of(bad).find("m_grouped_fp8_gemm_nt_masked: num_groups must be positive"), std::string::npos);

    bad = good;
    bad.operands.grouped = nullptr;
    EXPECT_NE(error_of(bad).find("masked_m is null"), std::string::npos);

    bad = good;
    bad.operands.a_group_stride = 99 * 512;  // one row short of a group
    EXPECT_NE(error_of(bad).find("a_group_stride must cover one group"), std::string::npos);

    bad = good;
    bad.operands.b_group_stride = 256 * 512 - 16;
    EXPECT_NE(error_of(bad).find("b_group_stride must cover one group"), std::string::npos);

    bad = good;
    bad.operands.sfa_group_stride = 4 * 99;
    EXPECT_NE(error_of(bad).find("sfa_group_stride must cover one group"), std::string::npos);

    bad = good;
    bad.problem.mode = GemmGroupedMode::kMGroupedContiguous;
    bad.problem.alignment = 64;
    EXPECT_NE(error_of(bad).find("m_grouped_fp8_gemm_nt_contiguous: the group alignment must be a multiple of 128"),
              std::string::npos);

    bad = good;
    bad.problem.mode = GemmGroupedMode::kKGroupedContiguous;
    EXPECT_NE(error_of(bad).find("m_grouped_fp8_gemm: grouped mode must be contiguous"), std::string::npos);
}

}  // namespace
