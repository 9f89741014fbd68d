// The logging entry point: one sink (stderr by default), replaceable by the Python module.
#include "log.hpp"

#include <cstdio>
#include <memory>
#include <mutex>

namespace deep_gemm::jit {
namespace {

std::mutex g_sink_mutex;
LogSink g_sink;  // empty: stderr

const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::kDebug: return "DEBUG";
        case LogLevel::kInfo: return "INFO";
        case LogLevel::kWarning: return "WARNING";
        case LogLevel::kError: return "ERROR";
    }
    return "LOG";
}

void write_stderr(LogLevel level, const std::string& message) {
    std::string line = "[deep_gemm] ";
    line += level_name(level);
    line += ": ";
    line += message;
    if (line.empty() || line.back() != '\n') line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

}  // namespace

void set_log_sink(LogSink sink) {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    g_sink = std::move(sink);
}

void log(LogLevel level, const std::string& message) {
    try {
        LogSink sink;
        {
            std::lock_guard<std::mutex> lock(g_sink_mutex);
            sink = g_sink;
        }
        // The sink runs outside the lock: a Python sink takes the GIL and may log again.
        if (sink) {
            sink(level, message);
        } else {
            write_stderr(level, message);
        }
    } catch (...) {
        // Logging never throws (the Python sink may raise; its error is dropped here).
    }
}

}  // namespace deep_gemm::jit
