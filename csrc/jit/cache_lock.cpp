// flock-based per-key lock of the kernel cache (see cache_lock.hpp for the protocol).
#include "cache_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "errors.hpp"
#include "cache_settings.hpp"

namespace deep_gemm::jit::detail {

std::filesystem::path key_lock_path(const std::filesystem::path& root, const std::string& key) {
    return root / "locks" / (key + ".lock");
}

FileLock::FileLock(const std::filesystem::path& path, Mode mode) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        throw ConfigError("cannot open lock file " + path.string() + ": " + std::strerror(errno) +
                          "; set DG_JIT_CACHE_DIR to a writable directory");
    }
    // A cache shared by a group (DG_JIT_CACHE_TRUST_GROUP) needs its lock files writable by the group.
    struct stat st;
    if (cache_settings().trust_group && ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid()) ::fchmod(fd, 0660);
    const int operation = mode == Mode::kTry ? (LOCK_EX | LOCK_NB) : LOCK_EX;
    while (::flock(fd, operation) != 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        if (mode == Mode::kTry && err == EWOULDBLOCK) return;  // busy: held() is false
        throw ConfigError("cannot lock " + path.string() + ": " + std::strerror(err));
    }
    fd_ = fd;
}

FileLock::~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace deep_gemm::jit::detail
