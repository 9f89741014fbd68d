// GPU smoke test of the whole JIT path (needs a GPU; not run by ctest):
// compile (or find in the cache) a trivial kernel, load it on device 0, launch it, check the result,
// and print how long the first call took and whether it compiled. Run it twice with the same
// DG_JIT_CACHE_DIR: the second run must report "loaded from cache".
//
//   DG_JIT_CACHE_DIR=/tmp/dg_smoke ./build/dg_gpu_smoke      (Driver API build)
//   DG_JIT_CACHE_DIR=/tmp/dg_smoke ./build/dg_gpu_smoke_runtime  (Runtime API build)
//
// Memory is handled through the driver entry points the core dlopen'ed (Driver API build) or through
// cudart (Runtime API build, which links it anyway). Exit status 0 on success.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#ifdef DG_JIT_USE_RUNTIME_API
#include <cuda_runtime.h>
#endif

#include "jit/driver_api.hpp"
#include "jit/jit.hpp"

using namespace deep_gemm::jit;

namespace {

constexpr int kCount = 1 << 20;

KernelSource smoke_source() {
    return {"dg_gpu_smoke", "dg_gpu_smoke",
            "#include <dg_test/common.cuh>\n"
            "extern \"C\" __global__ void dg_gpu_smoke(float* x, float add, int n) {\n"
            "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) x[i] = x[i] * 2.0f + add + static_cast<float>(dg_test::lane_id() - (i & 31));\n"
            "}\n"};
}

#ifdef DG_JIT_USE_RUNTIME_API
const char* kApi = "Runtime API";
void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
struct Buffer {
    void* ptr = nullptr;
    explicit Buffer(std::size_t bytes) { check(cudaMalloc(&ptr, bytes), "cudaMalloc"); }
    ~Buffer() { cudaFree(ptr); }
    void upload(const void* src, std::size_t bytes) { check(cudaMemcpy(ptr, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy"); }
    void download(void* dst, std::size_t bytes) { check(cudaMemcpy(dst, ptr, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy"); }
};
void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
#else
const char* kApi = "Driver API";
struct Buffer {
    CUdeviceptr ptr = 0;
    explicit Buffer(std::size_t bytes) {
        detail::ContextGuard ctx(0);  // makes device 0's primary context current on this thread
        check_driver(detail::driver_entry_points().cuMemAlloc(&ptr, bytes), "cuMemAlloc");
    }
    ~Buffer() { detail::driver_entry_points().cuMemFree(ptr); }
    void upload(const void* src, std::size_t bytes) {
        check_driver(detail::driver_entry_points().cuMemcpyHtoD(ptr, src, bytes), "cuMemcpyHtoD");
    }
    void download(void* dst, std::size_t bytes) {
        check_driver(detail::driver_entry_points().cuMemcpyDtoH(dst, ptr, bytes), "cuMemcpyDtoH");
    }
};
void synchronize() { check_driver(detail::driver_entry_points().cuCtxSynchronize(), "cuCtxSynchronize"); }
#endif

}  // namespace

int main() {
    try {
        set_include_dir(std::filesystem::path(DG_TEST_DATA_DIR) / "include");
        const DeviceInfo& info = device_info(0);
        std::printf("device 0: sm_%d%d (%s), %d SMs, %d bytes opt-in smem; %s build\n", info.cc_major, info.cc_minor,
                    info.arch.c_str(), info.sm_count, info.max_smem_per_block_optin, kApi);

        std::vector<float> host(kCount);
        for (int i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
        Buffer buffer(kCount * sizeof(float));
        buffer.upload(host.data(), kCount * sizeof(float));

        // The first call: build (compile or cache) + load + launch + sync.
        const auto t0 = std::chrono::steady_clock::now();
        const KernelSource src = smoke_source();
        const CachedKernel entry = build(src, info.arch);
        const auto t1 = std::chrono::steady_clock::now();
        const LoadedKernel& kernel = load(entry, src.symbol, 0);
        const auto t2 = std::chrono::steady_clock::now();
        auto* x = reinterpret_cast<float*>(buffer.ptr);
        float add = 3.0f;
        int n = kCount;
        void* args[] = {&x, &add, &n};
        LaunchConfig config;
        config.grid[0] = (kCount + 255) / 256;
        config.block[0] = 256;
        kernel.launch(config, args);
        synchronize();
        const auto t3 = std::chrono::steady_clock::now();
        auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        std::printf("first call: %.1f ms (build %.1f ms: %s; load %.1f ms; launch+sync %.1f ms)\n", ms(t0, t3),
                    ms(t0, t1), entry.compiled ? "compiled" : "loaded from cache", ms(t1, t2), ms(t2, t3));
        std::printf("entry: %s\n", entry.dir.c_str());

        // The hot path: the same kernel again through get_kernel (memoized, no disk access).
        const auto t4 = std::chrono::steady_clock::now();
        const LoadedKernel& again = get_kernel(src, 0);
        const auto t5 = std::chrono::steady_clock::now();
        std::printf("second lookup: %.3f ms, same handle: %s\n", ms(t4, t5), &again == &kernel ? "yes" : "no");

        std::vector<float> result(kCount);
        buffer.download(result.data(), kCount * sizeof(float));
        int bad = 0;
        for (int i = 0; i < kCount; ++i) {
            const float expected = host[i] * 2.0f + 3.0f;
            if (std::fabs(result[i] - expected) > 1e-5f && bad++ < 5) {
                std::printf("mismatch at %d: %f != %f\n", i, result[i], expected);
            }
        }
        std::printf("%s: %d of %d elements wrong\n", bad == 0 ? "PASS" : "FAIL", bad, kCount);
        return bad == 0 && &again == &kernel ? 0 : 1;
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
}
