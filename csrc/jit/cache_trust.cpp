// Trust checks and deletion markers of the kernel cache (see cache_trust.hpp and docs/cache.md).
#include "cache_trust.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>

#include "errors.hpp"
#include "files.hpp"
#include "settings.hpp"
#include "cache_settings.hpp"

namespace deep_gemm::jit::detail {
namespace {

std::string user_name(uid_t uid) {
    std::vector<char> buffer(4096);
    struct passwd pw, *found = nullptr;
    if (::getpwuid_r(uid, &pw, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) return found->pw_name;
    return "?";
}

std::string octal_mode(mode_t mode) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(mode & 07777));
    return buffer;
}

std::string describe(const struct stat& st) {
    return "owner uid " + std::to_string(st.st_uid) + " (" + user_name(st.st_uid) + "), group gid " +
           std::to_string(st.st_gid) + ", mode " + octal_mode(st.st_mode);
}

// Root owns everything anyway; trusting root-owned directories lets a root-built, read-only cache (a
// container image) serve other users.
bool trusted_owner(uid_t uid) { return uid == ::geteuid() || uid == 0; }

bool is_my_group(gid_t gid) {
    if (gid == ::getegid()) return true;
    const int n = ::getgroups(0, nullptr);
    if (n <= 0) return false;
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    const int got = ::getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) {
        if (groups[static_cast<std::size_t>(i)] == gid) return true;
    }
    return false;
}

}  // namespace

TrustPolicy trust_policy() { return TrustPolicy{cache_settings().trust_group}; }

unsigned cache_dir_mode(const TrustPolicy& policy) { return policy.group ? 02770 : 0700; }

namespace {

// Why `st` (the directory `shown`) may not be trusted, or empty. `sticky_ok`: for an ancestor of the root, a
// sticky directory that others may write is fine (they cannot rename or remove what is not theirs in it).
std::string mode_reason(const struct stat& st, const std::string& shown, const TrustPolicy& policy, bool sticky_ok) {
    const bool group_trusted = policy.group && is_my_group(st.st_gid);
    if (!trusted_owner(st.st_uid) && !group_trusted) {
        return shown + " is not yours (" + describe(st) + ")" +
               (policy.group ? "" : "; DG_JIT_CACHE_TRUST_GROUP=1 accepts a cache shared by one of your groups");
    }
    if (sticky_ok && (st.st_mode & S_ISVTX)) return {};
    if (st.st_mode & S_IWOTH) return shown + " can be written by any user (" + describe(st) + ")";
    if (st.st_mode & S_IWGRP) {
        if (!policy.group) {
            return shown + " can be written by its group (" + describe(st) +
                   "); DG_JIT_CACHE_TRUST_GROUP=1 accepts that when the group is one of yours";
        }
        if (!is_my_group(st.st_gid)) return shown + " can be written by a group that is not yours (" + describe(st) + ")";
        if (!sticky_ok && !(st.st_mode & S_ISGID)) {
            return shown + " is group-writable without the setgid bit (" + describe(st) +
                   "); a shared cache needs chmod g+s so that what teammates create stays in the group";
        }
    }
    return {};
}

// Whoever may rename an entry of an ancestor of the root can swap the root between a check and a read
// (docs/cache.md, "Trust model"), so every directory above the root must pass the same owner and mode
// rules, a sticky one excepted. Checked along the path as given (its symlinks must be trusted too) and
// along the resolved path.
std::string ancestor_reason(const std::filesystem::path& root, const TrustPolicy& policy) {
    std::vector<std::filesystem::path> ancestors;
    for (std::filesystem::path p = std::filesystem::absolute(root).lexically_normal().parent_path();;
         p = p.parent_path()) {
        ancestors.push_back(p);
        if (p == p.parent_path()) break;
    }
    if (char* real = ::realpath(root.c_str(), nullptr)) {
        for (std::filesystem::path p = std::filesystem::path(real).parent_path();; p = p.parent_path()) {
            ancestors.push_back(p);
            if (p == p.parent_path()) break;
        }
        std::free(real);
    }
    for (const std::filesystem::path& dir : ancestors) {
        struct stat st;
        if (::lstat(dir.c_str(), &st) != 0) continue;  // the root's own check reports a path that does not resolve
        if (S_ISLNK(st.st_mode)) {
            if (!trusted_owner(st.st_uid)) return "its parent " + dir.string() + " is a symlink that is not yours (" + describe(st) + ")";
            continue;  // what it points to is on the resolved path
        }
        const std::string why = mode_reason(st, "its parent " + dir.string(), policy, /*sticky_ok=*/true);
        if (!why.empty()) return why + ", so the cache dir could be swapped for another between a check and a read";
    }
    return {};
}

}  // namespace

