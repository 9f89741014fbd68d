// The lock protocol of the kernel cache, shared by build() and the cache maintenance tools (cache_admin):
// one exclusive flock per key on <root>/locks/<key>.lock. A builder holds it from the final cache check
// until its entry is renamed into place, so while it is held the key's build directory is in use; a remover
// takes it without waiting and skips the key when it is busy. Lock files are never deleted: a process may
// hold an open descriptor to one, and deleting it would let a second process lock a new file of the same name.
#pragma once

#include <filesystem>
#include <string>

namespace deep_gemm::jit::detail {

std::filesystem::path key_lock_path(const std::filesystem::path& root, const std::string& key);

class FileLock {
public:
    enum class Mode { kWait, kTry };
    // kWait blocks until the lock is ours; kTry returns at once, held() telling whether it was free.
    // Throws ConfigError when the lock file cannot be opened.
    explicit FileLock(const std::filesystem::path& path, Mode mode = Mode::kWait);
    ~FileLock();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    bool held() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

}  // namespace deep_gemm::jit::detail
