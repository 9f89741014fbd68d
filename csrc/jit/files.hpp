// Small POSIX file helpers for the cache (durable writes, directory fsync). Internal to the JIT core.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace deep_gemm::jit::detail {

// Whole file, or nullopt when it cannot be opened/read (errno then tells why). Without `follow_symlinks`, a symlink (as the last
// component) counts as unreadable: cache entries are read that way.
std::optional<std::string> read_file(const std::filesystem::path& path, bool follow_symlinks = true);

// Creates/truncates `path` (never through a symlink) with mode 0644 whatever the umask, writes `data`, fsyncs
// and closes. Throws jit::Error on failure.
void write_file_durable(const std::filesystem::path& path, const std::string& data);

// The same without the fsync: for scratch files, and for compiler outputs that build() rewrites durably
// before publishing an entry.
void write_file(const std::filesystem::path& path, const std::string& data);

// fsync of a directory (its entries become durable). Best effort: failures are ignored.
void fsync_dir(const std::filesystem::path& dir) noexcept;

// Removes `path` and everything below it; best effort, never throws (see files.cpp for why not remove_all).
void remove_tree(const std::filesystem::path& path) noexcept;

}  // namespace deep_gemm::jit::detail
