// The kernels' parameter lists (deep_gemm/include/deep_gemm/impls/*_params.hpp) and the host side that uses them
// (csrc/jit_kernels/impls/kernel_source.hpp): the entry points' declarations are pinned token for token (they are
// the kernels' ABI: the cached cubins and the SASS depend on them), and the host's argument array is the struct's
// fields in the list's order.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "../../deep_gemm/include/deep_gemm/impls/layout_transpose_sf_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/sm90_tf32_hc_prenorm_gemm_params.hpp"
#include "../../deep_gemm/include/deep_gemm/impls/swiglu_fp8_quant_params.hpp"
#include "jit_kernels/impls/kernel_source.hpp"

namespace {

namespace dg = deep_gemm;

// The expanded list as one string (the preprocessor separates tokens by single spaces).
#define DG_TEST_STR(...) DG_TEST_STR_(__VA_ARGS__)
#define DG_TEST_STR_(...) #__VA_ARGS__

std::string squeeze(const std::string& s) {
    std::string out;
    for (char c : s)
        if (c != ' ') out += c;
    return out;
}

TEST(GemmKernelParams, EntryPointDeclarationsArePinned) {
    const std::string tmap = "const __grid_constant__ deep_gemm::TmaDescriptor ";
    const std::string fp8_1d2d = tmap + "tmap_a, " + tmap + "tmap_b, " + tmap + "tmap_sfa, " + tmap +
                                 "tmap_d, const float* sfb, void* d, unsigned int ldd, const void* c, unsigned int ldc, "
                                 "const int* grouped, unsigned int m, unsigned int n, unsigned int k, unsigned int num_groups";
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D2D_PARAMS))), squeeze(fp8_1d2d));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D2D_SPLIT_K_PARAMS))),
              squeeze(fp8_1d2d + ", float* split_ws, unsigned int* split_counters"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_BF16_GEMM_PARAMS))),
              squeeze(tmap + "tmap_a, " + tmap + "tmap_b, " + tmap +
                      "tmap_d, void* d, unsigned int ldd, const void* c, unsigned int ldc, const int* grouped, "
                      "unsigned int m, unsigned int n, unsigned int k, unsigned int num_groups"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D1D_PARAMS))),
              squeeze(tmap + "tmap_a, " + tmap + "tmap_b, " + tmap + "tmap_sfa, " + tmap +
                      "tmap_sfb, float* d, const float* c, unsigned int ldd, unsigned int ldc, unsigned int m, "
                      "unsigned int n, unsigned int k"));
    // (Host compilers read DG_GRID_CONSTANT(T) as T; NVCC and NVRTC as `const __grid_constant__ T`.)
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D1D_K_GROUPED_PARAMS))),
              squeeze(tmap + "tmap_sfa, " + tmap +
                      "tmap_sfb, deep_gemm::Sm90Fp8KGroupedMaps groups, float* d, const float* c, unsigned int m, "
                      "unsigned int n, unsigned int num_groups, unsigned int scale_k_block0"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_PAGED_MQA_LOGITS_PARAMS))),
              squeeze(tmap + "tmap_q, " + tmap + "tmap_kv, " + tmap + "tmap_sf, const deep_gemm::paged_mqa::Args args"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_TF32_HC_PRENORM_GEMM_PARAMS))),
              squeeze(tmap + "tmap_a, " + tmap +
                      "tmap_b, float* d, long long d_row_stride, long long d_split_stride, float* sqr_sum, "
                      "long long s_split_stride, int m, int n, unsigned num_k_blocks, unsigned num_splits, "
                      "unsigned reduce, float* workspace, unsigned* counters"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_LAYOUT_TRANSPOSE_SF_PARAMS))),
              squeeze("const float* __restrict__ in, float* __restrict__ out, int m, int k, int aligned_m, "
                      "long long in_stride_g, long long in_stride_m, long long in_stride_k"));
    // DG_DEVICE_TYPE pointers (the instance's logits / input type, __nv_bfloat16) read as void* here, on the host;
    // NVCC and NVRTC read the real types (MqaLogitsCompile builds them; scripts/sass_ab.py compares the SASS).
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SM90_FP8_MQA_LOGITS_PARAMS))),
              squeeze(tmap + "tmap_q, " + tmap +
                      "tmap_kv, const float* kv_scale, const float* weights, unsigned long long ld_w, "
                      "const int* ks, const int* ke, void* logits, unsigned long long ld_logits, unsigned seq_len, "
                      "unsigned seq_len_kv, unsigned num_cols"));
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_DECLS(DG_SWIGLU_FP8_QUANT_PARAMS))),
              squeeze("const void* __restrict__ x, long long x_stride, unsigned char* __restrict__ y, "
                      "long long y_stride, void* __restrict__ sf, long long sf_stride, void* __restrict__ y_bf16, "
                      "long long y_bf16_stride, const float* __restrict__ weights, const int* __restrict__ "
                      "avail_tokens, int num_tokens, int hidden, int num_groups, float clamp"));
    // The implementation receives them in the same order.
    EXPECT_EQ(squeeze(DG_TEST_STR(DG_PARAM_NAMES(DG_SM90_FP8_GEMM_1D1D_PARAMS))),
              "tmap_a,tmap_b,tmap_sfa,tmap_sfb,d,c,ldd,ldc,m,n,k");
}

