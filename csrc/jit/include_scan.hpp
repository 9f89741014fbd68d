// Finds the headers a generated source includes from the include root, transitively, for the cache key.
// Internal to the JIT core.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace deep_gemm::jit::detail {

struct IncludedHeader {
    std::string relative_path;  // relative to the include root, '/'-separated, e.g. "deep_gemm/ptx/wgmma_atoms.cuh"
    std::string content;
    std::string digest;  // sha256_hex(content) when scan_includes filled it (empty: not computed)
};

// Every file reachable from `source` through `#include <...>` / `#include "..."` lines that resolves
// under `include_root` ("..." also relative to the including header). Headers not found there (system
// and toolkit headers) are skipped. Conditionals are ignored, so the set may be larger than what the
// preprocessor reads, never smaller. Sorted by relative path. When `outside` is given, it receives the
// targets not found under the root (sorted, without duplicates), e.g. "cuda_fp16.h": a kernel with none
// uses only our own headers, which is what lets the compilers leave most CUDA headers out.
// A header's content, digest and include lines are read once per process and reused while its stat (device,
// inode, size, modification time in ns) is unchanged: a warm cache's first use of each kernel then costs a
// stat per header instead of reading and hashing them all (~1.3 ms per kernel before).

std::vector<IncludedHeader> scan_includes(const std::string& source, const std::filesystem::path& include_root,
                                          std::vector<std::string>* outside = nullptr);

// The targets of the #include lines of `text`, in order (exposed for tests).
std::vector<std::string> parse_include_lines(const std::string& text);

}  // namespace deep_gemm::jit::detail
