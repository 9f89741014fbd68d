// DG_JIT_RECORD lines (see record.hpp).
#include "record.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "log.hpp"

namespace deep_gemm::jit::detail {
namespace {

// JSON string literal of arbitrary bytes: the generated sources are ASCII; any other byte is escaped as
// \u00XX so the line stays valid JSON whatever the input.
std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (byte < 0x20 || byte >= 0x7f) {
                    char buffer[8];
                    std::snprintf(buffer, sizeof buffer, "\\u%04x", byte);
                    out += buffer;
                } else {
                    out.push_back(c);
                }
        }
    }
    return out + "\"";
}

std::atomic<bool> g_warned{false};

void warn_once(const std::string& message) noexcept {
    if (!g_warned.exchange(true)) log(LogLevel::kWarning, message);
}

}  // namespace

std::string format_record(const KernelSource& src, const std::string& arch) {
    return "{\"format\": " + std::to_string(kRecordFormat) + ", \"name\": " + json_string(src.name) +
           ", \"symbol\": " + json_string(src.symbol) + ", \"arch\": " + json_string(arch) +
           ", \"code\": " + json_string(src.code) + "}\n";
}

void append_record(const std::filesystem::path& file, const KernelSource& src, const std::string& arch) noexcept {
    try {
        const std::string line = format_record(src, arch);
        const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            warn_once("DG_JIT_RECORD: cannot open " + file.string() + ": " + std::strerror(errno) + "; not recording");
            return;
        }
        while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
        const ssize_t written = ::write(fd, line.data(), line.size());
        if (written != static_cast<ssize_t>(line.size())) {
            warn_once("DG_JIT_RECORD: cannot append to " + file.string() + ": " +
                      (written < 0 ? std::strerror(errno) : "short write"));
        }
        ::close(fd);  // releases the lock
    } catch (...) {
        warn_once("DG_JIT_RECORD: cannot record a kernel (out of memory)");
    }
}

}  // namespace deep_gemm::jit::detail
