// DG_JIT_RECORD: the recorded line (escaping), one line per first use of a kernel in a process, and whole
// lines when many processes append to one file at once.
#include <sys/wait.h>
#include <unistd.h>

#include "jit/record.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

TEST(Record, LineEscapesEverythingJsonNeeds) {
    const KernelSource src{"k\"1", "sym", "line 1\n\t\"q\" \\ \x01 \xc3\xa9"};
    EXPECT_EQ(detail::format_record(src, "sm_90a"),
              "{\"format\": 1, \"name\": \"k\\\"1\", \"symbol\": \"sym\", \"arch\": \"sm_90a\", "
              "\"code\": \"line 1\\n\\t\\\"q\\\" \\\\ \\u0001 \\u00c3\\u00a9\"}\n");
}

TEST(Record, ManyProcessesAppendWholeLines) {
    dg_test::TempDir dir;
    const fs::path file = dir.path() / "record.jsonl";
    const std::string code(20000, 'x');  // longer than a pipe buffer: a torn write would show
    constexpr int kProcesses = 8, kLines = 25;
    std::vector<pid_t> pids;
    for (int p = 0; p < kProcesses; ++p) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            std::string name = "k";
            name += std::to_string(p);
            for (int i = 0; i < kLines; ++i) detail::append_record(file, {name, "s", code}, "sm_90a");
            ::_exit(0);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
    const std::string text = dg_test::read_text(file);
    std::istringstream lines(text);
    int count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
        ASSERT_EQ(line.rfind("{\"format\": 1, \"name\": \"k", 0), 0u) << "line " << count;
        ASSERT_EQ(line.substr(line.size() - 20002), std::string(20000, 'x') + "\"}") << "line " << count;
    }
    EXPECT_EQ(count, kProcesses * kLines);
}

TEST(Record, EachKernelOncePerProcessWhetherCompiledOrFound) {
    dg_test::TempDir dir;
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    const fs::path file = dir.path() / "rec.jsonl";
    env.set("DG_JIT_CACHE_DIR", (dir.path() / "cache").string()).set("DG_JIT_RECORD", file.string());
    env.set("DG_JIT_NVCC_COMPILER", DG_TEST_NVCC);
    set_include_dir(dg_test::kTestInclude);
    EXPECT_TRUE(build(dg_test::small_source(7), "sm_90a").compiled);
    EXPECT_FALSE(build(dg_test::small_source(7), "sm_90a").compiled);  // in-process memo: not recorded again
    EXPECT_EQ(dg_test::count_lines(file), 1);
    detail::clear_build_memo();  // as a new process would: found on disk, recorded
    EXPECT_FALSE(build(dg_test::small_source(7), "sm_90a").compiled);
    EXPECT_EQ(dg_test::count_lines(file), 2);
    env.set("DG_JIT_RECORD", std::nullopt);
    detail::clear_build_memo();
    build(dg_test::small_source(7), "sm_90a");
    EXPECT_EQ(dg_test::count_lines(file), 2) << "nothing recorded without DG_JIT_RECORD";
}
