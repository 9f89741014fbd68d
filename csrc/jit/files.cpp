#include "files.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "errors.hpp"

namespace deep_gemm::jit::detail {

std::optional<std::string> read_file(const std::filesystem::path& path, bool follow_symlinks) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (follow_symlinks ? 0 : O_NOFOLLOW));
    if (fd < 0) return std::nullopt;
    std::string data;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) data.reserve(static_cast<std::size_t>(st.st_size));
    char buffer[65536];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n > 0) {
            data.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            const int err = errno;
            ::close(fd);
            errno = err;
            return std::nullopt;
        }
    }
    ::close(fd);
    return data;
}

namespace {
void write_whole_file(const std::filesystem::path& path, const std::string& data, bool durable) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw Error("cannot create " + path.string() + ": " + std::strerror(errno));
    // 0644 whatever the umask: in a group-shared cache, a member with umask 077 would otherwise write
    // entries the others cannot read (the directories, not the files, keep other users out).
    ::fchmod(fd, 0644);
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            throw Error("cannot write " + path.string() + ": " + std::strerror(err));
        }
        done += static_cast<std::size_t>(n);
    }
    if (durable && ::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error("cannot fsync " + path.string() + ": " + std::strerror(err));
    }
    if (::close(fd) != 0) throw Error("cannot close " + path.string() + ": " + std::strerror(errno));
}
}  // namespace

void write_file_durable(const std::filesystem::path& path, const std::string& data) {
    write_whole_file(path, data, /*durable=*/true);
}

void write_file(const std::filesystem::path& path, const std::string& data) {
    write_whole_file(path, data, /*durable=*/false);
}

void fsync_dir(const std::filesystem::path& dir) noexcept {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

// POSIX nftw rather than std::filesystem::remove_all: inside a PyTorch process the dynamic linker may bind
// remove_all to the copy libtorch exports, which crashed (a call through a null pointer) with the torch
// 2.11 wheels. Depth-first, not following symlinks; errors are ignored (best effort, as before).
void remove_tree(const std::filesystem::path& path) noexcept {
    auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) -> int {
        ::remove(p);  // unlink for files and symlinks, rmdir for (by then empty) directories
        return 0;
    };
    ::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace deep_gemm::jit::detail
