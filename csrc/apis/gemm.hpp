// The GEMM ops of the public API (documented in deep_gemm/__init__.py), described by one table (GemmOpSpec) and served
// by one validation routine and one runner, so the rules (dtypes, shapes, K-major, TMA alignment,
// devices, overlap, empty problems) are written once for every op.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>

#include "common.hpp"
#include "gemm_ops.hpp"
#include "layout.hpp"

namespace deep_gemm::api {

const GemmOpSpec& gemm_op_spec(GemmOp op);

// The arguments of any GEMM op, referring to the caller's tensors (unused ones stay null).
struct GemmCall {
    const at::Tensor* a = nullptr;
    const at::Tensor* sfa = nullptr;  // FP8 only
    const at::Tensor* b = nullptr;
    const at::Tensor* sfb = nullptr;  // FP8 only
    const at::Tensor* d = nullptr;
    const at::Tensor* c = nullptr;       // optional accumulator
    const at::Tensor* layout = nullptr;  // grouped_layout (M-contiguous), masked_m (masked), ks_tensor (K-grouped)
    std::optional<Recipe> recipe;        // FP8: nullopt -> the default for the op
    std::string_view compiled_dims;
    bool disable_ue8m0_cast = false;
    bool use_psum_layout = false;
    // K-grouped FP8: each group's scale blocks are ceil(align(K_g, get_mk_alignment_for_contiguous_layout()) / 128)
    // (sgl-deep-gemm 0.2.5's padded layout) instead of ceil(K_g / 128) (the compact layout).
    bool use_padded_sf_layout = false;
    // M-contiguous: padding rows (outside every group) of d are written as zeros when true (DeepGEMM's
    // default); when false (DeepGEMM's SM90 behaviour) those in an alignment block that starts in a group are
    // computed with that group's B and stored, blocks that start in padding are not written.
    bool ensure_zero_padding = true;
    std::optional<int64_t> expected_m_for_psum_layout;  // M-contiguous psum layout: a config hint only
    int64_t expected_m = 0;              // masked
    c10::ArrayRef<int64_t> ks;           // K-grouped: the K of each group (host copy of ks_tensor)
    c10::ArrayRef<int64_t> head_splits;  // fp8_gemm_nt_skip_head_mid: (left, mid, right)
    // m_grouped_fp8_gemm_nt_masked (SGLang's overlapped combine): the config picks BLOCK_N <= max_block_n; with
    // enable_overlap the kernel counts each stored tile in signal[g * ceil(max_m / BLOCK_M) + M block] (int32, at
    // least G * ceil(max_m / 64) elements) and run_gemm writes the tile to *overlap_out (docs/compat_2_8.md).
    int64_t max_block_n = 256;
    bool enable_overlap = false;
    const at::Tensor* signal = nullptr;
    struct OverlapTile {
        int64_t block_m = 0, threshold = 0;  // a consumer waits until signal[...] == threshold = ceil(N / BLOCK_N)
    };
    OverlapTile* overlap_out = nullptr;
    // The dtype a and b must have instead of the family's (cuBLASLt's unscaled float8_e4m3fn operands under
    // the BF16 rules; csrc/apis/cublaslt.cpp).
    std::optional<at::ScalarType> ab_dtype;
};

// Validates every argument, then runs the op on CUDA tensors (CPU tensors: RuntimeError naming the
// op and "requires CUDA tensors", after the same validation). Empty problems return without compiling.
void run_gemm(GemmOp op, const GemmCall& call);

// Validation only, for meta and fake tensors (no data pointers; symbolic sizes skip the checks that
// need them). The fake/meta implementation of every GEMM op.
void check_gemm_fake(GemmOp op, const GemmCall& call);

// Validation only on real tensors, no device work: the host-overhead microbenchmark's stand-in for a
// call (CPU tensors allowed). Returns nothing; raises like run_gemm would before any device work.
void check_gemm_real_for_benchmark(GemmOp op, const GemmCall& call);

}  // namespace deep_gemm::api
