// Helpers shared by the JIT core tests: temp dirs, scoped environment, a counting nvcc wrapper,
// the test kernels' sources.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cache.hpp"
#include "jit/jit.hpp"
#include "jit/settings.hpp"

namespace dg_test {

namespace fs = std::filesystem;

inline const fs::path kDataDir = DG_TEST_DATA_DIR;
inline const fs::path kTestInclude = kDataDir / "include";

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
public:
    explicit TempDir(const std::string& label = "dg_jit_test") {
        std::string tmpl = (fs::temp_directory_path() / (label + ".XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        // Read-only subdirectories (permission tests) would stop remove_all.
        for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (it->is_directory(ec) && !it->is_symlink(ec)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
        }
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// Sets (or unsets, with nullopt) environment variables for a scope and re-reads the settings.
class ScopedEnv {
public:
    ScopedEnv() = default;
    ScopedEnv(const std::string& name, std::optional<std::string> value) { set(name, std::move(value)); }
    ScopedEnv& set(const std::string& name, std::optional<std::string> value) {
        const char* old = std::getenv(name.c_str());
        saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
        if (value) {
            ::setenv(name.c_str(), value->c_str(), 1);
        } else {
            ::unsetenv(name.c_str());
        }
        deep_gemm::jit::reload_settings();
        return *this;
    }
    ~ScopedEnv() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) {
                ::setenv(it->first.c_str(), it->second->c_str(), 1);
            } else {
                ::unsetenv(it->first.c_str());
            }
        }
        deep_gemm::jit::reload_settings();
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Every DG_* variable unset (so the developer's environment cannot change a test), plus a cache dir.
inline void clear_dg_env(ScopedEnv& env) {
    for (const auto& info : deep_gemm::jit::setting_registry()) env.set(info.name, std::nullopt);
}

// Copies the directory tree `from` to `to` (creating the parents of `to`).
inline void copy_tree(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy(from, to, fs::copy_options::recursive);
}

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_text(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// Single-quotes `text` for a /bin/sh script.
inline std::string sh_quote(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    return out + "'";
}

// Writes an executable nvcc wrapper at `script` that appends a line to `counter` for every real compile
// (an invocation with -cubin) and then runs the real nvcc.
inline void write_counting_nvcc(const fs::path& script, const fs::path& counter) {
    write_text(script, "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = -cubin ]; then echo compile >> " +
                           sh_quote(counter.string()) + "; fi\ndone\nexec " + sh_quote(DG_TEST_NVCC) + " \"$@\"\n");
    fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
}

inline int count_lines(const fs::path& path) {
    std::ifstream in(path);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
}

inline std::vector<fs::path> list_dir(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
    return out;
}

// The wgmma test kernel: one FP8 wgmma from the test include tree.
inline deep_gemm::jit::KernelSource wgmma_source(const std::string& tag = "") {
    return {"dg_test_wgmma", "dg_test_wgmma",
            "// " + tag + "\n"
            "#include <dg_test/wgmma_probe.cuh>\n"
            "\n"
            "extern \"C\" __global__ void __launch_bounds__(128) dg_test_wgmma(float* out, int scale_d) {\n"
            "    __shared__ __align__(1024) unsigned char tiles[2][64 * 128];\n"
            "    for (int i = threadIdx.x; i < 64 * 128; i += 128) tiles[0][i] = tiles[1][i] = static_cast<unsigned char>(i);\n"
            "    __syncthreads();\n"
            "    float d[4] = {0.f, 0.f, 0.f, 0.f};\n"
            "    dg_test::wgmma_m64n8k32_e4m3(d, dg_test::smem_descriptor(tiles[0]), dg_test::smem_descriptor(tiles[1]), scale_d);\n"
            "    for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = d[i] + dg_test::lane_id();\n"
            "}\n"};
}

// A trivial kernel whose source differs by `value` (distinct cache keys).
inline deep_gemm::jit::KernelSource small_source(int value, const std::string& name = "dg_test_small") {
    return {name, "dg_test_small",
            "#include <dg_test/common.cuh>\n"
            "extern \"C\" __global__ void dg_test_small(int* out) {\n"
            "    out[threadIdx.x] = " + std::to_string(value) + " + static_cast<int>(dg_test::lane_id());\n"
            "}\n"};
}

// A kernel that needs local memory: a large array indexed at run time.
inline deep_gemm::jit::KernelSource spilling_source() {
    return {"dg_test_spill", "dg_test_spill",
            "extern \"C\" __global__ void dg_test_spill(float* out, int index) {\n"
            "    float buffer[512];\n"
            "    for (int i = 0; i < 512; ++i) buffer[i] = out[i * 7 % 512] * static_cast<float>(i);\n"
            "    out[threadIdx.x] = buffer[(index + threadIdx.x) & 511];\n"
            "}\n"};
}

}  // namespace dg_test
