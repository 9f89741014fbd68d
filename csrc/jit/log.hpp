// One logging entry point for the core. By default records go to stderr; the Python module installs a
// sink that forwards them to the `logging` logger "deep_gemm".
#pragma once

#include <functional>
#include <string>

namespace deep_gemm::jit {

// Values equal Python's logging levels so the sink can pass them through.
enum class LogLevel : int { kDebug = 10, kInfo = 20, kWarning = 30, kError = 40 };

using LogSink = std::function<void(LogLevel, const std::string&)>;

// Replaces the sink (an empty function restores the stderr default). Thread safe.
void set_log_sink(LogSink sink);

// Sends one record to the sink. Never throws.
void log(LogLevel level, const std::string& message);

}  // namespace deep_gemm::jit
