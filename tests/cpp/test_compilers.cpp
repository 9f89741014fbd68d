// NVCC and NVRTC through build(): a real sm_90a wgmma kernel, dumps, ptxas check, failures.
#include <chrono>
#include <cstdio>

#include "jit/compiler.hpp"
#include "jit/errors.hpp"
#include "jit/log.hpp"
#include "jit/subprocess.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

namespace {

bool have_cuobjdump() { return std::string(DG_TEST_CUOBJDUMP).size() > 0; }

std::string sass_of(const fs::path& cubin) {
    std::vector<std::string> env;
    if (std::string(DG_TEST_NVDISASM_DIR).size() > 0) env.push_back(std::string("NVDISASM_PATH=") + DG_TEST_NVDISASM_DIR);
    const auto result = detail::run_process({DG_TEST_CUOBJDUMP, "--dump-sass", cubin.string()}, {}, env);
    EXPECT_TRUE(result.ok()) << result.err;
    return result.out;
}

class Compilers : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override {
        dg_test::clear_dg_env(env_);
        env_.set("DG_JIT_CACHE_DIR", cache_.path().string());
        env_.set("DG_JIT_USE_NVRTC", nvrtc() ? "1" : "0");
        if (have_cuobjdump()) env_.set("DG_JIT_CUOBJDUMP", DG_TEST_CUOBJDUMP);
        if (std::string(DG_TEST_NVDISASM_DIR).size() > 0 && std::getenv("NVDISASM_PATH") == nullptr) {
            env_.set("NVDISASM_PATH", DG_TEST_NVDISASM_DIR);
        }
        set_include_dir(dg_test::kTestInclude);
    }
    void TearDown() override { set_log_sink({}); }
    bool nvrtc() const { return GetParam(); }
    const char* kind() const { return nvrtc() ? "nvrtc" : "nvcc"; }

    dg_test::TempDir cache_;
    dg_test::ScopedEnv env_;
};

}  // namespace

TEST_P(Compilers, WgmmaKernelToCubinWithGmmaSass) {
    const auto start = std::chrono::steady_clock::now();
    const CachedKernel entry = build(dg_test::wgmma_source(std::string("cold ") + kind()), "sm_90a");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ timing   ] cold %s compile of the wgmma test kernel: %.3f s\n", kind(), seconds);
    EXPECT_TRUE(entry.compiled);
    ASSERT_GT(entry.cubin.size(), 4u);
    EXPECT_EQ(entry.cubin.substr(0, 4), std::string("\x7f" "ELF")) << "a cubin (ELF), not PTX";
    EXPECT_EQ(entry.dir.parent_path(), cache_.path() / "cache");
    EXPECT_EQ(entry.dir.filename().string().rfind("kernel.dg_test_wgmma.", 0), 0u) << entry.dir;
    for (const char* file : {"kernel.cu", "kernel.cubin", "manifest"}) EXPECT_TRUE(fs::exists(entry.dir / file)) << file;
    EXPECT_FALSE(fs::exists(entry.dir / "kernel.ptx"));
    EXPECT_FALSE(fs::exists(entry.dir / "kernel.sass"));
    EXPECT_TRUE(dg_test::list_dir(cache_.path() / "tmp").empty());
    const std::string manifest = dg_test::read_text(entry.dir / "manifest");
    EXPECT_NE(manifest.find(std::string("compiler ") + kind()), std::string::npos) << manifest;
    EXPECT_EQ(manifest.find(dg_test::kTestInclude.string()), std::string::npos) << "no absolute include path";

    // Found on disk by a fresh process (memo cleared), from memory within this one.
    detail::clear_build_memo();
    const CachedKernel again = build(dg_test::wgmma_source(std::string("cold ") + kind()), "sm_90a");
    EXPECT_FALSE(again.compiled);
    EXPECT_EQ(again.dir, entry.dir);
    EXPECT_EQ(again.cubin, entry.cubin);

    if (!have_cuobjdump()) GTEST_SKIP() << "no cuobjdump found at configure time: SASS not checked";
    const std::string sass = sass_of(entry.dir / "kernel.cubin");
    EXPECT_NE(sass.find("GMMA"), std::string::npos) << sass;
    EXPECT_NE(sass.find("code for sm_90a"), std::string::npos) << "SASS for the real arch, not PTX for the driver to JIT";
    EXPECT_NE(sass.find("dg_test_wgmma"), std::string::npos);
    EXPECT_EQ(sass.find("STL"), std::string::npos) << "no local memory";
}

