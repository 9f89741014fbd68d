// Maintenance of the on-disk kernel cache (behind `python -m deep_gemm cache`): list, stats, prune, clear.
// Safe while other processes build and load kernels: every removal takes the key's lock without waiting
// (cache_lock.hpp) and skips the key when a builder holds it; entries leave the cache by one rename, so a
// reader sees a whole entry or none (and then rebuilds it).
//
// Layout under the cache root: cache/kernel.<name>.<key>/{manifest,kernel.cubin[,kernel.ptx,kernel.sass]}
// (published entries), tmp/build.<key>.XXXXXX (compiles in progress, or left by a process that died),
// locks/<key>.lock, quarantine/ (entries found corrupt, kept for inspection).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace deep_gemm::jit {

struct CacheEntryInfo {
    std::filesystem::path path;
    std::string name;  // kernel name from the manifest (from the directory name when it has none)
    std::string key;
    std::string arch, compiler;  // empty when the manifest is missing or malformed
    bool manifest_ok = false;
    std::int64_t bytes = 0;       // all files of the entry
    std::int64_t created = 0;     // Unix seconds: the manifest's mtime (when it was compiled)
    std::int64_t last_used = 0;   // Unix seconds: the entry directory's mtime (refreshed by each disk hit)
};

// Published entries, most recently used first. A missing cache root yields an empty list.
std::vector<CacheEntryInfo> list_cache(const std::filesystem::path& root);

struct CacheStats {
    std::int64_t entries = 0, entry_bytes = 0;
    std::int64_t build_dirs = 0, build_bytes = 0;  // tmp/: compiles in progress or orphaned
    std::int64_t quarantined = 0, quarantine_bytes = 0;
    std::int64_t lock_files = 0;
};
CacheStats cache_stats(const std::filesystem::path& root);

struct PruneOptions {
    std::optional<std::int64_t> max_unused_seconds;  // remove entries not used for longer than this
    std::optional<std::int64_t> max_total_bytes;     // then remove least recently used until the rest fit
    bool remove_all = false;                         // clear: every entry
    bool dry_run = false;                            // report what would go, remove nothing
    std::int64_t now = 0;                            // Unix seconds; 0 = the current time (tests pass their own)
};

struct PruneReport {
    std::vector<std::filesystem::path> removed;  // entries, orphaned build dirs and quarantined entries
    std::vector<std::filesystem::path> busy;     // left alone: a process holds the key's lock
    std::int64_t bytes_freed = 0;
    std::int64_t entries_left = 0, bytes_left = 0;
};

// Removes entries per `options` (age first, then size, least recently used first). Also removes build
// directories whose builder is gone (key lock free) and the quarantine. Never throws for a file that
// vanishes meanwhile; throws ConfigError when the cache root exists but cannot be read.
PruneReport prune_cache(const std::filesystem::path& root, const PruneOptions& options);

// <root>/<name>, a directory beside the cache's own that another tool fills (the legacy kernels' Triton
// cache, "triton"): created when absent and checked with the root as the cache's directories are (owner,
// mode, no symlink, ancestors). Throws ConfigError for one that may not be trusted.
std::filesystem::path prepare_side_dir(const std::filesystem::path& root, const std::string& name);

}  // namespace deep_gemm::jit
