// install_entry (see cache_bundle.hpp).
#include "cache_bundle.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "cache.hpp"
#include "cache_lock.hpp"
#include "cache_trust.hpp"
#include "errors.hpp"
#include "files.hpp"

namespace deep_gemm::jit {

bool install_entry(const std::filesystem::path& root, const std::string& dir_name,
                   const std::vector<std::pair<std::string, std::filesystem::path>>& files) {
    using namespace detail;
    auto refuse = [&](const std::string& why) { return ConfigError("cannot install cache entry " + dir_name + ": " + why); };
    static const std::set<std::string> allowed = {"manifest", "kernel.cubin", "kernel.cu", "kernel.ptx", "kernel.sass"};
    std::optional<Manifest> manifest;
    std::set<std::string> seen;
    for (const auto& [name, source] : files) {
        if (!allowed.count(name)) throw refuse("unexpected file '" + name + "'");
        if (!seen.insert(name).second) throw refuse("file '" + name + "' given twice");
        if (name == "manifest") {
            const std::optional<std::string> text = read_file(source, /*follow_symlinks=*/false);
            if (!text) throw refuse("cannot read " + source.string() + ": " + std::strerror(errno));
            manifest = parse_manifest(*text);
        }
    }
    ensure_cache_dirs(root);
    const std::filesystem::path entry = root / "cache" / dir_name;
    std::string why;
    if (validate_entry(entry, manifest->name, manifest->key, manifest->arch, &why)) return false;

    std::string tmpl = (root / "tmp" / ("build." + manifest->key + ".XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw ConfigError("cannot create a directory under " + (root / "tmp").string() + ": " + std::strerror(errno));
    }
    const std::filesystem::path tmp = tmpl;
    try {
        ::chmod(tmp.c_str(), cache_dir_mode(trust_policy()));
        write_marker(tmp);
        // One file in memory at a time: an import's memory does not grow with the entry.
        for (const auto& [name, source] : files) {
            const std::optional<std::string> data = read_file(source, /*follow_symlinks=*/false);
            if (!data) throw refuse("cannot read " + source.string() + ": " + std::strerror(errno));
            write_file_durable(tmp / name, *data);
        }
        fsync_dir(tmp);
        if (!validate_entry(tmp, manifest->name, manifest->key, manifest->arch, &why)) throw refuse(why);
        FileLock lock(key_lock_path(root, manifest->key));
        if (validate_entry(entry, manifest->name, manifest->key, manifest->arch, &why)) {
            remove_tree(tmp);
            return false;
        }
        struct stat st;
        if (::lstat(entry.c_str(), &st) == 0) {
            // A broken entry of the same key: set it aside as build() would (its own rename).
            const std::filesystem::path aside = root / "tmp" / ("removing." + manifest->key + "." + std::to_string(::getpid()));
            if (made_by_cache(entry) && ::rename(entry.c_str(), aside.c_str()) == 0) remove_tree(aside);
        }
        if (::rename(tmp.c_str(), entry.c_str()) != 0) {
            throw ConfigError("cannot move the imported entry into " + entry.string() + ": " + std::strerror(errno));
        }
    } catch (...) {
        remove_tree(tmp);
        throw;
    }
    fsync_dir(root / "cache");
    return true;
}

}  // namespace deep_gemm::jit
