// Cache maintenance (cache_admin): listing, LRU/age pruning, the per-key lock respected, a concurrent
// builder's work left alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "jit/cache.hpp"
#include "jit/cache_trust.hpp"
#include "jit/cache_admin.hpp"
#include "jit/cache_lock.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

namespace {

std::string key_of(int i) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%032x", i + 0xabc);
    return buffer;
}

void set_mtime(const fs::path& path, std::int64_t seconds) {
    timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

class CacheAdmin : public ::testing::Test {
protected:
    void SetUp() override {
        dg_test::clear_dg_env(env_);
        env_.set("DG_JIT_CACHE_DIR", root().string());
        detail::ensure_cache_dirs(root());
    }
    fs::path root() const { return dir_.path() / "root"; }

    // A published entry as build() leaves it: manifest + cubin of `bytes` bytes, used last at `last_used`.
    fs::path make_entry(int i, std::size_t bytes, std::int64_t last_used) {
        const std::string name = "kernel_" + std::to_string(i);
        const fs::path entry = root() / "cache" / detail::entry_dir_name(name, key_of(i));
        detail::Manifest m;
        m.format = detail::kManifestVersion;
        m.name = name;
        m.key = key_of(i);
        m.arch = "sm_90a";
        m.compiler = "nvcc 13.0";
        m.cubin_size = static_cast<long long>(bytes);
        dg_test::write_text(entry / "kernel.cubin", std::string(bytes, 'x'));
        dg_test::write_text(entry / "manifest", detail::format_manifest(m));
        set_mtime(entry / "manifest", last_used - 10);
        set_mtime(entry, last_used);
        return entry;
    }
    std::int64_t manifest_bytes(int i) {
        return static_cast<std::int64_t>(
            fs::file_size(root() / "cache" / detail::entry_dir_name("kernel_" + std::to_string(i), key_of(i)) / "manifest"));
    }

    dg_test::TempDir dir_;
    dg_test::ScopedEnv env_;
};

constexpr std::int64_t kNow = 1'700'000'000;  // fixed times; prune_cache takes `now` from the options

}  // namespace

TEST_F(CacheAdmin, ListsEntriesMostRecentlyUsedFirst) {
    make_entry(0, 100, kNow - 300);
    make_entry(1, 200, kNow - 100);
    make_entry(2, 300, kNow - 200);
    dg_test::write_text(root() / "cache" / "not-an-entry" / "x", "x");  // ignored: not kernel.<name>.<key>
    const auto entries = list_cache(root());
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[0].name, "kernel_1");
    EXPECT_EQ(entries[1].name, "kernel_2");
    EXPECT_EQ(entries[2].name, "kernel_0");
    EXPECT_TRUE(entries[0].manifest_ok);
    EXPECT_EQ(entries[0].key, key_of(1));
    EXPECT_EQ(entries[0].arch, "sm_90a");
    EXPECT_EQ(entries[0].compiler, "nvcc 13.0");
    EXPECT_EQ(entries[0].bytes, 200 + manifest_bytes(1));
    EXPECT_EQ(entries[0].last_used, kNow - 100);
    EXPECT_EQ(entries[0].created, kNow - 110);

    const CacheStats stats = cache_stats(root());
    EXPECT_EQ(stats.entries, 3);
    EXPECT_EQ(stats.entry_bytes, 600 + manifest_bytes(0) + manifest_bytes(1) + manifest_bytes(2));
    EXPECT_EQ(stats.build_dirs, 0);
    EXPECT_TRUE(list_cache(dir_.path() / "missing").empty());
}

TEST_F(CacheAdmin, PruneByAgeRemovesOnlyEntriesUnusedForLonger) {
    const fs::path old_entry = make_entry(0, 100, kNow - 3 * 86400);
    const fs::path recent = make_entry(1, 100, kNow - 3600);
    const std::int64_t old_bytes = 100 + manifest_bytes(0);
    PruneOptions options;
    options.max_unused_seconds = 86400;
    options.now = kNow;
    const PruneReport report = prune_cache(root(), options);
    ASSERT_EQ(report.removed.size(), 1u);
    EXPECT_EQ(report.removed[0], old_entry);
    EXPECT_FALSE(fs::exists(old_entry));
    EXPECT_TRUE(fs::exists(recent / "kernel.cubin"));
    EXPECT_EQ(report.bytes_freed, old_bytes);
    EXPECT_EQ(report.entries_left, 1);
    EXPECT_TRUE(dg_test::list_dir(root() / "tmp").empty()) << "the removed entry's directory is gone too";
}

TEST_F(CacheAdmin, PruneBySizeRemovesLeastRecentlyUsedFirst) {
    const fs::path a = make_entry(0, 1000, kNow - 50);   // most recent
    const fs::path b = make_entry(1, 1000, kNow - 300);  // least recent
    const fs::path c = make_entry(2, 1000, kNow - 100);
    PruneOptions options;
    options.max_total_bytes = 2500;  // two entries (with manifests) fit, three do not
    options.now = kNow;
    const PruneReport report = prune_cache(root(), options);
    ASSERT_EQ(report.removed.size(), 1u);
    EXPECT_EQ(report.removed[0], b);
    EXPECT_TRUE(fs::exists(a) && fs::exists(c));
    EXPECT_LE(report.bytes_left, 2500);
    EXPECT_EQ(report.entries_left, 2);

    options.max_total_bytes = 0;
    EXPECT_EQ(prune_cache(root(), options).removed.size(), 2u);
    EXPECT_TRUE(list_cache(root()).empty());
}

