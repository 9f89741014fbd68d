// DG_JIT_RECORD: a list of the kernels a process used, for warming another cache with exactly those
// (`python -m deep_gemm warmup FILE`). Each kernel the process builds or finds on disk (the first time it
// asks for it) appends one JSON line {"format", "name", "symbol", "arch", "code"} to the file. The generated
// source itself is recorded, not the call that led to it, so a warm-up rebuilds exactly the cache keys the
// recorded run used, whatever the heuristics. Many processes may record into one file: each line is
// written with one write() under an exclusive flock of the file.
#pragma once

#include <filesystem>
#include <string>

#include "jit.hpp"

namespace deep_gemm::jit::detail {

inline constexpr int kRecordFormat = 1;

// The JSON line (with its '\n') recorded for `src` built for `arch`.
std::string format_record(const KernelSource& src, const std::string& arch);

// Appends format_record() to `file`. Never throws: a failure is logged once per process as a warning.
void append_record(const std::filesystem::path& file, const KernelSource& src, const std::string& arch) noexcept;

}  // namespace deep_gemm::jit::detail
