// The disk cache: concurrency across processes, corruption, unusable directories, hostile paths,
// relocation of the include tree.
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>

#include "jit/cache.hpp"
#include "jit/errors.hpp"
#include "jit/log.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

namespace {

// Forks `n` processes that start `body(i)` at the same moment; returns their exit codes.
std::vector<int> run_together(int n, const std::function<int(int)>& body) {
    int gate[2];
    if (::pipe(gate) != 0) throw std::runtime_error("pipe");
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::close(gate[1]);
            char c;
            while (::read(gate[0], &c, 1) < 0) {
            }  // returns 0 once the parent closes the write end: everyone starts together
            int rc = 3;
            try {
                rc = body(i);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "child %d: %s\n", i, e.what());
                rc = 2;
            }
            std::fflush(nullptr);
            ::_exit(rc);
        }
        pids.push_back(pid);
    }
    ::close(gate[0]);
    ::close(gate[1]);
    std::vector<int> codes;
    for (pid_t pid : pids) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
    }
    return codes;
}

// Exit code of a child: 0 found in the cache, 1 compiled it, 2 error.
int build_in_child(const KernelSource& src) {
    const CachedKernel k = build(src, "sm_90a");
    if (k.cubin.size() < 4 || k.cubin.compare(0, 4, "\x7f" "ELF") != 0) return 2;
    return k.compiled ? 1 : 0;
}

class Cache : public ::testing::Test {
protected:
    void SetUp() override {
        dg_test::clear_dg_env(env_);
        env_.set("DG_JIT_CACHE_DIR", (dir_.path() / "cache root").string());
        dg_test::write_counting_nvcc(dir_.path() / "bin/nvcc", counter());
        env_.set("DG_JIT_NVCC_COMPILER", (dir_.path() / "bin/nvcc").string());
        set_include_dir(dg_test::kTestInclude);
    }
    void TearDown() override { set_log_sink({}); }
    fs::path root() const { return dir_.path() / "cache root"; }
    fs::path counter() const { return dir_.path() / "compiles.txt"; }
    int compiles() const { return dg_test::count_lines(counter()); }

    dg_test::TempDir dir_;
    dg_test::ScopedEnv env_;
};

}  // namespace

TEST_F(Cache, SixteenProcessesOneKernelCompileOnce) {
    const auto codes = run_together(16, [](int) { return build_in_child(dg_test::wgmma_source("race")); });
    std::map<int, int> histogram;
    for (int code : codes) ++histogram[code];
    EXPECT_EQ(histogram[1], 1) << "exactly one process compiled";
    EXPECT_EQ(histogram[0], 15) << "the others found the entry";
    EXPECT_EQ(compiles(), 1) << "nvcc ran once";
    EXPECT_EQ(dg_test::list_dir(root() / "cache").size(), 1u);
    EXPECT_TRUE(dg_test::list_dir(root() / "tmp").empty());
    EXPECT_FALSE(fs::exists(root() / "quarantine"));
}

TEST_F(Cache, SixteenProcessesEightKernelsCompileEachOnce) {
    const auto codes = run_together(16, [](int i) { return build_in_child(dg_test::small_source(i % 8)); });
    int compiled = 0;
    for (int code : codes) {
        EXPECT_TRUE(code == 0 || code == 1) << "child failed with " << code;
        compiled += code == 1;
    }
    EXPECT_EQ(compiled, 8);
    EXPECT_EQ(compiles(), 8);
    EXPECT_EQ(dg_test::list_dir(root() / "cache").size(), 8u);
    EXPECT_TRUE(dg_test::list_dir(root() / "tmp").empty());
}

TEST_F(Cache, SecondBuildInProcessIsMemoized) {
    const CachedKernel first = build(dg_test::small_source(1), "sm_90a");
    EXPECT_TRUE(first.compiled);
    // Remove the entry behind the memo's back: the in-process memo does not look at the disk again.
    fs::remove_all(first.dir);
    const CachedKernel second = build(dg_test::small_source(1), "sm_90a");
    EXPECT_FALSE(second.compiled);
    EXPECT_EQ(second.cubin, first.cubin);
    EXPECT_EQ(compiles(), 1);
}