TEST_F(CacheAdmin, DryRunRemovesNothing) {
    const fs::path entry = make_entry(0, 100, kNow - 86400 * 10);
    dg_test::write_text(root() / "quarantine" / "kernel.x.1" / "manifest", "bad");
    detail::write_marker(root() / "quarantine" / "kernel.x.1");  // quarantined entries keep their marker
    PruneOptions options;
    options.remove_all = true;
    options.dry_run = true;
    const PruneReport report = prune_cache(root(), options);
    EXPECT_EQ(report.removed.size(), 2u);
    EXPECT_TRUE(fs::exists(entry / "kernel.cubin"));
    EXPECT_TRUE(fs::exists(root() / "quarantine" / "kernel.x.1"));
}

TEST_F(CacheAdmin, EntryWhoseKeyIsLockedIsSkipped) {
    const fs::path entry = make_entry(0, 100, kNow);
    PruneOptions options;
    options.remove_all = true;
    {
        detail::FileLock held(detail::key_lock_path(root(), key_of(0)));
        ASSERT_TRUE(held.held());
        // flock is per open file description, so a second open in this process contends like another process
        const PruneReport report = prune_cache(root(), options);
        EXPECT_TRUE(report.removed.empty());
        ASSERT_EQ(report.busy.size(), 1u);
        EXPECT_EQ(report.busy[0], entry);
        EXPECT_TRUE(fs::exists(entry / "kernel.cubin"));
    }
    const PruneReport report = prune_cache(root(), options);
    EXPECT_EQ(report.removed.size(), 1u);
    EXPECT_FALSE(fs::exists(entry));
}

TEST_F(CacheAdmin, OrphanedBuildDirsGoLiveOnesStay) {
    const fs::path orphan = root() / "tmp" / ("build." + key_of(1) + ".aaaaaa");
    const fs::path live = root() / "tmp" / ("build." + key_of(2) + ".bbbbbb");
    const fs::path unkeyed_young = root() / "tmp" / "build.some_name.cccccc";
    for (const fs::path& dir : {orphan, live, unkeyed_young}) {
        dg_test::write_text(dir / "kernel.cu", "x");
        detail::write_marker(dir);  // as build() makes them
    }
    detail::FileLock builder(detail::key_lock_path(root(), key_of(2)));
    const PruneReport report = prune_cache(root(), PruneOptions{});
    EXPECT_FALSE(fs::exists(orphan));
    EXPECT_TRUE(fs::exists(live / "kernel.cu"));
    EXPECT_TRUE(fs::exists(unkeyed_young / "kernel.cu")) << "no key: kept until a day old";
    ASSERT_EQ(report.busy.size(), 1u);
    EXPECT_EQ(report.busy[0], live);
}

// A real builder in another process, stopped inside its compiler, while the cache is cleared: its build
// directory and key stay untouched, its entry lands afterwards, and a later disk hit refreshes last use.
TEST_F(CacheAdmin, ClearDuringAConcurrentBuildLeavesTheBuilderAlone) {
    // An nvcc that, for the compile itself (-cubin), says it started and waits for the test's go-ahead.
    const fs::path started = dir_.path() / "started", go = dir_.path() / "go";
    const fs::path nvcc = dir_.path() / "bin" / "nvcc";
    dg_test::write_text(nvcc, "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = -cubin ]; then\n    touch " +
                                  dg_test::sh_quote(started.string()) + "\n    while [ ! -e " +
                                  dg_test::sh_quote(go.string()) + " ]; do sleep 0.05; done\n  fi\ndone\nexec " +
                                  dg_test::sh_quote(DG_TEST_NVCC) + " \"$@\"\n");
    fs::permissions(nvcc, fs::perms::owner_all);
    env_.set("DG_JIT_NVCC_COMPILER", nvcc.string());
    set_include_dir(dg_test::kTestInclude);
    const fs::path idle = make_entry(7, 100, kNow);  // clear removes this one meanwhile

    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int rc = 2;
        try {
            rc = build(dg_test::small_source(42), "sm_90a").compiled ? 1 : 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "builder: %s\n", e.what());
        }
        ::_exit(rc);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(started) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const bool builder_started = fs::exists(started);
    const auto build_dirs = dg_test::list_dir(root() / "tmp");
    PruneOptions options;
    options.remove_all = true;
    const PruneReport during = prune_cache(root(), options);
    dg_test::write_text(go, "");
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(builder_started) << "the builder never reached its compiler";
    ASSERT_EQ(build_dirs.size(), 1u);
    EXPECT_EQ(build_dirs[0].filename().string().rfind("build.", 0), 0u);

    EXPECT_FALSE(fs::exists(idle));
    ASSERT_EQ(during.busy.size(), 1u) << "the live build directory is reported busy";
    EXPECT_EQ(during.busy[0], build_dirs[0]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1) << "the builder compiled and published its entry";

    const auto entries = list_cache(root());
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].name, "dg_test_small");
    EXPECT_TRUE(entries[0].manifest_ok);

    // A disk hit in this process refreshes the entry's last use.
    const std::int64_t month_ago = ::time(nullptr) - 86400 * 30;
    set_mtime(entries[0].path, month_ago);
    detail::clear_build_memo();
    EXPECT_FALSE(build(dg_test::small_source(42), "sm_90a").compiled);
    EXPECT_GT(list_cache(root())[0].last_used, month_ago + 86400 * 29);

    const PruneReport after = prune_cache(root(), options);
    EXPECT_EQ(after.removed.size(), 1u);
    EXPECT_TRUE(after.busy.empty());
    EXPECT_TRUE(list_cache(root()).empty());
    EXPECT_TRUE(dg_test::list_dir(root() / "tmp").empty());
}
