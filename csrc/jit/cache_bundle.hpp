// Looking kernels up without building them (`warmup --check`, `cache export --from-record`) and installing
// cache entries that arrive from elsewhere (`python -m deep_gemm cache import`, which verifies the bundle
// first: deep_gemm/_bundle.py). Internal to the JIT core.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "jit.hpp"

namespace deep_gemm::jit {

// Where build() would find `src` for `arch`, and whether a valid entry is there now. Compiles nothing and
// writes nothing. Throws ConfigError for an untrusted cache.
struct CacheLookup {
    std::filesystem::path dir;
    std::string key;
    bool present = false;
};
CacheLookup lookup(const KernelSource& src, const std::string& arch);

// Installs one entry named `dir_name` ("kernel.<name>.<key>") holding `files` (file name, the file to copy
// it from; only manifest, kernel.cubin, kernel.cu, kernel.ptx, kernel.sass) into the cache at `root`: written into a
// marked build directory, checked against its manifest (name, key, size, SHA-256), then renamed into place
// under the key's lock, so readers see the whole entry or none. Returns false (and changes nothing) when a
// valid entry is already there. Throws ConfigError for a malformed entry or an unusable cache.
bool install_entry(const std::filesystem::path& root, const std::string& dir_name,
                   const std::vector<std::pair<std::string, std::filesystem::path>>& files);

}  // namespace deep_gemm::jit
