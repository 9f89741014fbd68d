// Helpers shared by the compile-only kernel tests (test_kernel_fp8_1d2d_compile.cpp,
// test_kernel_bf16_compile.cpp): the H200 limits the heuristics are checked against, shape grids, a SASS
// instruction counter and a fixture that builds a generated kernel for sm_90a with SASS dumps in a private
// cache dir and runs the checks common to every kernel (the symbol is there, no local memory).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "jit/jit.hpp"
#include "test_util.hpp"

#ifndef DG_SOURCE_INCLUDE_DIR
#error "DG_SOURCE_INCLUDE_DIR must point at deep_gemm/include"
#endif
#ifndef DG_TEST_CUOBJDUMP
#define DG_TEST_CUOBJDUMP ""
#endif
#ifndef DG_TEST_NVDISASM_DIR
#define DG_TEST_NVDISASM_DIR ""
#endif

namespace dg_test {

constexpr int kH200Sms = 132;
constexpr int kH200SmemOptin = 232448;

// Every (m, n, k) with m from `ms` and (n, k) from `nks`, m outermost.
template <size_t kNumM, size_t kNumNK>
std::vector<std::tuple<int, int, int>> shape_grid(const int (&ms)[kNumM], const int (&nks)[kNumNK][2]) {
    std::vector<std::tuple<int, int, int>> shapes;
    for (int m : ms)
        for (const auto& nk : nks) shapes.emplace_back(m, nk[0], nk[1]);
    return shapes;
}

// Counts SASS instructions whose mnemonic starts with `op` (e.g. "LDL" matches "LDL" and "LDL.64").
inline int count_op(const std::string& sass, const std::string& op) {
    int count = 0;
    std::istringstream lines(sass);
    std::string line;
    while (std::getline(lines, line)) {
        // Instruction lines look like "        /*0a10*/                   QGMMA.64x128x32.F32.E4M3.E4M3 ..."
        const size_t close = line.find("*/");
        if (line.find("/*") == std::string::npos || close == std::string::npos) continue;
        size_t p = line.find_first_not_of(" \t", close + 2);
        if (p == std::string::npos) continue;
        if (line[p] == '@') {  // predicate guard
            p = line.find(' ', p);
            if (p == std::string::npos) continue;
            p = line.find_first_not_of(' ', p);
            if (p == std::string::npos) continue;
        }
        if (line.compare(p, op.size(), op) == 0) {
            const char next = p + op.size() < line.size() ? line[p + op.size()] : ' ';
            if (next == '.' || next == ' ' || next == ';') ++count;
        }
    }
    return count;
}

// Every key yields its own kernel symbol and a translation unit defining an `extern "C" __global__` entry
// (that includes `header`, when given).
template <typename Key, typename MakeSource>
void expect_distinct_sources(const std::vector<Key>& keys, MakeSource make_source, const std::string& header = "") {
    std::set<std::string> symbols;
    for (const auto& key : keys) {
        const auto src = make_source(key);
        EXPECT_TRUE(symbols.insert(src.symbol).second) << src.symbol;
        EXPECT_NE(src.code.find("extern \"C\" __global__"), std::string::npos);
        if (!header.empty()) {
            EXPECT_NE(src.code.find("#include <" + header + ">"), std::string::npos);
        }
    }
}

// Per test: a fresh JIT cache dir named `<cache_prefix><pid>_<test name>` under the temp dir, SASS dumps,
// spills as compile errors and the SASS tools CMake found; everything restored afterwards.
class KernelCompileTest : public ::testing::Test {
protected:
    explicit KernelCompileTest(std::string cache_prefix) : cache_prefix_(std::move(cache_prefix)) {}

