// The few cuBLASLt entry points the cublaslt_gemm_* ops use, resolved at first use from the libcublasLt
// that PyTorch already loaded (no link-time or build-time dependency on cuBLAS).
//
// The types and enum values below are restated from the cuBLASLt API reference (they are part of its
// stable C ABI: the same values in CUDA 11, 12 and 13) so the build needs no cublasLt.h; when the
// toolkit's header is present, cublaslt_lib.cpp checks every value against it at compile time.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace deep_gemm::api::cublaslt {

// cublasStatus_t: 0 is CUBLAS_STATUS_SUCCESS.
using Status = int;
inline constexpr Status kSuccess = 0;

// Opaque handles (pointers to library-owned structs).
using Handle = struct LtContext*;
using MatmulDesc = struct LtMatmulDesc*;
using MatrixLayout = struct LtMatrixLayout*;
using Preference = struct LtPreference*;

// cublasLtMatmulAlgo_t: a semi-opaque value that the heuristic fills in and cublasLtMatmul reads.
struct Algo {
    uint64_t data[8];
};

// cublasLtMatmulHeuristicResult_t
struct HeuristicResult {
    Algo algo;
    size_t workspace_size;
    Status state;
    float waves_count;
    int reserved[4];
};

// cudaDataType_t
inline constexpr int kDataF32 = 0;      // CUDA_R_32F
inline constexpr int kDataBf16 = 14;    // CUDA_R_16BF
inline constexpr int kDataF8E4M3 = 28;  // CUDA_R_8F_E4M3
// cublasComputeType_t
inline constexpr int kCompute32F = 68;  // CUBLAS_COMPUTE_32F
// cublasOperation_t
inline constexpr int32_t kOpN = 0;  // CUBLAS_OP_N
inline constexpr int32_t kOpT = 1;  // CUBLAS_OP_T
// cublasLtMatmulDescAttributes_t
inline constexpr int kDescTransA = 3;  // CUBLASLT_MATMUL_DESC_TRANSA (int32_t)
inline constexpr int kDescTransB = 4;  // CUBLASLT_MATMUL_DESC_TRANSB (int32_t)
// cublasLtMatrixLayoutAttribute_t
inline constexpr int kLayoutBatchCount = 5;          // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT (int32_t)
inline constexpr int kLayoutStridedBatchOffset = 6;  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET (int64_t, elements)
// cublasLtMatmulPreferenceAttributes_t
inline constexpr int kPrefMaxWorkspaceBytes = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64_t)
inline constexpr int kPrefMinAlignmentA = 5;      // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES (uint32_t)
inline constexpr int kPrefMinAlignmentB = 6;
inline constexpr int kPrefMinAlignmentC = 7;
inline constexpr int kPrefMinAlignmentD = 8;

// The resolved functions (signatures as in the cuBLASLt API reference; enums passed as int).
struct Api {
    Status (*create)(Handle*);
    Status (*destroy)(Handle);
    Status (*matmul_desc_create)(MatmulDesc*, int compute_type, int scale_type);
    Status (*matmul_desc_set_attribute)(MatmulDesc, int attr, const void* buf, size_t size);
    Status (*matmul_desc_destroy)(MatmulDesc);
    Status (*matrix_layout_create)(MatrixLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
    Status (*matrix_layout_set_attribute)(MatrixLayout, int attr, const void* buf, size_t size);
    Status (*matrix_layout_destroy)(MatrixLayout);
    Status (*preference_create)(Preference*);
    Status (*preference_set_attribute)(Preference, int attr, const void* buf, size_t size);
    Status (*preference_destroy)(Preference);
    Status (*algo_get_heuristic)(Handle, MatmulDesc, MatrixLayout a, MatrixLayout b, MatrixLayout c, MatrixLayout d, Preference,
                                 int requested, HeuristicResult* results, int* returned);
    Status (*matmul)(Handle, MatmulDesc, const void* alpha, const void* a, MatrixLayout, const void* b, MatrixLayout, const void* beta,
                     const void* c, MatrixLayout, void* d, MatrixLayout, const Algo*, void* workspace, size_t workspace_size,
                     CUstream stream);
    const char* (*get_status_string)(Status);  // may be null (older libraries)
    size_t (*get_version)();

    std::string path;  // the file that was loaded
    size_t version = 0;
};

// Loads the library and its functions once (thread safe); RuntimeError (c10::Error) naming every place
// that was tried when no usable libcublasLt is found.
const Api& api();

// "CUBLAS_STATUS_NOT_SUPPORTED (15)" and the like.
std::string status_string(Status status);

}  // namespace deep_gemm::api::cublaslt
