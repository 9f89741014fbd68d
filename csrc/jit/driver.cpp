// libcuda opened lazily with dlopen: nothing here runs until a kernel is loaded or a driver call is
// needed, so importing deep_gemm works on machines without a driver.
#include <dlfcn.h>

#include <map>
#include <mutex>

#include "driver_api.hpp"
#include "errors.hpp"
#include "jit.hpp"

namespace deep_gemm::jit {
namespace detail {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
constexpr int kAbiVersion = 12000;

DriverEntryPoints* open_driver() {
    void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* err = ::dlerror();
        throw CudaError(std::string("cannot load the CUDA driver (libcuda.so.1): ") + (err ? err : "unknown error") +
                        "; running kernels needs an NVIDIA driver (compiling does not)");
    }
    auto get_proc = reinterpret_cast<GetProcAddress>(::dlsym(handle, "cuGetProcAddress_v2"));
    auto* api = new DriverEntryPoints();  // lives until process exit
    // `symbol` is the API name; `fallback` is the exported symbol with the ABI we declare, for drivers
    // without cuGetProcAddress_v2. We ask for the ABI of CUDA 12.0, not CUDA_VERSION: cuGetProcAddress
    // returns the newest ABI up to the version asked for, and CUDA 13.0 gave some names new signatures
    // under the same name (cuCtxGetDevice(dev, ctx), cuCtxSynchronize(ctx)) while cuda.h keeps
    // declaring the old ones. Every entry point below has the 12.0 signature that cuda.h declares, except
    // cuStreamGetCaptureInfo, whose 12.0 type DriverEntryPoints spells out.
    auto resolve = [&](auto& fn, const char* symbol, const char* fallback, bool required) {
        void* pointer = nullptr;
        if (get_proc != nullptr) {
            CUdriverProcAddressQueryResult status;
            if (get_proc(symbol, &pointer, kAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
                status != CU_GET_PROC_ADDRESS_SUCCESS) {
                pointer = nullptr;
            }
        }
        if (pointer == nullptr) pointer = ::dlsym(handle, fallback);
        if (pointer == nullptr && required) {
            throw CudaError(std::string("the CUDA driver lacks ") + symbol + "; update the NVIDIA driver (CUDA 12.3+)");
        }
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(pointer);
    };
#define DG_RESOLVE(name, fallback, required) resolve(api->name, #name, fallback, required)
    DG_RESOLVE(cuInit, "cuInit", true);
    DG_RESOLVE(cuDriverGetVersion, "cuDriverGetVersion", true);
    DG_RESOLVE(cuGetErrorName, "cuGetErrorName", true);
    DG_RESOLVE(cuGetErrorString, "cuGetErrorString", true);
    DG_RESOLVE(cuDeviceGet, "cuDeviceGet", true);
    DG_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount", true);
    DG_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute", true);
    DG_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", true);
    DG_RESOLVE(cuCtxGetCurrent, "cuCtxGetCurrent", true);
    DG_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent", true);
    DG_RESOLVE(cuCtxGetDevice, "cuCtxGetDevice", true);
    DG_RESOLVE(cuCtxPushCurrent, "cuCtxPushCurrent_v2", true);
    DG_RESOLVE(cuCtxPopCurrent, "cuCtxPopCurrent_v2", true);
    DG_RESOLVE(cuCtxSynchronize, "cuCtxSynchronize", true);
    DG_RESOLVE(cuModuleLoadData, "cuModuleLoadData", true);
    DG_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction", true);
    DG_RESOLVE(cuLibraryLoadData, "cuLibraryLoadData", false);
    DG_RESOLVE(cuLibraryGetKernel, "cuLibraryGetKernel", false);
    DG_RESOLVE(cuKernelGetFunction, "cuKernelGetFunction", false);
    DG_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute", true);
    DG_RESOLVE(cuLaunchKernelEx, "cuLaunchKernelEx", true);
    DG_RESOLVE(cuLaunchKernel, "cuLaunchKernel", true);
    DG_RESOLVE(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", false);
    DG_RESOLVE(cuMemAlloc, "cuMemAlloc_v2", true);
    DG_RESOLVE(cuMemFree, "cuMemFree_v2", true);
    DG_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2", true);
    DG_RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2", true);
    DG_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize", true);
    DG_RESOLVE(cuMemsetD32Async, "cuMemsetD32Async", true);
    DG_RESOLVE(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", true);
    DG_RESOLVE(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v2", true);
#undef DG_RESOLVE
    if (api->cuLibraryLoadData == nullptr || api->cuLibraryGetKernel == nullptr || api->cuKernelGetFunction == nullptr) {
        api->cuLibraryLoadData = nullptr;  // all or nothing: fall back to the module API
    }
    return api;
}

std::mutex g_driver_mutex;
DriverEntryPoints* g_driver = nullptr;
std::once_flag g_init_once;
CUresult g_init_result = CUDA_SUCCESS;
std::mutex g_ctx_mutex;
std::map<int, CUcontext> g_primary;

}  // namespace

const DriverEntryPoints& driver_entry_points() {
    std::lock_guard<std::mutex> lock(g_driver_mutex);
    if (g_driver == nullptr) g_driver = open_driver();  // a failure is retried on the next call
    return *g_driver;
}

void ensure_driver_initialized() {
    const DriverEntryPoints& d = driver_entry_points();
    std::call_once(g_init_once, [&] { g_init_result = d.cuInit(0); });
    check_driver(g_init_result, "cuInit");
}

CUcontext primary_context(int device) {
    ensure_driver_initialized();
    const DriverEntryPoints& d = driver_entry_points();
    std::lock_guard<std::mutex> lock(g_ctx_mutex);
    if (auto it = g_primary.find(device); it != g_primary.end()) return it->second;
    CUdevice dev;
    check_driver(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    CUcontext ctx = nullptr;
    check_driver(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    g_primary.emplace(device, ctx);
    return ctx;
}

ContextGuard::ContextGuard(int device) {
    ensure_driver_initialized();
    const DriverEntryPoints& d = driver_entry_points();
    CUcontext current = nullptr;
    check_driver(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (current != nullptr) {
        CUdevice current_device = -1;
        if (d.cuCtxGetDevice(&current_device) == CUDA_SUCCESS && current_device == device) {
            context_ = current;
            return;
        }
    }
    context_ = primary_context(device);
    if (current == nullptr) {
        check_driver(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    } else {
        check_driver(d.cuCtxPushCurrent(context_), "cuCtxPushCurrent");
        pushed_ = true;
    }
}

ContextGuard::~ContextGuard() {
    if (pushed_) {
        CUcontext popped = nullptr;
        driver_entry_points().cuCtxPopCurrent(&popped);  // errors ignored: destructors never throw
    }
}

}  // namespace detail

const DriverApi& driver() {
    static std::once_flag once;
    static DriverApi api;
    std::call_once(once, [] {  // an exception leaves the flag unset, so a later call retries
        const detail::DriverEntryPoints& d = detail::driver_entry_points();
        d.cuInit(0);  // TMA descriptor encoding needs an initialized driver; errors surface on use
        api.tensor_map_encode_tiled = d.cuTensorMapEncodeTiled;
        api.get_error_string = d.cuGetErrorString;
    });
    return api;
}

void check_driver(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS) return;
    const char* name = nullptr;
    const char* text = nullptr;
    try {
        const detail::DriverEntryPoints& d = detail::driver_entry_points();
        d.cuGetErrorName(result, &name);
        d.cuGetErrorString(result, &text);
    } catch (const Error&) {
    }
    throw CudaError(std::string(what) + ": " + (name ? name : "CUDA error " + std::to_string(static_cast<int>(result))) +
                    (text ? std::string(" (") + text + ")" : std::string()));
}

}  // namespace deep_gemm::jit