TEST_F(Cache, TruncatedCubinIsQuarantinedAndRebuilt) {
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    const CachedKernel first = build(dg_test::small_source(2), "sm_90a");
    const std::string cubin = dg_test::read_text(first.dir / "kernel.cubin");
    fs::resize_file(first.dir / "kernel.cubin", cubin.size() / 2);
    detail::clear_build_memo();
    const CachedKernel second = build(dg_test::small_source(2), "sm_90a");
    EXPECT_TRUE(second.compiled);
    EXPECT_EQ(second.dir, first.dir);
    EXPECT_EQ(dg_test::read_text(second.dir / "kernel.cubin"), cubin);
    EXPECT_EQ(compiles(), 2);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("bytes"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(first.dir.string()), std::string::npos) << warnings[0];
    ASSERT_EQ(dg_test::list_dir(root() / "quarantine").size(), 1u);
}

TEST_F(Cache, CorruptedCubinSameSizeAndDamagedManifestAreRebuilt) {
    const CachedKernel first = build(dg_test::small_source(3), "sm_90a");
    std::string cubin = dg_test::read_text(first.dir / "kernel.cubin");
    cubin[cubin.size() / 2] ^= 0x5a;
    dg_test::write_text(first.dir / "kernel.cubin", cubin);
    detail::clear_build_memo();
    EXPECT_TRUE(build(dg_test::small_source(3), "sm_90a").compiled) << "checksum mismatch detected";

    const std::string manifest = dg_test::read_text(first.dir / "manifest");
    dg_test::write_text(first.dir / "manifest", manifest.substr(0, manifest.size() / 2));
    detail::clear_build_memo();
    EXPECT_TRUE(build(dg_test::small_source(3), "sm_90a").compiled) << "truncated manifest detected";

    fs::remove(first.dir / "manifest");
    detail::clear_build_memo();
    EXPECT_TRUE(build(dg_test::small_source(3), "sm_90a").compiled) << "missing manifest detected";

    detail::clear_build_memo();
    EXPECT_FALSE(build(dg_test::small_source(3), "sm_90a").compiled);
    EXPECT_EQ(compiles(), 4);
    EXPECT_EQ(dg_test::list_dir(root() / "quarantine").size(), 3u);
}

TEST_F(Cache, CacheDirThatIsAFile) {
    dg_test::write_text(dir_.path() / "a file", "x");
    for (const fs::path& bad : {dir_.path() / "a file", dir_.path() / "a file" / "below"}) {
        env_.set("DG_JIT_CACHE_DIR", bad.string());
        try {
            build(dg_test::small_source(4), "sm_90a");
            ADD_FAILURE() << "expected ConfigError for " << bad;
        } catch (const ConfigError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
            EXPECT_NE(what.find("DG_JIT_CACHE_DIR"), std::string::npos) << what;
        }
    }
    EXPECT_EQ(compiles(), 0) << "the directory is checked before compiling";
}

TEST_F(Cache, UnwritableCacheDir) {
    // Not root: a directory without write permission. Root ignores permission bits, so there we use an
    // existing directory in which even root cannot create entries (/proc/self); a read-only bind mount
    // would need privileges the test does not assume. Either way the cache root exists but cannot hold
    // the cache, and the error must say where and which variable to change.
    fs::path unwritable;
    if (::geteuid() != 0) {
        unwritable = dir_.path() / "read only";
        fs::create_directories(unwritable);
        fs::permissions(unwritable, fs::perms::owner_read | fs::perms::owner_exec);
    } else {
        unwritable = "/proc/self";
        std::printf("[ note     ] running as root: permission bits are not checked; using %s\n", unwritable.c_str());
    }
    env_.set("DG_JIT_CACHE_DIR", unwritable.string());
    try {
        build(dg_test::small_source(5), "sm_90a");
        FAIL() << "expected ConfigError for " << unwritable;
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(unwritable.string()), std::string::npos) << what;
        EXPECT_NE(what.find("DG_JIT_CACHE_DIR"), std::string::npos) << what;
        if (::geteuid() != 0) {
            EXPECT_NE(what.find("not writable"), std::string::npos) << what;
        }
    }
    EXPECT_EQ(compiles(), 0);
}