// visit_members gives every member once, in declaration (= list) order; visit_fields the same count.
template <typename Params>
void expect_fields_in_order(int expected_count) {
    Params params{};
    EXPECT_EQ(Params::kNumParams, expected_count);
    int count = 0;
    const char* last = nullptr;
    params.visit_members([&](auto& field) {
        const char* here = static_cast<const char*>(static_cast<const void*>(&field));
        EXPECT_TRUE(last == nullptr || here > last) << "field " << count << " out of order";
        EXPECT_TRUE(here >= reinterpret_cast<const char*>(&params) &&
                    here + sizeof(field) <= reinterpret_cast<const char*>(&params) + sizeof(params));
        last = here;
        ++count;
    });
    EXPECT_EQ(count, expected_count);
    // The launch arguments: every tensor map pointed at one descriptor, every argument visited once.
    dg::TmaDescriptor map{};
    int tmaps = 0;
    params.visit_members([&](auto& member) {
        if constexpr (std::is_same_v<std::decay_t<decltype(member)>, const dg::TmaDescriptor*>) member = &map, ++tmaps;
    });
    int args = 0, maps = 0;
    params.visit_fields([&](auto& field) {
        ++args;
        if (static_cast<const void*>(&field) == static_cast<const void*>(&map)) ++maps;
    });
    EXPECT_EQ(args, expected_count);
    EXPECT_EQ(maps, tmaps) << "a tensor map's argument must be the descriptor it points to";
}

TEST(GemmKernelParams, HostArgumentsAreTheFieldsInOrder) {
    expect_fields_in_order<dg::Sm90Fp8Gemm1d2dParams>(14);
    expect_fields_in_order<dg::Sm90Fp8Gemm1d2dSplitKParams>(16);
    expect_fields_in_order<dg::Sm90Fp8Gemm1d2dSignalParams>(15);
    static_assert(std::is_same_v<decltype(dg::Sm90Fp8Gemm1d2dSignalParams::tile_signal), int*>);
    expect_fields_in_order<dg::Sm90Bf16GemmParams>(12);
    expect_fields_in_order<dg::Sm90Fp8Gemm1d1dParams>(11);
    expect_fields_in_order<dg::Sm90Fp8Gemm1d1dKGroupedParams>(9);
    expect_fields_in_order<dg::Sm90Fp8PagedMqaLogitsParams>(4);
    expect_fields_in_order<dg::Sm90Tf32HcPrenormGemmParams>(14);
    expect_fields_in_order<dg::LayoutTransposeSfParams>(8);
    expect_fields_in_order<dg::Sm90Fp8MqaLogitsParams>(12);
    expect_fields_in_order<dg::SwigluFp8QuantParams>(14);
    static_assert(std::is_same_v<decltype(dg::Sm90Fp8MqaLogitsParams::logits), void*>);
    static_assert(std::is_same_v<decltype(dg::SwigluFp8QuantParams::y_bf16), void* __restrict__>);
    // The paged kernel's Args is one struct on both sides (the host no longer mirrors it).
    static_assert(sizeof(dg::paged_mqa::Args) == 88);
    static_assert(sizeof(*dg::Sm90Fp8Gemm1d2dParams{}.tmap_a) == sizeof(CUtensorMap));
}

TEST(GemmKernelParams, RenderedEntryPointUsesTheList) {
    const deep_gemm::kernels::KernelEntry entry{"#include <x.cuh>\n", "sym", 256, "    body(DG_PARAM_NAMES(L));\n",
                                                "static_assert(true);\n"};
    EXPECT_EQ(deep_gemm::kernels::render_kernel_source<dg::Sm90Bf16GemmParams>(entry),
              "#include <x.cuh>\n\nextern \"C\" __global__ void __launch_bounds__(256, 1)\n"
              "sym(DG_PARAM_DECLS(DG_SM90_BF16_GEMM_PARAMS)) {\n    body(DG_PARAM_NAMES(L));\n}\nstatic_assert(true);\n");
    deep_gemm::kernels::KernelEntry two_per_sm = entry;
    two_per_sm.min_blocks = 2;
    EXPECT_NE(deep_gemm::kernels::render_kernel_source<dg::Sm90Bf16GemmParams>(two_per_sm).find("__launch_bounds__(256, 2)"),
              std::string::npos);
    two_per_sm.min_blocks = 0;
    EXPECT_NE(deep_gemm::kernels::render_kernel_source<dg::Sm90Bf16GemmParams>(two_per_sm).find("__launch_bounds__(256)\n"),
              std::string::npos);
    EXPECT_EQ(deep_gemm::kernels::param_names<dg::Sm90Fp8Gemm1d2dSplitKParams>(),
              "DG_PARAM_NAMES(DG_SM90_FP8_GEMM_1D2D_SPLIT_K_PARAMS)");
}

}  // namespace