std::string untrusted_reason(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                             bool* path_problem) {
    bool ignored = false;
    bool& unusable = path_problem ? *path_problem : ignored;
    unusable = false;
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) {
        unusable = true;
        return "cannot examine " + dir.string() + ": " + std::strerror(errno);
    }
    std::string shown = dir.string();
    if (S_ISLNK(st.st_mode)) {
        if (!is_root) {
            return shown + " is a symlink (" + describe(st) + "); the cache follows no symlink below its root";
        }
        if (!trusted_owner(st.st_uid)) {
            return shown + " is a symlink that is not yours (" + describe(st) + ")";
        }
        if (::stat(dir.c_str(), &st) != 0) {
            unusable = true;
            return shown + " is a symlink to nothing usable: " + std::strerror(errno);
        }
        shown += " (through a symlink)";
    }
    if (!S_ISDIR(st.st_mode)) {
        unusable = true;
        return shown + " is not a directory";
    }
    std::string why = mode_reason(st, shown, policy, /*sticky_ok=*/false);
    if (why.empty() && is_root) why = ancestor_reason(dir, policy);
    return why;
}

bool check_trusted_if_present(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                              const std::string& origin) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return false;
    bool path_problem = false;
    const std::string why = untrusted_reason(dir, is_root, policy, &path_problem);
    if (path_problem) {
        // A path that does not lead to a directory is a plain mistake, not a question of trust.
        throw ConfigError("the kernel cache dir (" + origin + ") cannot be used: " + why +
                          "; correct that, or set DG_JIT_CACHE_DIR to a directory of yours");
    }
    if (!why.empty()) {
        throw ConfigError("refusing the kernel cache dir (" + origin + "): " + why +
                          ". A cache directory must be yours (or root's) and writable by no one else, or the kernels "
                          "it holds could be someone else's (docs/cache.md)");
    }
    return true;
}

void make_trusted_dir(const std::filesystem::path& dir, bool is_root, const TrustPolicy& policy,
                      const std::string& origin) {
    const mode_t mode = static_cast<mode_t>(cache_dir_mode(policy));
    if (::mkdir(dir.c_str(), mode) == 0) {
        // mkdir's mode is masked by the umask; set it exactly (also the setgid bit of a shared cache).
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            ::fchmod(fd, mode);
            ::close(fd);
        }
    } else if (errno != EEXIST) {
        throw ConfigError("cannot create " + dir.string() + " for the kernel cache (" + origin + "): " +
                          std::strerror(errno) + "; set DG_JIT_CACHE_DIR to a writable directory");
    }
    check_trusted_if_present(dir, is_root, policy, origin);
}

void write_marker(const std::filesystem::path& dir) {
    write_file(dir / kMarkerName, "made by the deep_gemm kernel cache (docs/cache.md)\n");
}

bool made_by_cache(const std::filesystem::path& dir) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    if (::lstat((dir / kMarkerName).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
    // Entries of versions before the marker: a manifest this cache wrote.
    if (::lstat((dir / "manifest").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    const int fd = ::open((dir / "manifest").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    static const std::string magic = "deep_gemm-jit-manifest ";
    char head[32] = {};
    const ssize_t n = ::read(fd, head, magic.size());
    ::close(fd);
    return n == static_cast<ssize_t>(magic.size()) && magic.compare(0, magic.size(), head, magic.size()) == 0;
}

std::string root_origin(const std::filesystem::path& root) {
    try {
        const Settings& s = settings();
        if (s.cache_dir == root) return cache_settings().cache_dir_origin;
    } catch (const std::exception&) {
    }
    return "given as " + root.string();
}

}  // namespace deep_gemm::jit::detail
