// Compile-only checks of the shipped kernel configs (no GPU needed): every config the SM90 FP8 heuristics
// emit over a representative shape set is generated, built for sm_90a with NVCC (a subset also with
// NVRTC), and its SASS is checked: FP8 wgmma (QGMMA), TMA loads and stores (UTMALDG / UTMASTG), and no
// local memory (LDL / STL). DG_JIT_PTXAS_CHECK=1 additionally makes any spill a compile error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "jit/jit.hpp"
#include "jit_kernels/heuristics/sm90_fp8.hpp"
#include "jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp"

namespace {

using deep_gemm::heuristics::Sm90Fp8GemmConfig;
using deep_gemm::kernels::Sm90Fp8GemmKernelKey;

constexpr int kH200Sms = 132;
constexpr int kH200SmemOptin = 232448;

#ifndef DG_SOURCE_INCLUDE_DIR
#error "DG_SOURCE_INCLUDE_DIR must point at deep_gemm/include"
#endif
#ifndef DG_TEST_CUOBJDUMP
#define DG_TEST_CUOBJDUMP ""
#endif
#ifndef DG_TEST_NVDISASM_DIR
#define DG_TEST_NVDISASM_DIR ""
#endif

// Sets an environment variable for the lifetime of the object and restores the old value afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) {
            had_ = true;
            old_ = old;
        }
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had_) ::setenv(name_, old_.c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    bool had_ = false;
    std::string old_;
};

// The shapes the library is tuned and tested for (TARGETS.md, the GPU tests, typical LLM projections).
std::vector<std::tuple<int, int, int>> representative_shapes() {
    const int ms[] = {1, 64, 100, 128, 256, 512, 1000, 2048, 4096, 8192};
    const int nks[][2] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384}, {4096, 7168}, {7168, 2048},
                          {576, 7168},  {100, 512},    {129280, 7168}, {2112, 192}, {576, 1536}, {4096, 512}};
    std::vector<std::tuple<int, int, int>> shapes;
    for (int m : ms)
        for (const auto& nk : nks) shapes.emplace_back(m, nk[0], nk[1]);
    return shapes;
}

