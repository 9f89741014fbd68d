#include "cublaslt_lib.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "../jit/log.hpp"
#include "common.hpp"

// Build-time check of the restated ABI against the toolkit's header, where there is one.
#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
namespace deep_gemm::api::cublaslt {
static_assert(kSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(kDataF32 == CUDA_R_32F and kDataBf16 == CUDA_R_16BF);
static_assert(kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(kOpN == CUBLAS_OP_N and kOpT == CUBLAS_OP_T);
static_assert(kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA and kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT and
              kLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(kPrefMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES and
              kPrefMinAlignmentB == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES and
              kPrefMinAlignmentC == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES and
              kPrefMinAlignmentD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
static_assert(sizeof(Algo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t) and
              offsetof(HeuristicResult, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) and
              offsetof(HeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(sizeof(cublasStatus_t) == sizeof(Status) and sizeof(cudaDataType_t) == sizeof(int) and
              sizeof(cublasComputeType_t) == sizeof(int));
}  // namespace deep_gemm::api::cublaslt
#endif

namespace deep_gemm::api::cublaslt {

namespace {

// The CUDA major version PyTorch was built with (0 when torch has no CUDA support).
int torch_cuda_major() {
    try {
        const long v = at::detail::getCUDAHooks().versionCUDART();  // e.g. 12080
        return v > 0 ? static_cast<int>(v / 1000) : 0;
    } catch (...) {
        return 0;
    }
}

// torch/lib, found through a c10_cuda symbol; the nvidia pip wheels live next to torch in site-packages.
std::filesystem::path torch_lib_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&c10::cuda::getCurrentCUDAStream), &info) == 0 or info.dli_fname == nullptr) return {};
    return std::filesystem::path(info.dli_fname).parent_path();
}

// Where libcublasLt may be, in order: already in the process (the one PyTorch loaded), the loader's
// search path, then the nvidia-cublas wheel directories next to torch (CUDA 13 wheels: nvidia/cu13/lib;
// CUDA 12: nvidia/cublas/lib).
void* open_library(std::string& path, std::vector<std::string>& tried) {
    std::vector<int> majors;
    if (const int m = torch_cuda_major(); m > 0) majors.push_back(m);
    for (int m : {13, 12, 11})
        if (majors.empty() or majors.front() != m) majors.push_back(m);

    for (int m : majors) {
        const std::string name = fmt::format("libcublasLt.so.{}", m);
        if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
            path = name;
            return h;
        }
    }
    tried.push_back("already loaded libcublasLt.so.{" + fmt::format("{}", fmt::join(majors, ",")) + "}");
    for (int m : majors) {
        const std::string name = fmt::format("libcublasLt.so.{}", m);
        if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            path = name;
            return h;
        }
        tried.push_back(name + ": " + (dlerror() ?: "not found"));
    }
    const std::filesystem::path lib = torch_lib_dir();
    if (not lib.empty()) {
        const std::filesystem::path site = lib.parent_path().parent_path() / "nvidia";
        for (int m : majors) {
            for (const auto& dir : {site / fmt::format("cu{}", m) / "lib", site / "cublas" / "lib"}) {
                const std::filesystem::path file = dir / fmt::format("libcublasLt.so.{}", m);
                std::error_code ec;
                if (not std::filesystem::exists(file, ec)) continue;
                if (void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
                    path = file.string();
                    return h;
                }
                tried.push_back(file.string() + ": " + (dlerror() ?: "dlopen failed"));
            }
        }
        tried.push_back(fmt::format("the nvidia-cublas wheel directories under {}", site.string()));
    }
    return nullptr;
}

template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn, bool required, const std::string& path) {
    fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (fn == nullptr and required)
        throw_runtime_error(fmt::format("cublaslt_gemm: {} has no symbol {}; the cuBLASLt library is too old or not cuBLASLt", path, name));
}

Api load() {
    Api a{};
    std::vector<std::string> tried;
    void* lib = open_library(a.path, tried);
    if (lib == nullptr)
        throw_runtime_error(fmt::format("cublaslt_gemm: cannot find cuBLASLt (libcublasLt.so), which a CUDA build of PyTorch loads; "
                                        "tried: {}. Install the CUDA build of torch (or the nvidia-cublas wheel)",
                                        fmt::join(tried, "; ")));
    resolve(lib, "cublasLtCreate", a.create, true, a.path);
    resolve(lib, "cublasLtDestroy", a.destroy, true, a.path);
    resolve(lib, "cublasLtMatmulDescCreate", a.matmul_desc_create, true, a.path);
    resolve(lib, "cublasLtMatmulDescSetAttribute", a.matmul_desc_set_attribute, true, a.path);
    resolve(lib, "cublasLtMatmulDescDestroy", a.matmul_desc_destroy, true, a.path);
    resolve(lib, "cublasLtMatrixLayoutCreate", a.matrix_layout_create, true, a.path);
    resolve(lib, "cublasLtMatrixLayoutSetAttribute", a.matrix_layout_set_attribute, true, a.path);
    resolve(lib, "cublasLtMatrixLayoutDestroy", a.matrix_layout_destroy, true, a.path);
    resolve(lib, "cublasLtMatmulPreferenceCreate", a.preference_create, true, a.path);
    resolve(lib, "cublasLtMatmulPreferenceSetAttribute", a.preference_set_attribute, true, a.path);
    resolve(lib, "cublasLtMatmulPreferenceDestroy", a.preference_destroy, true, a.path);
    resolve(lib, "cublasLtMatmulAlgoGetHeuristic", a.algo_get_heuristic, true, a.path);
    resolve(lib, "cublasLtMatmul", a.matmul, true, a.path);
    resolve(lib, "cublasLtGetVersion", a.get_version, true, a.path);
    resolve(lib, "cublasLtGetStatusString", a.get_status_string, false, a.path);
    a.version = a.get_version();
    if (Dl_info info{}; dladdr(reinterpret_cast<const void*>(a.create), &info) != 0 and info.dli_fname != nullptr)
        a.path = info.dli_fname;  // the file behind a soname that was already loaded
    jit::log(jit::LogLevel::kDebug, fmt::format("cublaslt_gemm: using cuBLASLt {} from {}", a.version, a.path));
    return a;  // the library stays loaded for the life of the process
}

}  // namespace

const Api& api() {
    // A failed load is retried at the next call (call_once does not latch an exception).
    static std::once_flag once;
    static Api loaded;
    std::call_once(once, [] { loaded = load(); });
    return loaded;
}

std::string status_string(Status status) {
    const Api& a = api();
    const char* name = a.get_status_string ? a.get_status_string(status) : nullptr;
    return fmt::format("{} ({})", name ? name : "CUBLAS_STATUS_?", status);
}

}  // namespace deep_gemm::api::cublaslt
