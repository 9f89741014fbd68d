// The cache's trust model and deletion rules (docs/cache.md): roots and subdirectories another user could
// write are refused, squatted HOME-less roots are refused, maintenance and compiles delete only what the
// cache made and never follow a symlinked subdirectory; read-only caches serve hits; DG_JIT_COMPILE.
// Tests that need a second user run as root and switch users in a forked child; they skip otherwise.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>

#include "jit/cache.hpp"
#include "jit/cache_admin.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/errors.hpp"
#include "jit/log.hpp"
#include "jit/sha256.hpp"
#include "jit/cache_trust.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

namespace {

constexpr uid_t kOtherUser = 65534;  // nobody

// Makes this process `uid` (real, effective and saved) with the one group `gid`.
bool become(uid_t uid, gid_t gid) {
    return ::setresgid(gid, gid, gid) == 0 && ::setgroups(0, nullptr) == 0 && ::setresuid(uid, uid, uid) == 0;
}

// Runs `body` in a child as `uid` and group `gid` (default: the uid's number); returns its exit code (or
// 100 + signal).
int as_user(uid_t uid, const std::function<int()>& body, gid_t gid = static_cast<gid_t>(-1)) {
    if (gid == static_cast<gid_t>(-1)) gid = uid;
    const pid_t pid = ::fork();
    if (pid == 0) {
        int rc = 3;
        if (become(uid, gid)) {
            try {
                rc = body();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "child: %s\n", e.what());
                rc = 2;
            }
        }
        std::fflush(nullptr);
        ::_exit(rc);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// The error build() raises for small_source(value), raised in a forked child: the HOME-less fallback warns
// once per process, and Settings tests expect to see that warning themselves.
std::string error_in_child(int value, const fs::path& out) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::string what;
        try {
            build(dg_test::small_source(value), "sm_90a");
        } catch (const ConfigError& e) {
            what = e.what();
        } catch (const std::exception& e) {
            what = std::string("unexpected: ") + e.what();
        }
        dg_test::write_text(out, what);
        std::fflush(nullptr);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return dg_test::read_text(out);
}

#define SKIP_UNLESS_ROOT() \
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user"

void set_old(const fs::path& path, int days) {
    const std::int64_t when = ::time(nullptr) - 86400LL * days;
    struct timespec times[2] = {{when, 0}, {when, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

std::string error_of(const std::function<void()>& body) {
    try {
        body();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

class CacheTrust : public ::testing::Test {
protected:
    void SetUp() override {
        dg_test::clear_dg_env(env_);
        env_.set("DG_JIT_CACHE_DIR", root().string());
        dg_test::write_counting_nvcc(dir_.path() / "bin/nvcc", counter());
        env_.set("DG_JIT_NVCC_COMPILER", (dir_.path() / "bin/nvcc").string());
        set_include_dir(dg_test::kTestInclude);
        detail::clear_build_memo();
        ::chmod(dir_.path().c_str(), 0755);  // a second user must reach the test's files
    }
    void TearDown() override { set_log_sink({}); }
    fs::path root() const { return dir_.path() / "root"; }
    fs::path counter() const { return dir_.path() / "compiles.txt"; }
    int compiles() const { return dg_test::count_lines(counter()); }

    // A valid-looking entry for small_source(value), as an attacker would plant it: its manifest matches the
    // planted cubin (size and SHA-256), so only the trust checks stand between it and a load.
    // `where`: lookup() of the kernel, taken before the cache turned hostile (lookup refuses it after).
    fs::path plant(const CacheLookup& where) {
        const std::string cubin = "\x7f" "ELF planted";
        detail::Manifest m;
        m.format = detail::kManifestVersion;
        m.name = "dg_test_small";
        m.key = where.key;
        m.arch = "sm_90a";
        m.compiler = "nvcc";
        m.cubin_size = static_cast<long long>(cubin.size());
        m.cubin_sha256 = detail::sha256_hex(cubin);
        dg_test::write_text(where.dir / "kernel.cubin", cubin);
        dg_test::write_text(where.dir / "manifest", detail::format_manifest(m));
        return where.dir;
    }

    dg_test::TempDir dir_;
    dg_test::ScopedEnv env_;
};

}  // namespace

// ---- attacks -------------------------------------------------------------------------------------

TEST_F(CacheTrust, PlantedCubinInWorldWritableRootIsRefused) {
    const CacheLookup where = lookup(dg_test::small_source(1), "sm_90a");
    fs::create_directories(root() / "cache");
    ::chmod(root().c_str(), 0777);
    plant(where);
    const std::string what = error_of([] { build(dg_test::small_source(1), "sm_90a"); });
    EXPECT_NE(what.find(root().string()), std::string::npos) << what;
    EXPECT_NE(what.find("mode 0777"), std::string::npos) << what;
    EXPECT_NE(what.find("owner uid"), std::string::npos) << what;
    EXPECT_EQ(compiles(), 0);
}

TEST_F(CacheTrust, PlantedCubinInAnotherUsersCacheSubdirIsRefused) {
    SKIP_UNLESS_ROOT();
    const CacheLookup where = lookup(dg_test::small_source(2), "sm_90a");
    // The victim's root was 0777: the attacker renamed cache/ away and made their own, with a planted entry.
    fs::create_directories(root());
    ::chmod(root().c_str(), 0777);
    ASSERT_EQ(as_user(kOtherUser, [&] {
                  ::mkdir((root() / "cache").c_str(), 0755);
                  return 0;
              }), 0);
    ::chmod(root().c_str(), 0700);  // even with the root repaired, cache/ is the attacker's
    const fs::path planted = plant(where);
    ::chown(planted.c_str(), kOtherUser, kOtherUser);
    const std::string what = error_of([] { build(dg_test::small_source(2), "sm_90a"); });
    EXPECT_NE(what.find((root() / "cache").string()), std::string::npos) << what;
    EXPECT_NE(what.find("uid 65534"), std::string::npos) << what;
    EXPECT_EQ(compiles(), 0);
}

// The swap race of a root whose parent others may write: between the checks and the reads, another user
// exchanges the root with a directory of their own holding a valid-looking planted entry. Run for a bounded
// time: no lookup may return the planted cubin (the root is refused for its parent).
TEST_F(CacheTrust, RootSwappedThroughAWritableParentNeverServesAPlantedCubin) {
    SKIP_UNLESS_ROOT();
    const fs::path shared = dir_.path() / "shared";
    fs::create_directories(shared);
    env_.set("DG_JIT_CACHE_DIR", (shared / "root").string());
    ASSERT_TRUE(build(dg_test::small_source(30), "sm_90a").compiled) << "the genuine entry, built before the parent opened";
    const CacheLookup where = lookup(dg_test::small_source(30), "sm_90a");
    ::chmod(shared.c_str(), 0777);  // writable by all, no sticky bit
    const fs::path evil = shared / "evil";
    const pid_t attacker = ::fork();
    if (attacker == 0) {
        if (!become(kOtherUser, kOtherUser)) ::_exit(3);
        ::umask(022);
        const fs::path planted = evil / "cache" / where.dir.filename();
        for (const fs::path& d : {evil, evil / "cache", planted}) ::mkdir(d.c_str(), 0755);
        plant({planted, where.key, false});
        const fs::path root = shared / "root";
        // Each state holds for about as long as a lookup takes, so a check can see one and the reads the other.
        while (true) {
            ::renameat2(AT_FDCWD, root.c_str(), AT_FDCWD, evil.c_str(), RENAME_EXCHANGE);
            ::usleep(20);
        }
    }
    ::usleep(100000);  // the attacker's entry is ready
    int planted = 0, genuine = 0, refused = 0;
    const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < stop) {
        detail::clear_build_memo();
        try {
            const CachedKernel got = build(dg_test::small_source(30), "sm_90a");
            (got.cubin == "\x7f" "ELF planted" ? planted : genuine) += 1;
        } catch (const Error&) {
            ++refused;
        }
    }
    ::kill(attacker, SIGKILL);
    ::waitpid(attacker, nullptr, 0);
    std::printf("[ stress   ] 2 s of lookups under the swap loop: %d planted, %d genuine, %d refused\n", planted,
                genuine, refused);
    EXPECT_EQ(planted, 0);
    EXPECT_GT(planted + genuine + refused, 100) << "the loop ran";
}

TEST_F(CacheTrust, RootUnderAStickyWorldWritableParentIsAccepted) {
    const fs::path shared = dir_.path() / "sticky";
    fs::create_directories(shared);
    ::chmod(shared.c_str(), 01777);  // like /tmp
    env_.set("DG_JIT_CACHE_DIR", (shared / "root").string());
    EXPECT_TRUE(build(dg_test::small_source(31), "sm_90a").compiled);
}

TEST_F(CacheTrust, GroupMemberWithUmask077WritesEntriesTheOthersRead) {
    SKIP_UNLESS_ROOT();
    constexpr gid_t kTeam = 60000;
    fs::create_directories(root());
    ::chown(root().c_str(), 0, kTeam);
    ::chmod(root().c_str(), 02770);
    env_.set("DG_JIT_CACHE_TRUST_GROUP", "1");
    dg_test::write_text(counter(), "");
    ::chmod(counter().c_str(), 0666);
    auto build_as = [&](uid_t uid, mode_t mask) {
        return as_user(uid, [&] {
            ::umask(mask);
            reload_settings();
            return build(dg_test::small_source(32), "sm_90a").compiled ? 10 : 0;
        }, kTeam);
    };
    EXPECT_EQ(build_as(60001, 077), 10) << "the first member compiles";
    EXPECT_EQ(build_as(60002, 007), 0) << "the second finds the entry";
    EXPECT_EQ(build_as(60001, 077), 0) << "and so does the first again";
    EXPECT_EQ(compiles(), 1);
    EXPECT_FALSE(fs::exists(root() / "quarantine")) << "no good entry was quarantined";
}

TEST_F(CacheTrust, SquattedHomelessFallbackDirectoryIsRefused) {
    SKIP_UNLESS_ROOT();
    const fs::path tmp = dir_.path() / "tmp";
    fs::create_directories(tmp);
    ::chmod(tmp.c_str(), 01777);
    env_.set("DG_JIT_CACHE_DIR", std::nullopt).set("HOME", std::nullopt).set("TMPDIR", tmp.string());
    const fs::path fallback = tmp / ("deep_gemm-" + std::to_string(::getuid()));
    ASSERT_EQ(as_user(kOtherUser, [&] { return ::mkdir(fallback.c_str(), 0755) == 0 ? 0 : 1; }), 0);
    const std::string what = error_in_child(3, dir_.path() / "error.txt");
    EXPECT_NE(what.find(fallback.string()), std::string::npos) << what;
    EXPECT_NE(what.find("uid 65534"), std::string::npos) << what;
    EXPECT_NE(what.find("TMPDIR"), std::string::npos) << "names where the root came from: " << what;
    EXPECT_EQ(compiles(), 0);
}

TEST_F(CacheTrust, SquattedHomelessFallbackSymlinkIsNotFollowed) {
    SKIP_UNLESS_ROOT();
    const fs::path tmp = dir_.path() / "tmp", theirs = dir_.path() / "theirs";
    fs::create_directories(tmp);
    ::chmod(tmp.c_str(), 01777);
    env_.set("DG_JIT_CACHE_DIR", std::nullopt).set("HOME", std::nullopt).set("TMPDIR", tmp.string());
    const fs::path fallback = tmp / ("deep_gemm-" + std::to_string(::getuid()));
    // The attacker's link points at a directory the victim owns: only the link's owner gives it away.
    fs::create_directories(theirs);
    ASSERT_EQ(as_user(kOtherUser, [&] { return ::symlink(theirs.c_str(), fallback.c_str()) == 0 ? 0 : 1; }), 0);
    const std::string what = error_in_child(4, dir_.path() / "error.txt");
    EXPECT_NE(what.find("symlink"), std::string::npos) << what;
    EXPECT_TRUE(dg_test::list_dir(theirs).empty()) << "nothing was created through the link";
    EXPECT_EQ(compiles(), 0);
}

TEST_F(CacheTrust, OwnSymlinkedRootIsAcceptedAndSymlinksInsideAreNot) {
    const fs::path real = dir_.path() / "real root";
    fs::create_directories(real);
    fs::create_directory_symlink(real, root());
    EXPECT_TRUE(build(dg_test::small_source(5), "sm_90a").compiled);
    EXPECT_TRUE(fs::is_directory(real / "cache"));
    struct stat st;
    ASSERT_EQ(::stat((real / "cache").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(CacheTrust, DirectoriesAre0700WhateverTheUmask) {
    const mode_t old = ::umask(0);
    build(dg_test::small_source(6), "sm_90a");
    ::umask(old);
    for (const char* sub : {"", "cache", "tmp", "locks"}) {
        struct stat st;
        ASSERT_EQ(::lstat((root() / sub).c_str(), &st), 0) << sub;
        EXPECT_EQ(st.st_mode & 07777, 0700u) << sub;
    }
}

TEST_F(CacheTrust, GroupWritableRootNeedsTheOptIn) {
    fs::create_directories(root());
    ::chmod(root().c_str(), 02770);
    EXPECT_NE(error_of([] { build(dg_test::small_source(7), "sm_90a"); }).find("DG_JIT_CACHE_TRUST_GROUP"),
              std::string::npos);
    env_.set("DG_JIT_CACHE_TRUST_GROUP", "1");
    EXPECT_TRUE(build(dg_test::small_source(7), "sm_90a").compiled) << "the group is the user's own, setgid set";
    struct stat st;
    ASSERT_EQ(::stat((root() / "cache").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 02770u) << "a shared cache's directories are made for the group";
    ::chmod(root().c_str(), 0770);
    detail::clear_build_memo();
    EXPECT_NE(error_of([] { build(dg_test::small_source(7), "sm_90a"); }).find("setgid"), std::string::npos);
}

// ---- deletion ------------------------------------------------------------------------------------

TEST_F(CacheTrust, CompileInHomeKeepsOldFilesOfHomeTmp) {
    const fs::path home = dir_.path() / "home";
    dg_test::write_text(home / "tmp/project/draft.txt", "two days of work");
    set_old(home / "tmp/project/draft.txt", 2);
    set_old(home / "tmp/project", 2);
    env_.set("HOME", home.string()).set("DG_JIT_CACHE_DIR", home.string());
    EXPECT_TRUE(build(dg_test::small_source(8), "sm_90a").compiled);
    EXPECT_TRUE(fs::exists(home / "tmp/project/draft.txt"));
}

TEST_F(CacheTrust, CompileRemovesOnlyItsOwnStaleBuildDirs) {
    fs::create_directories(root());
    ::chmod(root().c_str(), 0700);
    const fs::path ours = root() / "tmp/build.0123456789abcdef0123456789abcdef.aaaaaa";
    const fs::path foreign = root() / "tmp/build.looks_like_ours";
    dg_test::write_text(ours / "kernel.cu", "x");
    detail::write_marker(ours);
    dg_test::write_text(foreign / "notes.txt", "x");
    set_old(ours, 2);
    set_old(foreign, 2);
    build(dg_test::small_source(9), "sm_90a");
    EXPECT_FALSE(fs::exists(ours));
    EXPECT_TRUE(fs::exists(foreign / "notes.txt"));
}

TEST_F(CacheTrust, SymlinkedTmpIsNotFollowedByACompile) {
    const fs::path elsewhere = dir_.path() / "elsewhere";
    dg_test::write_text(elsewhere / "old/file.txt", "x");
    set_old(elsewhere / "old", 2);
    fs::create_directories(root());
    ::chmod(root().c_str(), 0700);
    fs::create_directory_symlink(elsewhere, root() / "tmp");
    const std::string what = error_of([] { build(dg_test::small_source(10), "sm_90a"); });
    EXPECT_NE(what.find("symlink"), std::string::npos) << what;
    EXPECT_TRUE(fs::exists(elsewhere / "old/file.txt"));
    EXPECT_EQ(compiles(), 0);
}

TEST_F(CacheTrust, SymlinkedQuarantineIsNotFollowedByPrune) {
    const fs::path elsewhere = dir_.path() / "elsewhere";
    dg_test::write_text(elsewhere / "kernel.x.1/manifest", "deep_gemm-jit-manifest 1\n");
    detail::ensure_cache_dirs(root());
    fs::create_directory_symlink(elsewhere, root() / "quarantine");
    PruneOptions options;
    options.max_unused_seconds = 0;
    EXPECT_THROW(prune_cache(root(), options), ConfigError);
    EXPECT_TRUE(fs::exists(elsewhere / "kernel.x.1/manifest"));
}

TEST_F(CacheTrust, SymlinkedCacheIsNotFollowedByClear) {
    const fs::path elsewhere = dir_.path() / "elsewhere";
    const fs::path victim = elsewhere / "kernel.x.0123456789abcdef0123456789abcdef";
    dg_test::write_text(victim / "manifest", "deep_gemm-jit-manifest 1\n");
    detail::ensure_cache_dirs(root());
    fs::remove(root() / "cache");
    fs::create_directory_symlink(elsewhere, root() / "cache");
    PruneOptions options;
    options.remove_all = true;
    EXPECT_THROW(prune_cache(root(), options), ConfigError);
    EXPECT_TRUE(fs::exists(victim / "manifest"));
}

TEST_F(CacheTrust, PruneAndClearRemoveOnlyWhatTheCacheMade) {
    detail::ensure_cache_dirs(root());
    build(dg_test::small_source(11), "sm_90a");
    const fs::path foreign_entry = root() / "cache/kernel.mine.0123456789abcdef0123456789abcdef";
    dg_test::write_text(foreign_entry / "notes.txt", "x");
    dg_test::write_text(root() / "quarantine/notes.txt", "x");
    dg_test::write_text(root() / "quarantine/kernel.a_dir_of_mine/notes.txt", "x");
    dg_test::write_text(root() / "other/file.txt", "x");
    PruneOptions options;
    options.remove_all = true;
    const PruneReport report = prune_cache(root(), options);
    EXPECT_EQ(report.removed.size(), 1u) << "the one entry the cache made";
    EXPECT_TRUE(fs::exists(foreign_entry / "notes.txt"));
    EXPECT_TRUE(fs::exists(root() / "quarantine/notes.txt"));
    EXPECT_TRUE(fs::exists(root() / "quarantine/kernel.a_dir_of_mine/notes.txt"));
    EXPECT_TRUE(fs::exists(root() / "other/file.txt"));
}

// ---- read-only caches, no-compile mode, report-only flags -------------------------------------------

TEST_F(CacheTrust, ReadOnlyCompleteCacheServesHitsAndAMissSaysWhy) {
    SKIP_UNLESS_ROOT();  // root ignores permission bits: the reader is a second user
    ASSERT_TRUE(build(dg_test::small_source(12), "sm_90a").compiled);
    for (const char* sub : {"", "cache", "tmp", "locks"}) ::chmod((root() / sub).c_str(), 0755);
    for (const auto& e : fs::recursive_directory_iterator(root() / "cache")) ::chmod(e.path().c_str(), e.is_directory() ? 0755 : 0644);
    const fs::path out = dir_.path() / "reader";
    fs::create_directories(out);
    ::chown(out.c_str(), kOtherUser, kOtherUser);
    const int rc = as_user(kOtherUser, [&] {
        reload_settings();
        if (build(dg_test::small_source(12), "sm_90a").compiled) return 10;
        const std::string what = error_of([] { build(dg_test::small_source(13), "sm_90a"); });
        dg_test::write_text(out / "error.txt", what);
        return what.empty() ? 11 : 0;
    });
    EXPECT_EQ(rc, 0);
    const std::string what = dg_test::read_text(out / "error.txt");
    EXPECT_NE(what.find("dg_test_small"), std::string::npos) << what;
    EXPECT_NE(what.find("not writable"), std::string::npos) << what;
    EXPECT_EQ(compiles(), 1);
}

TEST_F(CacheTrust, ReadOnlyCacheNamesADamagedEntryAndRefusesPruneAsReadOnly) {
    SKIP_UNLESS_ROOT();
    const CachedKernel built = build(dg_test::small_source(33), "sm_90a");
    std::string cubin = built.cubin;
    cubin[cubin.size() / 2] ^= 1;
    dg_test::write_text(built.dir / "kernel.cubin", cubin);
    for (const char* sub : {"", "cache", "tmp", "locks"}) ::chmod((root() / sub).c_str(), 0755);
    ::chmod(built.dir.c_str(), 0755);
    const fs::path out = dir_.path() / "reader";
    fs::create_directories(out);
    ::chown(out.c_str(), kOtherUser, kOtherUser);
    const int rc = as_user(kOtherUser, [&] {
        reload_settings();
        detail::clear_build_memo();  // the parent's memo holds the undamaged kernel
        dg_test::write_text(out / "build.txt", error_of([] { build(dg_test::small_source(33), "sm_90a"); }));
        PruneOptions options;
        options.remove_all = true;
        dg_test::write_text(out / "prune.txt", error_of([&] { prune_cache(root(), options); }));
        return 0;
    });
    EXPECT_EQ(rc, 0);
    const std::string what = dg_test::read_text(out / "build.txt");
    EXPECT_NE(what.find("has an unusable entry"), std::string::npos) << what;
    EXPECT_NE(what.find("SHA-256"), std::string::npos) << what;
    const std::string pruned = dg_test::read_text(out / "prune.txt");
    EXPECT_NE(pruned.find("is read-only for you"), std::string::npos) << pruned;
    EXPECT_TRUE(fs::exists(built.dir / "kernel.cubin")) << "nothing removed";
}

TEST_F(CacheTrust, SymlinkLoopRootIsAPathErrorNotATrustOne) {
    fs::create_symlink(root(), root());  // a link to itself
    const std::string what = error_of([] { build(dg_test::small_source(34), "sm_90a"); });
    EXPECT_NE(what.find("cannot be used"), std::string::npos) << what;
    EXPECT_NE(what.find("symbolic links"), std::string::npos) << what;
    EXPECT_EQ(what.find("writable by no one else"), std::string::npos) << "no trust boilerplate: " << what;
}

TEST_F(CacheTrust, CompileModeErrorNamesTheKernelAndTheWarmup) {
    const fs::path record = dir_.path() / "kernels.jsonl";
    env_.set("DG_JIT_COMPILE", "error").set("DG_JIT_RECORD", record.string());
    const std::string what = error_of([] { build(dg_test::small_source(14), "sm_90a"); });
    EXPECT_NE(what.find("dg_test_small"), std::string::npos) << what;
    EXPECT_NE(what.find("python -m deep_gemm warmup " + record.string()), std::string::npos) << what;
    EXPECT_NE(what.find("without DG_JIT_COMPILE=error"), std::string::npos) << "the warm-up must compile: " << what;
    EXPECT_EQ(compiles(), 0);
    EXPECT_NE(dg_test::read_text(record).find("dg_test_small"), std::string::npos) << "recorded for the warm-up";
    env_.set("DG_JIT_COMPILE", std::nullopt);
    build(dg_test::small_source(14), "sm_90a");
    env_.set("DG_JIT_COMPILE", "error");
    detail::clear_build_memo();
    EXPECT_FALSE(build(dg_test::small_source(14), "sm_90a").compiled) << "hits are served";
    env_.set("DG_JIT_COMPILE", "sometimes");
    EXPECT_NE(error_of([] { settings(); }).find("DG_JIT_COMPILE"), std::string::npos);
}

TEST_F(CacheTrust, CompileModeWarnWarnsOncePerKernel) {
    env_.set("DG_JIT_COMPILE", "warn");
    int warnings = 0;
    set_log_sink([&](LogLevel, const std::string& message) { warnings += message.find("DG_JIT_COMPILE=warn") != std::string::npos; });
    EXPECT_TRUE(build(dg_test::small_source(15), "sm_90a").compiled);
    EXPECT_TRUE(build(dg_test::small_source(16), "sm_90a").compiled);
    detail::clear_build_memo();
    build(dg_test::small_source(15), "sm_90a");
    EXPECT_EQ(warnings, 2);
}

TEST_F(CacheTrust, ReportOnlyFlagsLeaveTheKeyAlone) {
    const CachedKernel plain = build(dg_test::small_source(17), "sm_90a");
    for (const char* variable : {"DG_JIT_DEBUG", "DG_JIT_PTXAS_VERBOSE"}) {
        env_.set(variable, "1");
        detail::clear_build_memo();
        const CachedKernel again = build(dg_test::small_source(17), "sm_90a");
        EXPECT_FALSE(again.compiled) << variable;
        EXPECT_EQ(again.dir, plain.dir) << variable;
        env_.set(variable, std::nullopt);
    }
    EXPECT_EQ(compiles(), 1);
}

// ---- environment values ---------------------------------------------------------------------------

TEST_F(CacheTrust, NonUtf8AndControlCharacterPathValuesAreRejectedByName) {
    const std::string bad_utf8 = (dir_.path() / "caf\xe9").string();
    for (const char* variable : {"DG_JIT_CACHE_DIR", "DG_JIT_NVCC_COMPILER", "DG_JIT_CUOBJDUMP", "DG_JIT_RECORD"}) {
        env_.set(variable, bad_utf8);
        const std::string what = error_of([] { settings(); });
        EXPECT_NE(what.find(variable), std::string::npos) << what;
        EXPECT_NE(what.find("\\xe9"), std::string::npos) << "the value is shown escaped: " << what;
        env_.set(variable, std::nullopt);
    }
    env_.set("DG_JIT_CACHE_DIR", std::nullopt).set("HOME", bad_utf8);
    EXPECT_NE(error_of([] { settings(); }).find("HOME="), std::string::npos);
    env_.set("HOME", std::nullopt).set("TMPDIR", bad_utf8);
    EXPECT_NE(error_of([] { settings(); }).find("TMPDIR="), std::string::npos);
    env_.set("TMPDIR", std::nullopt).set("HOME", dir_.path().string());
    for (const char* value : {"\n", "cache\x1b[31m"}) {
        env_.set("DG_JIT_CACHE_DIR", value);
        EXPECT_NE(error_of([] { settings(); }).find("control character"), std::string::npos) << value;
    }
    EXPECT_FALSE(fs::exists(fs::current_path() / "\n"));
}

TEST_F(CacheTrust, HomeThatIsAFileIsBlamedNotTheCacheVariable) {
    dg_test::write_text(dir_.path() / "home file", "x");
    env_.set("DG_JIT_CACHE_DIR", std::nullopt).set("HOME", (dir_.path() / "home file").string());
    const std::string what = error_of([] { build(dg_test::small_source(20), "sm_90a"); });
    EXPECT_NE(what.find("HOME='" + (dir_.path() / "home file").string() + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("DG_JIT_CACHE_DIR being unset"), std::string::npos) << what;
    EXPECT_EQ(what.find("writable by no one else"), std::string::npos) << "no trust boilerplate: " << what;
}

TEST_F(CacheTrust, RelativeTmpdirIsIgnored) {
    // The compiler runs in the build directory: a relative TMPDIR names a directory that is not there.
    fs::create_directories(dir_.path() / "cwd");
    const fs::path old_cwd = fs::current_path();
    fs::current_path(dir_.path() / "cwd");
    env_.set("TMPDIR", "relative/tmp");
    bool compiled = false;
    try {
        compiled = build(dg_test::small_source(21), "sm_90a").compiled;
    } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
    }
    fs::current_path(old_cwd);
    EXPECT_TRUE(compiled);
    // Without HOME, the fallback root is under /tmp, not under the relative TMPDIR (checked in a child:
    // the fallback's warning is once per process).
    env_.set("DG_JIT_CACHE_DIR", std::nullopt).set("HOME", std::nullopt);
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(settings().cache_dir == "/tmp/deep_gemm-" + std::to_string(::getuid()) ? 0 : 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
