// The CUDA driver entry points the core uses, resolved from a lazily dlopen'ed libcuda.so.1.
// Internal to the JIT core (and the GPU smoke test); the public subset is jit::driver().
#pragma once

#include <cuda.h>

namespace deep_gemm::jit::detail {

struct DriverEntryPoints {
#define DG_DRIVER_FN(name) decltype(&::name) name = nullptr;
    DG_DRIVER_FN(cuInit)
    DG_DRIVER_FN(cuDriverGetVersion)
    DG_DRIVER_FN(cuGetErrorName)
    DG_DRIVER_FN(cuGetErrorString)
    DG_DRIVER_FN(cuDeviceGet)
    DG_DRIVER_FN(cuDeviceGetCount)
    DG_DRIVER_FN(cuDeviceGetAttribute)
    DG_DRIVER_FN(cuDevicePrimaryCtxRetain)
    DG_DRIVER_FN(cuCtxGetCurrent)
    DG_DRIVER_FN(cuCtxSetCurrent)
    DG_DRIVER_FN(cuCtxGetDevice)
    DG_DRIVER_FN(cuCtxPushCurrent)
    DG_DRIVER_FN(cuCtxPopCurrent)
    DG_DRIVER_FN(cuCtxSynchronize)
    DG_DRIVER_FN(cuModuleLoadData)
    DG_DRIVER_FN(cuModuleGetFunction)
    DG_DRIVER_FN(cuLibraryLoadData)      // optional (driver >= 12.0)
    DG_DRIVER_FN(cuLibraryGetKernel)     // optional
    DG_DRIVER_FN(cuKernelGetFunction)    // optional
    DG_DRIVER_FN(cuFuncSetAttribute)
    DG_DRIVER_FN(cuLaunchKernelEx)
    DG_DRIVER_FN(cuLaunchKernel)
    DG_DRIVER_FN(cuTensorMapEncodeTiled)  // optional
    DG_DRIVER_FN(cuMemAlloc)
    DG_DRIVER_FN(cuMemFree)
    DG_DRIVER_FN(cuMemcpyHtoD)
    DG_DRIVER_FN(cuMemcpyDtoH)
    DG_DRIVER_FN(cuStreamSynchronize)
    DG_DRIVER_FN(cuMemsetD32Async)
    DG_DRIVER_FN(cuThreadExchangeStreamCaptureMode)
#undef DG_DRIVER_FN
    // The CUDA 12.0 ABI of cuStreamGetCaptureInfo (cuStreamGetCaptureInfo_v2); cuda.h of CUDA 13 declares a
    // newer signature under the same name.
    using StreamGetCaptureInfo = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                              const CUgraphNode**, size_t*);
    StreamGetCaptureInfo cuStreamGetCaptureInfo = nullptr;
};

// Opens libcuda.so.1 on first use (thread safe). Throws CudaError if there is no usable driver.
const DriverEntryPoints& driver_entry_points();

// cuInit(0) once; throws CudaError on failure.
void ensure_driver_initialized();

// Makes a context on `device` current for the lifetime of the guard: keeps the caller's current context
// when it is on `device`, else uses the device's primary context (retained once per process; set
// current when the thread has none, pushed and popped when the thread is on another device).
class ContextGuard {
public:
    explicit ContextGuard(int device);
    ~ContextGuard();
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;
    CUcontext context() const { return context_; }

private:
    CUcontext context_ = nullptr;
    bool pushed_ = false;
};

// The retained primary context of `device`.
CUcontext primary_context(int device);

}  // namespace deep_gemm::jit::detail
