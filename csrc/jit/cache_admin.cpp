// Cache maintenance: listing, stats, pruning under the per-key lock (see cache_admin.hpp).
#include "cache_admin.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <unistd.h>

#include "cache.hpp"
#include "cache_lock.hpp"
#include "cache_trust.hpp"
#include "errors.hpp"
#include "files.hpp"

namespace deep_gemm::jit {
namespace {

namespace fs = std::filesystem;

std::int64_t now_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t mtime_of(const fs::path& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_mtim.tv_sec) : 0;
}

// Bytes of the regular files under `path` (symlinks are not followed).
std::int64_t tree_bytes(const fs::path& path) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return S_ISREG(st.st_mode) ? static_cast<std::int64_t>(st.st_size) : 0;
    std::int64_t total = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        total += tree_bytes(it->path());
    }
    return total;
}

// The children of one directory of the cache (cache/, tmp/, quarantine/, locks/), after checking that it is
// a real directory of the user's (never a symlink: it would lead maintenance outside the root). Empty when
// absent; throws ConfigError when untrusted.
std::vector<fs::path> children(const fs::path& dir) {
    std::vector<fs::path> out;
    if (!detail::check_trusted_if_present(dir, /*is_root=*/false, detail::trust_policy(),
                                          detail::root_origin(dir.parent_path()))) {
        return out;
    }
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        out.push_back(it->path());
    }
    return out;
}

bool is_key(const std::string& text) {
    return text.size() == 32 &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "kernel.<name>.<key>" -> (name, key); nullopt for anything else.
std::optional<std::pair<std::string, std::string>> split_entry_name(const std::string& dir_name) {
    const std::string prefix = "kernel.";
    const std::size_t dot = dir_name.rfind('.');
    if (dir_name.rfind(prefix, 0) != 0 || dot == std::string::npos || dot < prefix.size()) return std::nullopt;
    std::string key = dir_name.substr(dot + 1);
    if (!is_key(key)) return std::nullopt;
    return std::make_pair(dir_name.substr(prefix.size(), dot - prefix.size()), key);
}

// "build.<key>.XXXXXX" -> key; empty when the name carries none (older builds).
std::string build_dir_key(const std::string& dir_name) {
    if (dir_name.rfind("build.", 0) != 0) return {};
    const std::string rest = dir_name.substr(6);
    const std::size_t dot = rest.find('.');
    const std::string key = rest.substr(0, dot);
    return is_key(key) ? key : std::string();
}

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

// Only names the cache gives, holding its marker (cache_trust.hpp): what maintenance may remove.
bool ours(const fs::path& path, const char* prefix) {
    return path.filename().string().rfind(prefix, 0) == 0 && detail::made_by_cache(path);
}

void check_readable(const fs::path& root) {
    if (!detail::check_trusted_if_present(root, /*is_root=*/true, detail::trust_policy(), detail::root_origin(root))) {
        return;
    }
    std::error_code ec;
    if (!fs::is_directory(root, ec) || ::access(root.c_str(), R_OK | X_OK) != 0) {
        throw ConfigError("the kernel cache dir " + root.string() + " (DG_JIT_CACHE_DIR) is not a readable directory");
    }
}

}  // namespace

std::vector<CacheEntryInfo> list_cache(const fs::path& root) {
    check_readable(root);
    std::vector<CacheEntryInfo> out;
    for (const fs::path& path : children(root / "cache")) {
        const auto parts = split_entry_name(path.filename().string());
        if (!parts || !detail::made_by_cache(path)) continue;
        CacheEntryInfo info;
        info.path = path;
        info.name = parts->first;
        info.key = parts->second;
        if (auto text = detail::read_file(path / "manifest")) {
            if (auto manifest = detail::parse_manifest(*text)) {
                info.manifest_ok = true;
                info.name = manifest->name;
                info.arch = manifest->arch;
                info.compiler = manifest->compiler;
            }
        }
        info.bytes = tree_bytes(path);
        info.created = mtime_of(path / "manifest");
        info.last_used = mtime_of(path);
        if (info.created == 0) info.created = info.last_used;
        out.push_back(std::move(info));
    }
    std::sort(out.begin(), out.end(), [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
        return a.last_used != b.last_used ? a.last_used > b.last_used : a.path < b.path;
    });
    return out;
}

CacheStats cache_stats(const fs::path& root) {
    CacheStats stats;
    for (const CacheEntryInfo& entry : list_cache(root)) {
        ++stats.entries;
        stats.entry_bytes += entry.bytes;
    }
    for (const fs::path& path : children(root / "tmp")) {
        if (!ours(path, "build.") && !ours(path, "removing.")) continue;
        ++stats.build_dirs;
        stats.build_bytes += tree_bytes(path);
    }
    for (const fs::path& path : children(root / "quarantine")) {
        if (!ours(path, "kernel.")) continue;
        ++stats.quarantined;
        stats.quarantine_bytes += tree_bytes(path);
    }
    stats.lock_files = static_cast<std::int64_t>(children(root / "locks").size());
    return stats;
}

