// Who may have written the kernel cache (docs/cache.md): every directory of it must be the user's (or
// root's) and writable by nobody else, checked without following symlinks; and the cache deletes only what
// it made (a name prefix plus a marker file of its own). Internal to the JIT core.
#pragma once

#include <filesystem>
#include <string>

namespace deep_gemm::jit::detail {

// DG_JIT_CACHE_TRUST_GROUP: also trust directories that one of the user's groups owns and may write.
struct TrustPolicy {
    bool group = false;
};
TrustPolicy trust_policy();  // from settings()

// The mode of the directories the cache creates: 0700, or 02770 for a group-shared cache.
unsigned cache_dir_mode(const TrustPolicy& policy);

// Empty when `dir` (which must exist) may be trusted, else why not: the path, the owner and the mode.
// `is_root`: the cache root itself may be a symlink, when the link is the user's (or root's) and what it
// points to passes; every directory inside the root must be a real directory. The root's ancestors must not
// be writable by others either (sticky ones excepted): they could swap the root. `path_problem` is set when
// the reason is a path that leads to no directory (a file, a symlink loop) rather than one of trust.
std::string untrusted_reason(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                             bool* path_problem = nullptr);

// Throws ConfigError with untrusted_reason() when `dir` exists and may not be trusted. Returns whether it
// exists (false: absent). `origin` names where the root came from (cache_settings().cache_dir_origin).
bool check_trusted_if_present(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                              const std::string& origin);

// Creates `dir` when absent with cache_dir_mode() (whatever the umask), then checks it like
// check_trusted_if_present(). The parent must exist. Throws ConfigError.
void make_trusted_dir(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                      const std::string& origin);

// The marker every directory the cache builds carries (build dirs, hence entries and quarantined entries):
// maintenance removes a directory only when it has the marker (or, for entries of older versions, a
// manifest the cache wrote) and a name the cache gives.
inline constexpr const char* kMarkerName = ".deep_gemm-cache";
void write_marker(const std::filesystem::path& dir);
bool made_by_cache(const std::filesystem::path& dir);

// How an error names the root: "DG_JIT_CACHE_DIR", or "HOME=..., DG_JIT_CACHE_DIR being unset", etc.
std::string root_origin(const std::filesystem::path& root);

}  // namespace deep_gemm::jit::detail
