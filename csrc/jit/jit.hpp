// The public face of the JIT core: what kernel implementations (csrc/jit_kernels) and the torch layer
// (csrc/apis) use. Torch-free; needs only the CUDA toolkit headers (no link against CUDA libraries:
// libcuda and libnvrtc are opened lazily with dlopen).
//
// Flow for one kernel:  KernelSource --build()--> CachedKernel (cubin on disk) --load()--> LoadedKernel
// and on the hot path a KernelTable maps a small config key straight to the LoadedKernel.
#pragma once

#include <cuda.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "errors.hpp"
#include "log.hpp"
#include "settings.hpp"

namespace deep_gemm::jit {

// ---- compile + disk cache ------------------------------------------------------------------------

// One generated translation unit. `code` includes headers from deep_gemm/include with
// `#include <deep_gemm/...>` and defines exactly one `extern "C" __global__` function named `symbol`.
struct KernelSource {
    std::string name;    // short kernel family name, e.g. "sm90_fp8_gemm_1d2d"; becomes part of the cache dir
    std::string symbol;  // the extern "C" __global__ function to load
    std::string code;    // full .cu text
};

// A cache entry: $DG_JIT_CACHE_DIR/cache/kernel.<name>.<hash>/ holding kernel.cu, kernel.cubin, manifest.
struct CachedKernel {
    std::filesystem::path dir;
    std::string cubin;      // validated cubin bytes
    bool compiled = false;  // true when this call ran the compiler (false: found on disk)
};

// The include root handed to the compiler (deep_gemm/include). Set once by the Python module from the
// installed package location; tests set it to the source tree. Throws ConfigError if never set.
void set_include_dir(const std::filesystem::path& dir);
const std::filesystem::path& include_dir();

// Compiles `src` for `arch` (e.g. "sm_90a") or returns the validated entry already on disk.
// Safe against concurrent processes (per-key flock, atomic directory rename). Throws CompileError or
// ConfigError.
CachedKernel build(const KernelSource& src, const std::string& arch);

// ---- devices --------------------------------------------------------------------------------------

struct DeviceInfo {
    int ordinal = 0;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    int max_smem_per_block_optin = 0;  // bytes; the limit for dynamic shared memory after opting in
    int clock_mhz = 0;                 // peak SM clock (the tuning table's clocks class)
    std::string arch;                  // compiler target, "sm_90a" on Hopper
};

// Queried once per device (driver or runtime API, as built), then cached; later calls take no lock.
const DeviceInfo& device_info(int device);

// The lazily dlopen'ed driver entry points other code needs (TMA descriptors). Throws CudaError when
// no driver can be loaded.
struct DriverApi {
    decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;
    decltype(&::cuGetErrorString) get_error_string = nullptr;
};
const DriverApi& driver();

// Throws CudaError("<what>: <driver error name and string>") unless `result` is CUDA_SUCCESS.
void check_driver(CUresult result, const char* what);

// cuTensorMapEncodeTiled (element strides 1, no interleave, zero OOB fill) through a small per-thread
// memo keyed by every argument: the map depends on nothing else, and encoding costs driver time on each
// call that repeated calls on the same tensors (weights, benchmarks) skip. `global_strides` has
// rank - 1 byte strides. Throws CudaError naming `what` on failure.
CUtensorMap encode_tensor_map(CUtensorMapDataType dtype, unsigned rank, const void* base, const uint64_t* global_dims,
                              const uint64_t* global_strides, const uint32_t* box_dims, CUtensorMapSwizzle swizzle,
                              CUtensorMapL2promotion l2_promotion, const char* what);

// ---- load + launch --------------------------------------------------------------------------------

struct LaunchConfig {
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned smem_bytes = 0;   // dynamic shared memory; the function's limit is raised once per device
    unsigned cluster_x = 1;    // thread-block cluster size along x (1: no cluster attribute)
    bool pdl = false;          // programmatic dependent launch attribute
    CUstream stream = nullptr; // a cudaStream_t is the same handle
};

// A kernel function loaded on one device. Created by load(); lives until process exit.
class LoadedKernel {
public:
    virtual ~LoadedKernel() = default;
    // `args` is the usual array of pointers to each kernel parameter. Throws CudaError on failure.
    virtual void launch(const LaunchConfig& config, void** args) const = 0;
    virtual int device() const = 0;
};

// Loads `symbol` from the entry's cubin onto `device` (Driver API, or Runtime API when built with
// DG_JIT_USE_RUNTIME_API). The same (entry, symbol, device) loads once per process.
const LoadedKernel& load(const CachedKernel& entry, const std::string& symbol, int device);

// build + load for the device's own arch.
const LoadedKernel& get_kernel(const KernelSource& src, int device);

// Hot-path memo: maps a small key (a config struct with operator== and a hasher) plus the device to the
// loaded kernel. `make_source` runs only on a miss, so a cached call formats and hashes nothing.
template <typename Key, typename Hash = std::hash<Key>>
class KernelTable {
public:
    template <typename MakeSource>
    const LoadedKernel& get(int device, const Key& key, MakeSource&& make_source) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& per_device = tables_[device];
        if (auto it = per_device.find(key); it != per_device.end()) return *it->second;
        const LoadedKernel& kernel = get_kernel(make_source(), device);
        per_device.emplace(key, &kernel);
        return kernel;
    }

private:
    std::mutex mutex_;
    std::unordered_map<int, std::unordered_map<Key, const LoadedKernel*, Hash>> tables_;
};

}  // namespace deep_gemm::jit