// Every distinct config the heuristics pick for those shapes (all dims at run time) plus a few
// instances with N and K compiled in (the default `compiled_dims='nk'`).
std::vector<Sm90Fp8GemmKernelKey> shipped_fp8_keys() {
    std::set<std::tuple<int, int, int, int>> seen;
    std::vector<Sm90Fp8GemmKernelKey> keys;
    for (const auto& [m, n, k] : representative_shapes()) {
        const Sm90Fp8GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin);
        if (!seen.insert({c.block_m, c.block_n, c.num_stages, c.group_n + 100 * c.pipelined + 1000 * c.multicast}).second)
            continue;
        Sm90Fp8GemmKernelKey key;
        key.block_m = c.block_m;
        key.block_n = c.block_n;
        key.num_stages = c.num_stages;
        key.group_n = c.group_n;
        key.pipelined = c.pipelined;
        key.multicast = c.multicast;
        keys.push_back(key);
    }
    for (const auto& [m, n, k] : {std::tuple{4096, 7168, 16384}, std::tuple{128, 2112, 7168}, std::tuple{1, 576, 192}}) {
        const Sm90Fp8GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin);
        Sm90Fp8GemmKernelKey key;
        key.block_m = c.block_m;
        key.block_n = c.block_n;
        key.num_stages = c.num_stages;
        key.group_n = c.group_n;
        key.pipelined = c.pipelined;
        key.multicast = c.multicast;
        key.n = uint32_t(n);
        key.k = uint32_t(k);
        keys.push_back(key);
    }
    // Pipelined promotion (two scratch accumulators; DG_FP8_GEMM_CONFIG / sweeps): uniform and straddling
    // B scales, both warpgroup counts, the widest BLOCK_N it allows.
    for (const auto& [bm, bn] : {std::pair{128, 128}, std::pair{128, 112}, std::pair{128, 96}, std::pair{64, 128},
                                 std::pair{64, 64}}) {
        Sm90Fp8GemmKernelKey key;
        key.block_m = bm;
        key.block_n = bn;
        key.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin);
        key.pipelined = true;
        if (!seen.insert({bm, bn, key.num_stages, key.group_n + 100}).second) continue;
        keys.push_back(key);
    }
    // 2-CTA cluster multicast of B (M pairs) and of A (N pairs), with and without pipelined promotion.
    for (const auto& [bm, bn, pp, mc] : {std::tuple{128, 192, 0, 1}, std::tuple{128, 128, 1, 1},
                                         std::tuple{128, 128, 1, 2}, std::tuple{64, 96, 1, 2},
                                         std::tuple{128, 112, 0, 2}}) {
        Sm90Fp8GemmKernelKey key;
        key.block_m = bm;
        key.block_n = bn;
        key.num_stages = deep_gemm::heuristics::sm90_fp8_max_stages(bm, bn, kH200SmemOptin);
        key.pipelined = pp;
        key.multicast = mc;
        if (!seen.insert({bm, bn, key.num_stages, key.group_n + 100 * pp + 1000 * mc}).second) continue;
        keys.push_back(key);
    }
    // Direct-store epilogue (outputs TMA cannot address, e.g. N = 100 contiguous).
    for (const auto& [m, n, k] : {std::tuple{128, 100, 512}, std::tuple{4096, 100, 7168}}) {
        const Sm90Fp8GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin);
        Sm90Fp8GemmKernelKey key;
        key.block_m = c.block_m;
        key.block_n = c.block_n;
        key.num_stages = c.num_stages;
        key.group_n = c.group_n;
        key.pipelined = c.pipelined;
        key.multicast = c.multicast;
        key.direct_store = true;
        keys.push_back(key);
    }
    return keys;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Counts SASS instructions whose mnemonic starts with `op` (e.g. "LDL" matches "LDL" and "LDL.64").
