// cublaslt_gemm_{nt,nn,tn,tt}: d = c + a @ b in BF16 through cuBLASLt (the library PyTorch already
// loads; see cublaslt_lib.hpp). The arguments follow the bf16_gemm_* ops: same layout letters, same
// validation rules (TypeError for dtypes, ValueError for shapes/strides/alignment/overlap, RuntimeError
// for devices), d bfloat16 or float32, c optional and allowed to be d itself. a and b may instead both be
// float8_e4m3fn (an unscaled FP8 product, FP32 accumulation): then both must be K-major and K a multiple of 16,
// cuBLASLt's FP8 requirements.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <optional>
#include <string>

namespace deep_gemm::api {

// The layout letters: first for a ("n": [M, K], "t": [K, M]), second for b ("t": [N, K], "n": [K, N]).
enum class CublasLtLayout { kNt, kNn, kTn, kTt };

// "cublaslt_gemm_nt" etc.
const char* cublaslt_op_name(CublasLtLayout layout);

// Validates, then (unless `fake`) runs on the current CUDA stream of d's device: d = c + alpha * (a @ b),
// alpha applied by cuBLASLt's epilogue. `fake`: meta/fake tensors, validation only (symbolic sizes allowed).
void cublaslt_gemm(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                   const std::optional<at::Tensor>& c, bool fake, float alpha = 1.0f);

// d[i] = a[i] @ b[i] for every i of the leading (batch) dimension of the 3-D a, b and d, in one strided-batched
// cuBLASLt call (einsum's head forms). Each matrix follows cublaslt_gemm's BF16 rules with no c (they are checked
// on the first: all share its sizes and strides), d's matrices must not overlap; a batch stride may be any
// integer, 0 included (every i reads one matrix).
void cublaslt_gemm_batched(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d);

// The bf16_gemm_* op of the same layout letters called with an alpha (deep_gemm/_compat28.py): validated
// as that op (its rules and its name in errors, so it accepts exactly what the plain call accepts), then run
// through cuBLASLt as cublaslt_gemm does, alpha applied in cuBLASLt's epilogue.
void bf16_gemm_cublaslt(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                        const std::optional<at::Tensor>& c, bool fake, float alpha);

// The op _cublaslt_gemm_scaled: bf16_gemm_cublaslt for the bf16_gemm_* ops called with alpha != 1
// (deep_gemm/_compat28.py); `layout` is a CublasLtLayout (0 nt, 1 nn, 2 tn, 3 tt), else ValueError.
void cublaslt_gemm_scaled(int64_t layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                          const std::optional<at::Tensor>& c, double alpha, bool fake);

// Releases every cuBLASLt handle, workspace and cached plan (after waiting for each device that has a
// handle). A later call creates them again. Safe to call at any time and more than once.
void cublaslt_shutdown();

// Loads cuBLASLt (no GPU needed) and says which file and version; RuntimeError when it cannot be found.
struct CublasLtInfo {
    std::string path;
    size_t version = 0;
};
CublasLtInfo cublaslt_library_info();

}  // namespace deep_gemm::api
