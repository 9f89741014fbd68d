// device_info(), load(), get_kernel() and the LoadedKernel implementations: Driver API by default,
// Runtime API when compiled with DG_JIT_USE_RUNTIME_API (the only file that depends on that macro).
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <tuple>

#ifdef DG_JIT_USE_RUNTIME_API
#include <cuda_runtime.h>
#endif

#include "driver_api.hpp"
#include "errors.hpp"
#include "jit.hpp"
#include "log.hpp"
#include "settings.hpp"

namespace deep_gemm::jit {
namespace {

constexpr unsigned kDefaultSmemLimit = 48 * 1024;

// A kernel function's dynamic shared-memory limit: raised (under a lock) the first time a launch needs more
// than the default or the last raise, then checked with one atomic load per launch.
class SmemLimit {
public:
    template <typename Raise>
    void ensure(unsigned bytes, Raise&& raise) const {
        if (bytes <= kDefaultSmemLimit || bytes <= limit_.load(std::memory_order_acquire)) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (bytes <= limit_.load(std::memory_order_relaxed)) return;
        raise(bytes);
        limit_.store(bytes, std::memory_order_release);
    }

private:
    mutable std::mutex mutex_;
    mutable std::atomic<unsigned> limit_{kDefaultSmemLimit};
};

std::string arch_for(int major, int minor) {
    std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
    if (major == 9 && minor == 0) arch += "a";  // wgmma / setmaxnreg need the arch-specific target
    return arch;
}

#ifdef DG_JIT_USE_RUNTIME_API

void check_runtime(cudaError_t result, const std::string& what) {
    if (result == cudaSuccess) return;
    throw CudaError(what + ": " + cudaGetErrorName(result) + " (" + cudaGetErrorString(result) + ")");
}

// Makes `device` current for the guard's lifetime (restores the caller's device).
class DeviceGuard {
public:
    explicit DeviceGuard(int device) {
        check_runtime(cudaGetDevice(&previous_), "cudaGetDevice");
        if (previous_ != device) {
            check_runtime(cudaSetDevice(device), "cudaSetDevice");
            switched_ = true;
        }
    }
    ~DeviceGuard() {
        if (switched_) cudaSetDevice(previous_);
    }

private:
    int previous_ = 0;
    bool switched_ = false;
};

DeviceInfo query_device(int device) {
    DeviceInfo info;
    info.ordinal = device;
    check_runtime(cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check_runtime(cudaDeviceGetAttribute(&info.cc_minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
    check_runtime(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    check_runtime(cudaDeviceGetAttribute(&info.max_smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                  "cudaDeviceGetAttribute");
    int clock_khz = 0;
    check_runtime(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute");
    info.clock_mhz = clock_khz / 1000;
    info.arch = arch_for(info.cc_major, info.cc_minor);
    return info;
}

class RuntimeKernel final : public LoadedKernel {
public:
    RuntimeKernel(const std::string& cubin, const std::string& symbol, int device) : symbol_(symbol), device_(device) {
        DeviceGuard guard(device);
        check_runtime(cudaLibraryLoadData(&library_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                      "cudaLibraryLoadData(" + symbol + ")");
        check_runtime(cudaLibraryGetKernel(&kernel_, library_, symbol.c_str()), "cudaLibraryGetKernel(" + symbol + ")");
    }

    void launch(const LaunchConfig& c, void** args) const override {
        int current = -1;
        check_runtime(cudaGetDevice(&current), "cudaGetDevice");
        if (current != device_) {
            DeviceGuard guard(device_);
            launch_here(c, args);
        } else {
            launch_here(c, args);
        }
    }
    int device() const override { return device_; }

private:
    void launch_here(const LaunchConfig& c, void** args) const {
        smem_limit_.ensure(c.smem_bytes, [&](unsigned bytes) {
            check_runtime(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes)),
                          "cudaFuncSetAttribute(" + symbol_ + ", max dynamic smem " + std::to_string(bytes) + ")");
        });
        cudaLaunchAttribute attrs[2];
        unsigned count = 0;
        if (c.cluster_x > 1) {
            attrs[count].id = cudaLaunchAttributeClusterDimension;
            attrs[count].val.clusterDim.x = c.cluster_x;
            attrs[count].val.clusterDim.y = 1;
            attrs[count].val.clusterDim.z = 1;
            ++count;
        }
        if (c.pdl) {
            attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attrs[count].val.programmaticStreamSerializationAllowed = 1;
            ++count;
        }
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(c.grid[0], c.grid[1], c.grid[2]);
        config.blockDim = dim3(c.block[0], c.block[1], c.block[2]);
        config.dynamicSmemBytes = c.smem_bytes;
        config.stream = reinterpret_cast<cudaStream_t>(c.stream);
        config.attrs = count > 0 ? attrs : nullptr;
        config.numAttrs = count;
        const cudaError_t result = cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel_), args);
        if (result != cudaSuccess) check_runtime(result, "cudaLaunchKernelExC(" + symbol_ + ")");
    }

    std::string symbol_;
    int device_;
    cudaLibrary_t library_ = nullptr;
    cudaKernel_t kernel_ = nullptr;
    SmemLimit smem_limit_;
};

using KernelImpl = RuntimeKernel;

#else  // Driver API

DeviceInfo query_device(int device) {
    detail::ensure_driver_initialized();
    const detail::DriverEntryPoints& d = detail::driver_entry_points();
    CUdevice dev;
    check_driver(d.cuDeviceGet(&dev, device), ("cuDeviceGet(" + std::to_string(device) + ")").c_str());
    DeviceInfo info;
    info.ordinal = device;
    check_driver(d.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    check_driver(d.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    check_driver(d.cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
    check_driver(d.cuDeviceGetAttribute(&info.max_smem_per_block_optin,
                                        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
                 "cuDeviceGetAttribute");
    int clock_khz = 0;
    check_driver(d.cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev), "cuDeviceGetAttribute");
    info.clock_mhz = clock_khz / 1000;
    info.arch = arch_for(info.cc_major, info.cc_minor);
    return info;
}

class DriverKernel final : public LoadedKernel {
public:
    DriverKernel(const std::string& cubin, const std::string& symbol, int device) : symbol_(symbol), device_(device) {
        const detail::DriverEntryPoints& d = detail::driver_entry_points();
        detail::ContextGuard guard(device);
        context_ = guard.context();
        if (d.cuLibraryLoadData != nullptr) {
            CUlibrary library = nullptr;
            check_driver(d.cuLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                         ("cuLibraryLoadData(" + symbol + ")").c_str());
            CUkernel kernel = nullptr;
            check_driver(d.cuLibraryGetKernel(&kernel, library, symbol.c_str()), ("cuLibraryGetKernel(" + symbol + ")").c_str());
            check_driver(d.cuKernelGetFunction(&function_, kernel), ("cuKernelGetFunction(" + symbol + ")").c_str());
        } else {
            CUmodule module = nullptr;
            check_driver(d.cuModuleLoadData(&module, cubin.data()), ("cuModuleLoadData(" + symbol + ")").c_str());
            check_driver(d.cuModuleGetFunction(&function_, module, symbol.c_str()), ("cuModuleGetFunction(" + symbol + ")").c_str());
        }
    }

    void launch(const LaunchConfig& c, void** args) const override {
        const detail::DriverEntryPoints& d = detail::driver_entry_points();
        CUcontext current = nullptr;
        d.cuCtxGetCurrent(&current);
        if (current == context_) {
            launch_here(d, c, args);
        } else if (current == nullptr) {
            check_driver(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
            launch_here(d, c, args);
        } else {
            // The thread is on another context: launch in ours, then give the thread its context back.
            check_driver(d.cuCtxPushCurrent(context_), "cuCtxPushCurrent");
            struct Pop {
                const detail::DriverEntryPoints& d;
                ~Pop() {
                    CUcontext popped;
                    d.cuCtxPopCurrent(&popped);
                }
            } pop{d};
            launch_here(d, c, args);
        }
    }
    int device() const override { return device_; }

private:
    void launch_here(const detail::DriverEntryPoints& d, const LaunchConfig& c, void** args) const {
        smem_limit_.ensure(c.smem_bytes, [&](unsigned bytes) {
            check_driver(d.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
                         ("cuFuncSetAttribute(" + symbol_ + ", max dynamic smem " + std::to_string(bytes) + ")").c_str());
        });
        CUlaunchAttribute attrs[2];
        unsigned count = 0;
        if (c.cluster_x > 1) {
            attrs[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attrs[count].value.clusterDim.x = c.cluster_x;
            attrs[count].value.clusterDim.y = 1;
            attrs[count].value.clusterDim.z = 1;
            ++count;
        }
        if (c.pdl) {
            attrs[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attrs[count].value.programmaticStreamSerializationAllowed = 1;
            ++count;
        }
        CUlaunchConfig config = {};
        config.gridDimX = c.grid[0], config.gridDimY = c.grid[1], config.gridDimZ = c.grid[2];
        config.blockDimX = c.block[0], config.blockDimY = c.block[1], config.blockDimZ = c.block[2];
        config.sharedMemBytes = c.smem_bytes;
        config.hStream = c.stream;
        config.attrs = count > 0 ? attrs : nullptr;
        config.numAttrs = count;
        const CUresult result = d.cuLaunchKernelEx(&config, function_, args, nullptr);
        if (result != CUDA_SUCCESS) check_driver(result, ("cuLaunchKernelEx(" + symbol_ + ")").c_str());
    }

    std::string symbol_;
    int device_;
    CUcontext context_ = nullptr;
    CUfunction function_ = nullptr;
    SmemLimit smem_limit_;
};

using KernelImpl = DriverKernel;

#endif

// Never destroyed: loaded kernels must stay valid for threads still launching during process exit.
std::mutex g_devices_mutex;
auto& g_devices = *new std::map<int, std::unique_ptr<DeviceInfo>>();
std::mutex g_loaded_mutex;
auto& g_loaded = *new std::map<std::tuple<std::string, std::string, int>, std::unique_ptr<LoadedKernel>>();

}  // namespace

const DeviceInfo& device_info(int device) {
    // Ops ask on every call: a lock-free slot per small ordinal answers after the first query.
    static std::array<std::atomic<const DeviceInfo*>, 64> fast{};
    const bool has_slot = device >= 0 && device < int(fast.size());
    if (has_slot) {
        if (const DeviceInfo* info = fast[device].load(std::memory_order_acquire)) return *info;
    }
    std::lock_guard<std::mutex> lock(g_devices_mutex);
    auto it = g_devices.find(device);
    if (it == g_devices.end()) it = g_devices.emplace(device, std::make_unique<DeviceInfo>(query_device(device))).first;
    if (has_slot) fast[device].store(it->second.get(), std::memory_order_release);
    return *it->second;
}

const LoadedKernel& load(const CachedKernel& entry, const std::string& symbol, int device) {
    auto key = std::make_tuple(entry.dir.string(), symbol, device);
    std::lock_guard<std::mutex> lock(g_loaded_mutex);
    if (auto it = g_loaded.find(key); it != g_loaded.end()) return *it->second;
    const auto start = std::chrono::steady_clock::now();
    auto kernel = std::make_unique<KernelImpl>(entry.cubin, symbol, device);
    if (settings().print_load_time) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        log(LogLevel::kInfo, "loaded " + symbol + " from " + entry.dir.string() + " on device " + std::to_string(device) +
                                 " in " + std::to_string(ms) + " ms");
    }
    return *g_loaded.emplace(std::move(key), std::move(kernel)).first->second;
}

const LoadedKernel& get_kernel(const KernelSource& src, int device) {
    const DeviceInfo& info = device_info(device);
    return load(build(src, info.arch), src.symbol, device);
}

}  // namespace deep_gemm::jit
