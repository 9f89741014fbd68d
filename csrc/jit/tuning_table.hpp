// The tuning table of a kernel cache (docs/cache.md, "Tuning table"): the kernel configs `python -m deep_gemm
// tune` measured to beat the heuristics, per GPU model and problem signature, kept in <root>/tuning/table.
// Written whole to a temporary file, fsynced and renamed into place under the table's lock; read only from
// directories and a file the cache trusts (the kernel cache's rules), and only when complete (its last line
// counts the entries and carries the SHA-256 of the lines before it). Torch-free.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit.hpp"

namespace deep_gemm::jit {

// The GPU model a pick was measured on: its SM count and clocks class (the peak SM clock in 100 MHz steps),
// e.g. "sm132-1900mhz". A table entry of another model is ignored.
std::string gpu_model(int sm_count, int clock_mhz);
inline std::string gpu_model(const DeviceInfo& device) { return gpu_model(device.sm_count, device.clock_mhz); }

struct TuningEntry {
    std::string gpu;        // gpu_model()
    std::string variable;   // the kernel's forced-config variable, e.g. "DG_FP8_GEMM_CONFIG"
    std::string signature;  // the problem signature (the config query the planner sees; grouped: M bucketed)
    std::string config;     // the pick, in the variable's syntax
    double heuristic_us = 0, tuned_us = 0;  // as measured by `tune`
    bool operator==(const TuningEntry&) const = default;
};

std::filesystem::path tuning_table_path(const std::filesystem::path& root);

// The file's text and its parser (jit::Error naming what is wrong: a damaged or half-written table).
std::string format_tuning_table(const std::vector<TuningEntry>& entries);
std::vector<TuningEntry> parse_tuning_table(std::string_view text);

// The table of a cache root (empty when absent). Throws ConfigError when the root, tuning/ or the file may
// not be trusted (docs/cache.md: owner and mode, no symlinks), jit::Error when the file is damaged.
std::vector<TuningEntry> read_tuning_table(const std::filesystem::path& root);

// Adds `entries` to the root's table (replacing those of the same GPU, variable and signature) under the
// table's lock, and publishes the new table atomically. Throws as read_tuning_table, and jit::Error when
// an entry has a tab or newline in a field.
void merge_tuning_entries(const std::filesystem::path& root, const std::vector<TuningEntry>& entries);

// The planner's view: the pick for (gpu, variable, signature) in the table of the current settings' cache
// root, or nullopt (none, DG_JIT_TUNING=0, or a table that cannot be trusted or read: a warning, once per
// settings generation). Loaded once per settings generation (reload_settings() rereads it).
std::optional<std::string> tuned_config(const std::string& gpu, std::string_view variable, std::string_view signature);

}  // namespace deep_gemm::jit