TEST_P(Compilers, DumpsPtxAndSassWhenAsked) {
    if (!have_cuobjdump()) GTEST_SKIP() << "no cuobjdump found at configure time";
    env_.set("DG_JIT_DUMP_PTX", "1");
    const CachedKernel ptx_only = build(dg_test::wgmma_source("ptx"), "sm_90a");
    EXPECT_TRUE(fs::exists(ptx_only.dir / "kernel.ptx"));
    EXPECT_FALSE(fs::exists(ptx_only.dir / "kernel.sass"));
    const std::string ptx = dg_test::read_text(ptx_only.dir / "kernel.ptx");
    EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos);
    EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos) << ptx.substr(0, 400);

    env_.set("DG_JIT_DUMP_PTX", std::nullopt).set("DG_JIT_DUMP_ASM", "1");
    const CachedKernel both = build(dg_test::wgmma_source("ptx"), "sm_90a");
    EXPECT_TRUE(both.compiled) << "asking for dumps gives an entry that has them";
    EXPECT_NE(both.dir, ptx_only.dir);
    EXPECT_NE(dg_test::read_text(both.dir / "kernel.ptx").find("wgmma.mma_async"), std::string::npos);
    const std::string sass = dg_test::read_text(both.dir / "kernel.sass");
    EXPECT_NE(sass.find("GMMA"), std::string::npos) << sass;
}

TEST_P(Compilers, PtxasCheckRejectsLocalMemory) {
    const CachedKernel fine = build(dg_test::spilling_source(), "sm_90a");
    EXPECT_TRUE(fine.compiled) << "compiles without the check";

    std::vector<std::string> infos;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kInfo) infos.push_back(message);
    });
    env_.set("DG_JIT_PTXAS_CHECK", "1");
    try {
        build(dg_test::spilling_source(), "sm_90a");
        FAIL() << "expected CompileError";
    } catch (const CompileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("DG_JIT_PTXAS_CHECK"), std::string::npos) << what;
        EXPECT_NE(what.find("dg_test_spill"), std::string::npos) << what;
        EXPECT_NE(what.find("stack frame"), std::string::npos) << what;
    }
    EXPECT_TRUE(dg_test::list_dir(cache_.path() / "tmp").empty()) << "failed builds leave nothing in tmp/";
    // The rejected compile was announced, and never reported as a success.
    bool started = false, succeeded = false;
    for (const auto& m : infos) {
        started = started || m.rfind("compiling kernel dg_test_spill", 0) == 0;
        succeeded = succeeded || m.rfind("compiled kernel dg_test_spill", 0) == 0;
    }
    EXPECT_TRUE(started);
    EXPECT_FALSE(succeeded);
    // A clean kernel passes the check.
    EXPECT_NO_THROW(build(dg_test::wgmma_source("checked"), "sm_90a"));
}

TEST_P(Compilers, PtxasVerboseLogsTheReport) {
    std::vector<std::string> infos;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kInfo) infos.push_back(message);
    });
    env_.set("DG_JIT_PTXAS_VERBOSE", "1").set("DG_JIT_PRINT_COMPILER_COMMAND", "1");
    build(dg_test::wgmma_source("verbose"), "sm_90a");
    bool report = false, command = false;
    for (const auto& m : infos) {
        report = report || (m.find("ptxas report") != std::string::npos && m.find("registers") != std::string::npos);
        command = command || m.find(nvrtc() ? "--gpu-architecture=sm_90a" : "-gencode=arch=compute_90a,code=sm_90a") != std::string::npos;
    }
    EXPECT_TRUE(report);
    EXPECT_TRUE(command);
}

