// Host-side argument checks of the grouped FP8 1D2D GEMM through the GEMM launch path (kernels::run_gemm):
// violated preconditions raise jit::Error naming the op before any device work (so these run without a GPU).
// Also: the head-batched calls of fp8_einsum / einsum (no int32 group array) pass the kernels' checks.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "jit/errors.hpp"
#include "jit_kernels/impls/sm90_bf16_gemm.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"

namespace {

using deep_gemm::kernels::GemmDesc;
using deep_gemm::kernels::GemmGroupedMode;

// Fake, suitably aligned addresses: the checks under test fail before anything is dereferenced.
const void* fake(uintptr_t x) { return reinterpret_cast<const void*>(x); }

// Distinct non-null addresses for A, B, their scales and D: the checks look at pointers, nothing reads them.
template <typename Operands>
void set_fake_pointers(Operands& o) {
    o.a = fake(0x10000);
    o.b = fake(0x20000);
    o.sfa = static_cast<const float*>(fake(0x30000));
    o.sfb = static_cast<const float*>(fake(0x40000));
    o.d = const_cast<void*>(fake(0x50000));
}

// A valid masked call: G = 4, max_m = 100, N = 256, K = 512.
GemmDesc masked_call() {
    GemmDesc desc;
    desc.problem.kernel = deep_gemm::kernels::GemmKernel::kFp8_1d2d;
    desc.problem.m = 100, desc.problem.n = 256, desc.problem.k = 512;
    desc.problem.mode = GemmGroupedMode::kMGroupedMasked;
    desc.problem.num_groups = 4;
    desc.problem.expected_m = 50;
    auto& o = desc.operands;
    set_fake_pointers(o);
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

// fp8_einsum('bhr,hdr->bhd') as csrc/apis/einsum.cpp (run_fp8_heads) describes it: B = 77, H = 8, D = 200,
// R = 512; x [B, H, R], y [H, D, R], sfa [H, R/128, align(B, 4)], z [B, H, D]; no group array.
GemmDesc fp8_heads_call() {
    GemmDesc desc;
    desc.problem.kernel = deep_gemm::kernels::GemmKernel::kFp8_1d2d;
    desc.problem.mode = GemmGroupedMode::kHeadBatched;
    desc.problem.m = 77, desc.problem.n = 200, desc.problem.k = 512, desc.problem.num_groups = 8;
    auto& o = desc.operands;
    set_fake_pointers(o);
    o.a_group_stride = 512, o.lda = 8 * 512;
    o.ldb = 512, o.b_group_stride = 200 * 512;
    o.sfa_stride = 80, o.sfa_group_stride = 4 * 80;
    o.d_group_stride = 200, o.ldd = 8 * 200;
    return desc;
}

std::string check_error(const GemmDesc& desc) {
    using deep_gemm::kernels::Bf16GemmTraits, deep_gemm::kernels::Fp8Gemm1d2dTraits;
    try {
        if (desc.problem.kernel == deep_gemm::kernels::GemmKernel::kBf16)
            Bf16GemmTraits::check(Bf16GemmTraits::op_name(desc.problem), desc);
        else
            Fp8Gemm1d2dTraits::check(Fp8Gemm1d2dTraits::op_name(desc.problem), desc);
    } catch (const deep_gemm::jit::Error& e) {
        return e.what();
    }
    return "";
}

// The head-batched scheduler reads no group array: the call has none and must pass the checks (the first
// H100 run failed every fp8_einsum call with "grouped_layout is null").
TEST(Fp8GroupedHost, HeadBatchedNeedsNoGroupArray) {
    const GemmDesc good = fp8_heads_call();
    // (Not through run_gemm: on a machine with a GPU it would launch on these fake addresses.)
    EXPECT_EQ(check_error(good), "");

    // The head-batched checks still hold.
    GemmDesc bad = good;
    bad.operands.lda = 7 * 512;  // rows overlap the next row's heads
    EXPECT_NE(check_error(bad).find("fp8_einsum('bhr,hdr->bhd'): a must be [M, G, K]"), std::string::npos);
    bad = good;
    bad.operands.d_group_stride = 208;
    EXPECT_NE(check_error(bad).find("d must be [M, G, N] with head stride N"), std::string::npos);

    // The BF16 einsum forms (batch-reduced, head-batched) take no group array either.
    GemmDesc bf16 = good;
    bf16.problem.kernel = deep_gemm::kernels::GemmKernel::kBf16;
    bf16.operands.sfa = nullptr, bf16.operands.sfb = nullptr;
    bf16.operands.b_group_stride = 200 * 512;
    EXPECT_EQ(check_error(bf16), "");
}

// The modes whose schedulers read the int32 array still demand it, named as the ops call it.
TEST(Fp8GroupedHost, GroupArrayNamedPerMode) {
    GemmDesc fp8 = masked_call();
    fp8.operands.grouped = nullptr;
    EXPECT_NE(check_error(fp8).find("m_grouped_fp8_gemm_nt_masked: masked_m is null"), std::string::npos);
    fp8.problem.mode = GemmGroupedMode::kMGroupedContiguous;
    EXPECT_NE(check_error(fp8).find("m_grouped_fp8_gemm_nt_contiguous: grouped_layout is null"), std::string::npos);
    fp8.problem.mode = GemmGroupedMode::kMGroupedContiguousPsum;
    EXPECT_NE(check_error(fp8).find("grouped_layout is null"), std::string::npos);

    GemmDesc bf16 = masked_call();
    bf16.problem.kernel = deep_gemm::kernels::GemmKernel::kBf16;
    bf16.operands.grouped = nullptr;
    for (auto [mode, name] : {std::pair{GemmGroupedMode::kMGroupedMasked, "masked_m is null"},
                              std::pair{GemmGroupedMode::kMGroupedContiguous, "grouped_layout is null"},
                              std::pair{GemmGroupedMode::kKGroupedContiguous, "ks is null"}}) {
        bf16.problem.mode = mode;
        EXPECT_NE(check_error(bf16).find(name), std::string::npos) << check_error(bf16);
    }
}

}  // namespace