int count_op(const std::string& sass, const std::string& op) {
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

class KernelCompile : public ::testing::Test {
protected:
    void SetUp() override {
        cache_dir_ = std::filesystem::temp_directory_path() /
                     ("dg_kernel_compile_" + std::to_string(::getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(cache_dir_);
        std::filesystem::create_directories(cache_dir_);
        envs_.emplace_back(std::make_unique<ScopedEnv>("DG_JIT_CACHE_DIR", cache_dir_.string()));
        envs_.emplace_back(std::make_unique<ScopedEnv>("DG_JIT_DUMP_SASS", "1"));
        envs_.emplace_back(std::make_unique<ScopedEnv>("DG_JIT_PTXAS_CHECK", "1"));
        if (std::string(DG_TEST_CUOBJDUMP).size() > 0)
            envs_.emplace_back(std::make_unique<ScopedEnv>("DG_JIT_CUOBJDUMP", DG_TEST_CUOBJDUMP));
        if (std::string(DG_TEST_NVDISASM_DIR).size() > 0 && std::getenv("NVDISASM_PATH") == nullptr)
            envs_.emplace_back(std::make_unique<ScopedEnv>("NVDISASM_PATH", DG_TEST_NVDISASM_DIR));
        deep_gemm::jit::set_include_dir(DG_SOURCE_INCLUDE_DIR);
    }

    void TearDown() override {
        envs_.clear();
        deep_gemm::jit::reload_settings();
        std::error_code ec;
        std::filesystem::remove_all(cache_dir_, ec);
    }

    void build_and_check(const Sm90Fp8GemmKernelKey& key) {
        const auto src = deep_gemm::kernels::sm90_fp8_gemm_1d2d_source(key);
        SCOPED_TRACE(src.symbol);
        EXPECT_LE(src.smem_bytes, kH200SmemOptin);
        deep_gemm::jit::CachedKernel entry;
        ASSERT_NO_THROW(entry = deep_gemm::jit::build({src.name, src.symbol, src.code}, "sm_90a"));
        const std::filesystem::path sass_path = entry.dir / "kernel.sass";
        ASSERT_TRUE(std::filesystem::exists(sass_path)) << sass_path;
        const std::string sass = read_text(sass_path);
        EXPECT_NE(sass.find(src.symbol), std::string::npos);
        EXPECT_GT(count_op(sass, "QGMMA"), 0) << "no FP8 wgmma in SASS";
        EXPECT_GT(count_op(sass, "UTMALDG"), 0) << "no TMA load in SASS";
        if (key.direct_store) {
            EXPECT_EQ(count_op(sass, "UTMASTG"), 0) << "direct-store epilogue uses no TMA store";
            EXPECT_GT(count_op(sass, "STG"), 0) << "no global store in SASS";
        } else {
            EXPECT_GT(count_op(sass, "UTMASTG"), 0) << "no TMA store in SASS";
        }
        EXPECT_EQ(count_op(sass, "LDL"), 0) << "local-memory load in SASS";
        EXPECT_EQ(count_op(sass, "STL"), 0) << "local-memory store in SASS";
    }

    std::filesystem::path cache_dir_;
    std::vector<std::unique_ptr<ScopedEnv>> envs_;
};

TEST(KernelConfigs, Sm90Fp8HeuristicsAreValid) {
    for (const auto& [m, n, k] : representative_shapes()) {
        const Sm90Fp8GemmConfig c = deep_gemm::heuristics::choose_sm90_fp8_config(m, n, k, kH200Sms, kH200SmemOptin);
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ": " +
                     deep_gemm::heuristics::to_string(c));
        EXPECT_TRUE(c.block_m == 64 || c.block_m == 128);
        if (m <= 64) {
            EXPECT_EQ(c.block_m, 64);
        }
        EXPECT_EQ(c.block_n % 16, 0);
        EXPECT_GE(c.block_n, 16);
        EXPECT_LE(c.block_n, deep_gemm::heuristics::kSm90Fp8MaxBlockN);
        EXPECT_GE(c.num_stages, deep_gemm::heuristics::kSm90Fp8MinStages);
        EXPECT_LE(deep_gemm::heuristics::sm90_fp8_smem_bytes(c.block_m, c.block_n, c.num_stages), kH200SmemOptin);
    }
}

TEST(KernelConfigs, Sm90Fp8SourceIsDistinctPerKey) {
    std::set<std::string> symbols;
    for (const auto& key : shipped_fp8_keys()) {
        const auto src = deep_gemm::kernels::sm90_fp8_gemm_1d2d_source(key);
        EXPECT_TRUE(symbols.insert(src.symbol).second) << src.symbol;
        EXPECT_NE(src.code.find("extern \"C\" __global__"), std::string::npos);
        EXPECT_NE(src.code.find("#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>"), std::string::npos);
    }
}

TEST_F(KernelCompile, Sm90Fp8Gemm1d2dNvcc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "0");
    deep_gemm::jit::reload_settings();
    for (const auto& key : shipped_fp8_keys()) build_and_check(key);
}

TEST_F(KernelCompile, Sm90Fp8Gemm1d2dNvrtc) {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "1");
    deep_gemm::jit::reload_settings();
    // A subset: both math-warpgroup counts, uniform and straddling B scales, each D swizzle width.
    const auto keys = shipped_fp8_keys();
    std::set<std::tuple<int, int>> kinds;
    for (const auto& key : keys) {
        const int swizzle = deep_gemm::heuristics::sm90_fp8_d_swizzle_bytes(key.block_n);
        const int straddles = (128 % key.block_n) != 0;
        if (!kinds.insert({key.block_m * 1000 + swizzle + (key.direct_store ? 100000 : 0) + (key.pipelined ? 1000000 : 0) +
                               key.multicast * 10000000,
                           straddles}).second)
            continue;
        build_and_check(key);
    }
    EXPECT_GE(kinds.size(), 3u);
}

}  // namespace