    void SetUp() override {
        cache_dir_ = std::filesystem::temp_directory_path() /
                     (cache_prefix_ + std::to_string(::getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(cache_dir_);
        std::filesystem::create_directories(cache_dir_);
        env_.emplace();
        env_->set("DG_JIT_CACHE_DIR", cache_dir_.string());
        env_->set("DG_JIT_DUMP_SASS", "1");
        env_->set("DG_JIT_PTXAS_CHECK", "1");
        if (std::string(DG_TEST_CUOBJDUMP).size() > 0) env_->set("DG_JIT_CUOBJDUMP", DG_TEST_CUOBJDUMP);
        if (std::string(DG_TEST_NVDISASM_DIR).size() > 0 && std::getenv("NVDISASM_PATH") == nullptr)
            env_->set("NVDISASM_PATH", DG_TEST_NVDISASM_DIR);
        deep_gemm::jit::set_include_dir(DG_SOURCE_INCLUDE_DIR);
    }

    void TearDown() override {
        env_.reset();  // restores the variables and re-reads the settings
        std::error_code ec;
        std::filesystem::remove_all(cache_dir_, ec);
    }

    // Builds `src` (a generated kernel: name, symbol, code, smem_bytes) for sm_90a, checks that it fits
    // the H200's shared memory and that its SASS has the symbol, runs `check` on the SASS text, and checks
    // that the SASS uses no local memory.
    template <typename Source>
    void build_and_check_sass(const Source& src, const std::function<void(const std::string& sass)>& check) {
        SCOPED_TRACE(src.symbol);
        EXPECT_LE(src.smem_bytes, kH200SmemOptin);
        deep_gemm::jit::CachedKernel entry;
        ASSERT_NO_THROW(entry = deep_gemm::jit::build({src.name, src.symbol, src.code}, "sm_90a"));
        const std::filesystem::path sass_path = entry.dir / "kernel.sass";
        ASSERT_TRUE(std::filesystem::exists(sass_path)) << sass_path;
        const std::string sass = read_text(sass_path);
        EXPECT_NE(sass.find(src.symbol), std::string::npos);
        check(sass);
        EXPECT_EQ(count_op(sass, "LDL"), 0) << "local-memory load in SASS";
        EXPECT_EQ(count_op(sass, "STL"), 0) << "local-memory store in SASS";
    }

    // The wgmma descriptors (and the pipeline slot they come from) stay in uniform registers: no R2UR between a
    // kernel's first and last `mma_op` (QGMMA). When ptxas takes the tile loop for divergent (a loop
    // ended, or an epilogue skipped, on loaded data) it computes them in vector registers and moves each over
    // before every wgmma (docs/kernels/sm90_fp8_gemm_1d2d.md, "Uniform K loops").
    static void expect_uniform_wgmma_descriptors(const std::string& sass, const std::string& mma_op) {
        const size_t first = sass.find(mma_op), last = sass.rfind(mma_op);
        ASSERT_NE(first, std::string::npos) << "no " << mma_op << " in SASS";
        EXPECT_EQ(count_op(sass.substr(first, last - first), "R2UR"), 0)
            << "R2UR between the wgmmas: descriptors moved from vector registers in the K loop";
    }

    // Programmatic dependent launch: a kernel launched with the PDL attribute may start while the previous
    // one still writes its inputs, so it must wait (griddepcontrol.wait = ACQBULK) before its first TMA load,
    // and it signals its dependents (griddepcontrol.launch_dependents = PREEXIT). The instructions are in
    // every kernel (no-ops without the attribute), so this checks the one variant that serves both launches.
    static void expect_pdl_hooks(const std::string& sass) {
        EXPECT_GT(count_op(sass, "ACQBULK"), 0) << "no griddepcontrol.wait (PDL) in SASS";
        EXPECT_GT(count_op(sass, "PREEXIT"), 0) << "no griddepcontrol.launch_dependents (PDL) in SASS";
        const size_t wait = sass.find("ACQBULK"), first_load = sass.find("UTMALDG");
        EXPECT_LT(wait, first_load) << "the PDL wait comes after a TMA load in the SASS";
    }

    std::filesystem::path cache_dir_;

private:
    std::string cache_prefix_;
    std::optional<ScopedEnv> env_;
};

}  // namespace dg_test