PruneReport prune_cache(const fs::path& root, const PruneOptions& options) {
    PruneReport report;
    const std::vector<CacheEntryInfo> entries = list_cache(root);  // most recently used first
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return report;
    const std::int64_t now = options.now != 0 ? options.now : now_seconds();
    const fs::path graveyard = root / "tmp";
    // Removed entries pass through tmp/ and locks are taken in locks/: neither may lead out of the root.
    for (const char* sub : {"tmp", "locks"}) {
        detail::check_trusted_if_present(root / sub, /*is_root=*/false, detail::trust_policy(), detail::root_origin(root));
    }
    // Removing takes key locks and renames through tmp/: say so plainly when the cache is read-only for us.
    for (const char* sub : {"cache", "tmp", "locks"}) {
        if (fs::is_directory(root / sub, ec) && ::access((root / sub).c_str(), W_OK | X_OK) != 0) {
            throw ConfigError("the kernel cache " + root.string() + " is read-only for you (" + (root / sub).string() +
                              ": " + std::strerror(errno) + "); prune and clear need write access to it");
        }
    }

    // Takes the key lock without waiting, moves the directory out of the cache in one rename, deletes it.
    auto remove_locked = [&](const fs::path& path, const std::string& key, std::int64_t bytes) {
        detail::FileLock lock(detail::key_lock_path(root, key), detail::FileLock::Mode::kTry);
        if (!lock.held()) {
            report.busy.push_back(path);
            return false;
        }
        if (!options.dry_run) {
            const fs::path doomed = graveyard / ("removing." + key + "." + unique_suffix());
            if (::rename(path.c_str(), doomed.c_str()) != 0) return false;  // gone already, or not ours to move
            detail::remove_tree(doomed);
        }
        report.removed.push_back(path);
        report.bytes_freed += bytes;
        return true;
    };

    std::vector<const CacheEntryInfo*> keep;
    for (const CacheEntryInfo& entry : entries) {
        const bool too_old = options.max_unused_seconds && now - entry.last_used > *options.max_unused_seconds;
        if (options.remove_all || too_old) {
            if (remove_locked(entry.path, entry.key, entry.bytes)) continue;
        }
        keep.push_back(&entry);
    }
    std::int64_t kept_bytes = 0;
    for (const CacheEntryInfo* entry : keep) kept_bytes += entry->bytes;
    if (options.max_total_bytes) {
        // `keep` is most recently used first: drop from its end until the rest fit.
        for (auto it = keep.rbegin(); it != keep.rend() && kept_bytes > *options.max_total_bytes; ++it) {
            if (remove_locked((*it)->path, (*it)->key, (*it)->bytes)) {
                kept_bytes -= (*it)->bytes;
                *it = nullptr;
            }
        }
    }
    for (const CacheEntryInfo* entry : keep) report.entries_left += entry != nullptr;
    report.bytes_left = kept_bytes;

    // Housekeeping: build directories whose builder is gone, interrupted removals, the quarantine.
    for (const fs::path& path : children(root / "tmp")) {
        if (!ours(path, "build.") && !ours(path, "removing.")) continue;  // ~/tmp when the root is $HOME
        const std::string dir_name = path.filename().string();
        const std::string key = build_dir_key(dir_name);
        const std::int64_t bytes = tree_bytes(path);
        if (!key.empty()) {
            detail::FileLock lock(detail::key_lock_path(root, key), detail::FileLock::Mode::kTry);
            if (!lock.held()) {
                report.busy.push_back(path);
                continue;
            }
        } else if (dir_name.rfind("removing.", 0) != 0 && now - mtime_of(path) < 24 * 3600) {
            continue;  // a build directory without a key in its name: only when a day old (as build() does)
        }
        if (!options.dry_run) detail::remove_tree(path);
        report.removed.push_back(path);
        report.bytes_freed += bytes;
    }
    for (const fs::path& path : children(root / "quarantine")) {
        if (!ours(path, "kernel.")) continue;
        const std::int64_t bytes = tree_bytes(path);
        if (!options.dry_run) detail::remove_tree(path);
        report.removed.push_back(path);
        report.bytes_freed += bytes;
    }
    return report;
}

fs::path prepare_side_dir(const fs::path& root, const std::string& name) {
    detail::ensure_cache_dirs(root);
    detail::make_trusted_dir(root / name, /*is_root=*/false, detail::trust_policy(), detail::root_origin(root));
    return root / name;
}

}  // namespace deep_gemm::jit
