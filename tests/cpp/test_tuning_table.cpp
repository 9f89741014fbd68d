// The tuning table of the kernel cache (tuning_table.hpp, docs/cache.md): its text round-trips and a damaged
// or half-written one is refused; concurrent merges keep every entry; a file or directory another user could
// write is not trusted; and the planner takes a pick for its GPU model only, not under DG_JIT_TUNING=0, and
// not where the settings force a config. No GPU needed.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "jit/errors.hpp"
#include "jit/tuning_table.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"
#include "test_util.hpp"

namespace {

using deep_gemm::jit::TuningEntry;
namespace fs = std::filesystem;
namespace jit = deep_gemm::jit;

TuningEntry entry(const std::string& signature, const std::string& config, const std::string& gpu = "sm132-1900mhz") {
    return {gpu, "DG_FP8_GEMM_CONFIG", signature, config, 12.5, 11.25};
}

TEST(TuningTable, TextRoundTrips) {
    const std::vector<TuningEntry> entries = {entry("mode0.m4096", "128,160,0"), entry("mode1.m8192", "64,128,0,1")};
    EXPECT_EQ(jit::parse_tuning_table(jit::format_tuning_table(entries)), entries);
    EXPECT_TRUE(jit::parse_tuning_table(jit::format_tuning_table({})).empty());
}

TEST(TuningTable, DamagedTextIsRefused) {
    const std::string good = jit::format_tuning_table({entry("a", "128,160,0"), entry("b", "64,64,0")});
    std::vector<std::string> bad = {
        good.substr(0, good.size() - 1),            // last line cut
        good.substr(0, good.find("\nend") + 1),     // no end line
        good.substr(0, good.find('\n', good.find('\n') + 1) + 1) + good.substr(good.find("\nend") + 1),  // an entry lost
        "x" + good,                                  // another header
    };
    std::string flipped = good;
    flipped[flipped.find("128,160")] = '6';          // a changed pick
    bad.push_back(flipped);
    for (const std::string& text : bad) EXPECT_THROW(jit::parse_tuning_table(text), jit::Error) << text;
    EXPECT_THROW(jit::format_tuning_table({entry("a\tb", "128,160,0")}), jit::Error);
}

TEST(TuningTable, GpuModel) {
    EXPECT_EQ(jit::gpu_model(132, 1980), "sm132-1900mhz");
    EXPECT_EQ(jit::gpu_model(114, 1755), "sm114-1700mhz");
}

TEST(TuningTable, MergeReplacesTheSameKeyAndKeepsTheRest) {
    dg_test::TempDir tmp;
    const fs::path root = tmp.path() / "cache";
    dg_test::ScopedEnv env("DG_JIT_CACHE_DIR", root.string());
    EXPECT_TRUE(jit::read_tuning_table(root).empty());  // absent
    jit::merge_tuning_entries(root, {entry("a", "128,160,0"), entry("b", "64,64,0")});
    jit::merge_tuning_entries(root, {entry("a", "128,176,0"), entry("a", "64,64,0", "sm114-1700mhz")});
    const std::vector<TuningEntry> got = jit::read_tuning_table(root);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0], entry("b", "64,64,0"));
    EXPECT_EQ(got[1], entry("a", "128,176,0"));
    EXPECT_EQ(got[2], entry("a", "64,64,0", "sm114-1700mhz"));
    struct stat st;
    ASSERT_EQ(::lstat(jit::tuning_table_path(root).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 077, 0u);
    for (const fs::path& p : dg_test::list_dir(root / "tuning"))  // no temporary file left behind
        EXPECT_EQ(p.filename().string().find("tmp"), std::string::npos) << p;
}

TEST(TuningTable, ConcurrentMergesKeepEveryEntry) {
    dg_test::TempDir tmp;
    const fs::path root = tmp.path() / "cache";
    dg_test::ScopedEnv env("DG_JIT_CACHE_DIR", root.string());
    constexpr int kProcesses = 6;
    std::vector<pid_t> children;
    for (int i = 0; i < kProcesses; ++i) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            int rc = 0;
            try {
                for (int j = 0; j < 5; ++j) jit::merge_tuning_entries(root, {entry("p" + std::to_string(i) + "." + std::to_string(j), "128,128,0")});
            } catch (...) {
                rc = 1;
            }
            ::_exit(rc);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(jit::read_tuning_table(root).size(), size_t(kProcesses * 5));
}