TEST_P(Compilers, CompileErrorCarriesNameCommandStatusAndLog) {
    KernelSource bad{"dg_test_broken", "dg_test_broken",
                     "extern \"C\" __global__ void dg_test_broken() { this_is_not_declared = 1; }\n"};
    // A kernel's own error is no toolkit problem: no warning about the trimmed headers (NVCC retries with
    // the full ones and fails again).
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    try {
        build(bad, "sm_90a");
        FAIL() << "expected CompileError";
    } catch (const CompileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("dg_test_broken"), std::string::npos) << what;
        EXPECT_NE(what.find("this_is_not_declared"), std::string::npos) << "compiler log: " << what;
        EXPECT_NE(what.find("command"), std::string::npos) << what;
        if (nvrtc()) {
            EXPECT_NE(what.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << what;
            EXPECT_NE(what.find("--gpu-architecture=sm_90a"), std::string::npos) << what;
        } else {
            EXPECT_NE(what.find("exit status"), std::string::npos) << what;
            EXPECT_NE(what.find("-cubin"), std::string::npos) << what;
        }
    }
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    EXPECT_TRUE(dg_test::list_dir(cache_.path() / "tmp").empty());
    EXPECT_TRUE(dg_test::list_dir(cache_.path() / "cache").empty());
}

TEST_P(Compilers, MissingCuobjdumpIsAConfigError) {
    env_.set("DG_JIT_DUMP_SASS", "1").set("DG_JIT_CUOBJDUMP", "/nonexistent/cuobjdump");
    try {
        build(dg_test::small_source(1), "sm_90a");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("DG_JIT_CUOBJDUMP='/nonexistent/cuobjdump'"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(dg_test::list_dir(cache_.path() / "tmp").empty());
}

TEST_P(Compilers, FailingCuobjdumpIsNamedByItsVariable) {
    env_.set("DG_JIT_DUMP_SASS", "1").set("DG_JIT_CUOBJDUMP", "/bin/false");
    try {
        build(dg_test::small_source(2), "sm_90a");
        FAIL() << "expected CompileError";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("DG_JIT_CUOBJDUMP='/bin/false' failed"), std::string::npos) << e.what();
    }
}

TEST(CompilerSearch, CudaHomeWithoutNvccIsReportedNotIgnored) {
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("CUDA_HOME", "/nonexistent/cuda");
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    try {
        detail::resolve_nvcc(settings());
    } catch (const ConfigError&) {  // no nvcc anywhere else: fine, the warning is what is checked
    }
    set_log_sink({});
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("CUDA_HOME='/nonexistent/cuda' has no executable bin/nvcc"), std::string::npos) << warnings[0];
}