TEST_F(Cache, HostilePathsAreJustPaths) {
    // Spaces, ';', quotes and $(...) in the nvcc path, the cache dir and the include dir: nothing is
    // run through a shell by us, and nvcc (which does use one internally) never sees these paths.
    const std::string weird = "we ird;$(touch pwned);`touch pwned2`;'q'";
    const fs::path base = dir_.path() / weird;
    dg_test::write_counting_nvcc(base / "bin dir;$(touch pwned)" / "nvcc", counter());
    dg_test::copy_tree(dg_test::kTestInclude, base / "inc $(touch pwned)");
    env_.set("DG_JIT_NVCC_COMPILER", (base / "bin dir;$(touch pwned)" / "nvcc").string());
    env_.set("DG_JIT_CACHE_DIR", (base / "cache;$(touch pwned)").string());
    if (std::string(DG_TEST_CUOBJDUMP).size() > 0) {
        env_.set("DG_JIT_CUOBJDUMP", DG_TEST_CUOBJDUMP).set("DG_JIT_DUMP_ASM", "1");
        if (std::string(DG_TEST_NVDISASM_DIR).size() > 0) env_.set("NVDISASM_PATH", DG_TEST_NVDISASM_DIR);
    }
    set_include_dir(base / "inc $(touch pwned)");
    auto scratch_dirs = [] {
        std::size_t n = 0;
        for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
            n += e.path().filename().string().rfind("deep_gemm-build.", 0) == 0;
        }
        return n;
    };
    const std::size_t scratch_before = scratch_dirs();
    const CachedKernel nvcc_entry = build(dg_test::wgmma_source("hostile"), "sm_90a");
    EXPECT_TRUE(nvcc_entry.compiled);
    EXPECT_EQ(compiles(), 1);
    EXPECT_EQ(nvcc_entry.dir.parent_path(), base / "cache;$(touch pwned)" / "cache");
    EXPECT_FALSE(fs::exists(nvcc_entry.dir / "include")) << "the include link is not left in the entry";
    env_.set("DG_JIT_USE_NVRTC", "1");
    const CachedKernel nvrtc_entry = build(dg_test::wgmma_source("hostile"), "sm_90a");
    EXPECT_TRUE(nvrtc_entry.compiled);
    set_include_dir(dg_test::kTestInclude);
    EXPECT_LE(scratch_dirs(), scratch_before) << "scratch build dirs are removed";
    EXPECT_TRUE(dg_test::list_dir(base / "cache;$(touch pwned)" / "tmp").empty());

    std::vector<fs::path> pwned;
    for (const fs::path& top : {dir_.path(), fs::current_path()}) {
        for (const auto& e : fs::recursive_directory_iterator(top, fs::directory_options::skip_permission_denied)) {
            if (e.path().filename().string().rfind("pwned", 0) == 0) pwned.push_back(e.path());
        }
    }
    EXPECT_TRUE(pwned.empty()) << "a path was executed: " << pwned.front();
}

TEST_F(Cache, RelocatedIncludeTreeHitsTheSameEntryAndHeaderChangesMiss) {
    const fs::path a = dir_.path() / "site-a/deep_gemm/include";
    const fs::path b = dir_.path() / "elsewhere/b/include";
    dg_test::copy_tree(dg_test::kTestInclude, a);
    dg_test::copy_tree(dg_test::kTestInclude, b);
    set_include_dir(a);
    const CachedKernel from_a = build(dg_test::wgmma_source("moved"), "sm_90a");
    EXPECT_TRUE(from_a.compiled);
    set_include_dir(b);
    const CachedKernel from_b = build(dg_test::wgmma_source("moved"), "sm_90a");
    EXPECT_FALSE(from_b.compiled) << "same tree at another path: same key";
    EXPECT_EQ(from_b.dir, from_a.dir);

    // A header two levels down changes: new key.
    dg_test::write_text(b / "dg_test/common.cuh", dg_test::read_text(b / "dg_test/common.cuh") + "// changed\n");
    detail::clear_build_memo();
    const CachedKernel changed = build(dg_test::wgmma_source("moved"), "sm_90a");
    EXPECT_TRUE(changed.compiled);
    EXPECT_NE(changed.dir, from_a.dir);

    // The C++ standard is a flag: new key.
    env_.set("DG_JIT_CPP_STANDARD", "17");
    set_include_dir(a);
    const CachedKernel cpp17 = build(dg_test::wgmma_source("moved"), "sm_90a");
    EXPECT_TRUE(cpp17.compiled);
    EXPECT_NE(cpp17.dir, from_a.dir);
    EXPECT_EQ(compiles(), 3);
    set_include_dir(dg_test::kTestInclude);
}

TEST_F(Cache, IncludeDirMustExist) {
    set_include_dir(dir_.path() / "missing");
    try {
        build(dg_test::small_source(6), "sm_90a");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("include dir"), std::string::npos) << e.what();
    }
    set_include_dir(dg_test::kTestInclude);
}