TEST(TuningTable, UntrustedOrDamagedTablesAreRefused) {
    dg_test::TempDir tmp;
    const fs::path root = tmp.path() / "cache";
    dg_test::ScopedEnv env("DG_JIT_CACHE_DIR", root.string());
    jit::merge_tuning_entries(root, {entry("a", "128,160,0")});
    const fs::path table = jit::tuning_table_path(root);
    ::chmod(table.c_str(), 0602);  // others may write it
    EXPECT_THROW(jit::read_tuning_table(root), jit::ConfigError);
    ::chmod(table.c_str(), 0620);  // its group may (a cache not shared with the group)
    EXPECT_THROW(jit::read_tuning_table(root), jit::ConfigError);
    ::chmod(table.c_str(), 0600);
    EXPECT_EQ(jit::read_tuning_table(root).size(), 1u);
    ::chmod((root / "tuning").c_str(), 0777);  // a directory others may write
    EXPECT_THROW(jit::read_tuning_table(root), jit::ConfigError);
    ::chmod((root / "tuning").c_str(), 0700);
    // A symlink in its place is not followed.
    const std::string text = dg_test::read_text(table);
    dg_test::write_text(tmp.path() / "elsewhere", text);
    fs::remove(table);
    fs::create_symlink(tmp.path() / "elsewhere", table);
    EXPECT_THROW(jit::read_tuning_table(root), jit::ConfigError);
    fs::remove(table);
    dg_test::write_text(table, text.substr(0, text.size() / 2));  // half-written
    ::chmod(table.c_str(), 0600);
    EXPECT_THROW(jit::read_tuning_table(root), jit::Error);
    EXPECT_THROW(jit::merge_tuning_entries(root, {entry("b", "64,64,0")}), jit::Error);  // not overwritten
    EXPECT_EQ(dg_test::read_text(table), text.substr(0, text.size() / 2));
}

// The planner (plan_gemm: what run_gemm plans, on assumed device limits) with a table in the cache.
class TunedPlan : public ::testing::Test {
protected:
    void SetUp() override {
        env_.set("DG_JIT_CACHE_DIR", (tmp_.path() / "cache").string());
        env_.set("DG_FP8_GEMM_CONFIG", std::nullopt);
        env_.set("DG_JIT_TUNING", std::nullopt);
        problem_.kernel = deep_gemm::kernels::GemmKernel::kFp8_1d2d;
        problem_.m = 4096, problem_.n = 7168, problem_.k = 2048;
    }

    // Tunes problem_ on `limits`' GPU model to its first candidate; returns that candidate's symbol.
    std::string tune_first_candidate(const deep_gemm::kernels::DeviceLimits& limits) {
        const auto found = deep_gemm::kernels::gemm_config_candidates(problem_, limits);
        EXPECT_FALSE(found.candidates.empty());
        EXPECT_EQ(found.variable, "DG_FP8_GEMM_CONFIG");
        jit::merge_tuning_entries(tmp_.path() / "cache",
                                  {{jit::gpu_model(limits.num_sms, limits.clock_mhz), found.variable,
                                    found.signature, found.candidates.front().config, 10, 9}});
        jit::reload_settings();
        return found.candidates.front().kernel.symbol;
    }

    dg_test::TempDir tmp_;
    dg_test::ScopedEnv env_;
    deep_gemm::kernels::GemmProblem problem_;
};

TEST_F(TunedPlan, APickChangesThePlannedKernelOfItsGpuOnly) {
    const deep_gemm::kernels::DeviceLimits h200;
    const std::string heuristic = deep_gemm::kernels::plan_gemm(problem_, h200).symbol;
    const std::string tuned = tune_first_candidate(h200);
    ASSERT_NE(tuned, heuristic);
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(problem_, h200).symbol, tuned);
    deep_gemm::kernels::DeviceLimits other = h200;
    other.clock_mhz = 1755;  // another clocks class: another GPU model
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(problem_, other).symbol, heuristic);
    other = h200;
    other.use_tuning = false;
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(problem_, other).symbol, heuristic);
    // Another shape is not tuned.
    deep_gemm::kernels::GemmProblem smaller = problem_;
    smaller.m = 1024;
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(smaller, h200).symbol,
              deep_gemm::kernels::plan_gemm(smaller, other).symbol);
}

TEST_F(TunedPlan, TheVariableTurnsItOffAndAForcedConfigWins) {
    const deep_gemm::kernels::DeviceLimits h200;
    const std::string heuristic = deep_gemm::kernels::plan_gemm(problem_, h200).symbol;
    const std::string tuned = tune_first_candidate(h200);
    ASSERT_NE(tuned, heuristic);
    env_.set("DG_JIT_TUNING", "0");
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(problem_, h200).symbol, heuristic);
    env_.set("DG_JIT_TUNING", std::nullopt);
    EXPECT_EQ(deep_gemm::kernels::plan_gemm(problem_, h200).symbol, tuned);
    env_.set("DG_FP8_GEMM_CONFIG", "64,64,0");
    EXPECT_NE(deep_gemm::kernels::plan_gemm(problem_, h200).symbol.find("_bm64_bn64_"), std::string::npos);
}

}  // namespace