// DG_JIT_TRIM_HEADERS (default on) gives NVCC compiles of kernels that include only our headers the device
// part of cuda_runtime.h (a prelude). The cubin must be the same byte for byte; the flags (so the cache key
// and the manifest) say which way it was built; a kernel that includes a toolkit header itself keeps the
// full set. NVRTC's flags do not depend on the switch.
TEST_P(Compilers, TrimmedHeadersGiveTheSameCubin) {
    if (nvrtc()) {
        const auto& c = detail::compiler();
        EXPECT_EQ(c.flags("sm_90a", settings(), true), c.flags("sm_90a", settings(), false));
        GTEST_SKIP() << "NVRTC reads no host headers: nothing to trim";
    }
    const std::string trim_flag = "-D__CUDA_RUNTIME_H__";
    const CachedKernel trimmed = build(dg_test::wgmma_source("trim"), "sm_90a");
    env_.set("DG_JIT_TRIM_HEADERS", "0");
    const CachedKernel full = build(dg_test::wgmma_source("trim"), "sm_90a");
    EXPECT_TRUE(trimmed.compiled);
    EXPECT_TRUE(full.compiled);
    EXPECT_NE(trimmed.dir, full.dir) << "the switch is part of the cache key";
    EXPECT_EQ(trimmed.cubin, full.cubin);
    EXPECT_NE(dg_test::read_text(trimmed.dir / "manifest").find(trim_flag), std::string::npos);
    EXPECT_EQ(dg_test::read_text(full.dir / "manifest").find(trim_flag), std::string::npos);
    for (const auto& file : dg_test::list_dir(trimmed.dir)) {
        EXPECT_EQ(file.filename().string().find("prelude"), std::string::npos) << "the NVCC prelude stays out of the entry";
    }

    env_.set("DG_JIT_TRIM_HEADERS", "1");
    deep_gemm::jit::KernelSource with_toolkit_header = dg_test::small_source(7);
    with_toolkit_header.code = "#include <cuda_fp16.h>\n" + with_toolkit_header.code;
    const CachedKernel untrimmed = build(with_toolkit_header, "sm_90a");
    EXPECT_EQ(dg_test::read_text(untrimmed.dir / "manifest").find(trim_flag), std::string::npos)
        << "a kernel that includes a CUDA header compiles with the full set";
}

// A kernel that needs more than the trimmed NVCC prelude declares (here printf, from the host half of
// cuda_runtime.h) still compiles: NVCC retries it with the full header and says so in a warning.
TEST_P(Compilers, NvccFallsBackToTheFullHeaderWhenTrimmedFails) {
    if (nvrtc()) GTEST_SKIP() << "NVRTC declares printf itself, --minimal or not";
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    const deep_gemm::jit::KernelSource src{"dg_test_printf", "dg_test_printf",
                                           "extern \"C\" __global__ void dg_test_printf(int v) { printf(\"%d\\n\", v); }\n"};
    const CachedKernel entry = build(src, "sm_90a");
    EXPECT_TRUE(entry.compiled);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("with trimmed CUDA headers"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("printf"), std::string::npos) << "nvcc's first error is quoted: " << warnings[0];
}

INSTANTIATE_TEST_SUITE_P(NvccAndNvrtc, Compilers, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("Nvrtc") : std::string("Nvcc"); });

TEST(CompilerConfig, MissingNvccNamesTheVariable) {
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    dg_test::TempDir cache;
    env.set("DG_JIT_CACHE_DIR", cache.path().string()).set("DG_JIT_NVCC_COMPILER", "/nonexistent/nvcc");
    set_include_dir(dg_test::kTestInclude);
    try {
        build(dg_test::small_source(1), "sm_90a");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("DG_JIT_NVCC_COMPILER='/nonexistent/nvcc'"), std::string::npos) << e.what();
    }
}

TEST(CompilerConfig, InvalidArch) {
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    dg_test::TempDir cache;
    env.set("DG_JIT_CACHE_DIR", cache.path().string());
    set_include_dir(dg_test::kTestInclude);
    EXPECT_THROW(build(dg_test::small_source(1), "hopper"), ConfigError);
}

TEST(CompilerConfig, PtxasReportParser) {
    const std::string log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Function properties for k\n"
        "    1024 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes cumulative stack size\n"
        "ptxas info    : Function properties for helper\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    const auto reports = detail::parse_ptxas_report(log);
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_EQ(reports[0].function, "k");
    EXPECT_EQ(reports[0].stack_frame, 1024);
    EXPECT_EQ(reports[0].spill_stores, 8);
    EXPECT_EQ(reports[0].spill_loads, 4);
    EXPECT_EQ(reports[0].registers, 40);
    EXPECT_EQ(reports[1].stack_frame, 0);
}
