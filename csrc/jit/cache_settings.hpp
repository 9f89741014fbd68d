// The DG_* settings of the kernel cache's trust and no-compile rules (docs/cache.md), read with the rest of
// the registry (settings.cpp) and reloaded with it. Kept out of settings.hpp, which every kernel includes.
#pragma once

#include <string>

namespace deep_gemm::jit {

struct CacheSettings {
    // Where Settings::cache_dir came from, for error messages: "DG_JIT_CACHE_DIR", or HOME / TMPDIR / /tmp
    // (the HOME-less fallback); an error about the directory blames that.
    std::string cache_dir_origin = "DG_JIT_CACHE_DIR";
    bool trust_group = false;  // DG_JIT_CACHE_TRUST_GROUP: accept a cache shared by one of the user's groups
    enum class CompileMode { kCompile, kWarn, kError };
    CompileMode compile_mode = CompileMode::kCompile;  // DG_JIT_COMPILE: what a cache miss does
};

// Of the same generation as settings() (thread safe; throws ConfigError like it).
const CacheSettings& cache_settings();

}  // namespace deep_gemm::jit
