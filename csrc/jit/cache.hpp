// The on-disk kernel cache: keys, manifests, entry validation. Internal to the JIT core (build() in
// jit.hpp is the public entry point).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "include_scan.hpp"

namespace deep_gemm::jit::detail {

inline constexpr int kManifestVersion = 1;

// Everything the cache key covers. No field may hold an absolute path.
struct KeyInputs {
    std::string name;
    std::string code;
    std::vector<IncludedHeader> headers;
    std::string compiler_kind;
    std::string compiler_version;
    std::vector<std::string> flags;  // with placeholders instead of the include paths
    std::string arch;
    std::string options;  // switches that change what the entry holds (dumps, ptxas check)
};

// 32 lower-case hex digits (128 bits of SHA-256).
std::string compute_key(const KeyInputs& inputs);

// "kernel.<name>.<key>", the name reduced to [A-Za-z0-9_-] and at most 64 characters.
std::string entry_dir_name(const std::string& name, const std::string& key);

struct Manifest {
    int format = 0;
    std::string name, key, arch, compiler, flags;
    long long cubin_size = -1;
    std::string cubin_sha256;
};
std::string format_manifest(const Manifest& m);
std::optional<Manifest> parse_manifest(const std::string& text);

// Checks `entry` (manifest present and well formed, name/key/arch as expected, cubin size and SHA-256 as
// recorded). On success returns the cubin; otherwise nullopt and the reason in *why.
std::optional<std::string> validate_entry(const std::filesystem::path& entry, const std::string& name,
                                          const std::string& key, const std::string& arch, std::string* why);

// Makes sure <root>, <root>/cache, <root>/tmp, <root>/locks exist and are writable directories; throws
// ConfigError naming the directory and DG_JIT_CACHE_DIR otherwise.
void ensure_cache_dirs(const std::filesystem::path& root);

// Forgets the in-process memo of build() results (tests that corrupt entries behind its back).
void clear_build_memo();

}  // namespace deep_gemm::jit::detail
