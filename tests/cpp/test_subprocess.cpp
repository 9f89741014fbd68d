// The child-process runner: argv passed verbatim (no shell), output captured, status reported.
#include "jit/compiler.hpp"
#include "jit/errors.hpp"
#include "jit/subprocess.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
using namespace deep_gemm::jit::detail;
namespace fs = std::filesystem;

TEST(Subprocess, ArgumentsAreNotInterpretedByAShell) {
    dg_test::TempDir dir;
    const std::string hostile = "$(touch pwned); `touch pwned2` && touch pwned3 | 'x' \"y\" *";
    const auto result = run_process({"/bin/echo", hostile}, dir.path());
    EXPECT_TRUE(result.ok());
    EXPECT_EQ(result.out, hostile + "\n");
    EXPECT_TRUE(dg_test::list_dir(dir.path()).empty()) << "nothing was executed";
}

TEST(Subprocess, CapturesBothStreamsAndExitStatus) {
    const auto result = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
    EXPECT_FALSE(result.ok());
    EXPECT_EQ(result.exit_code, 3);
    EXPECT_EQ(result.out, "out\n");
    EXPECT_EQ(result.err, "err\n");
    EXPECT_EQ(result.status_text(), "exit status 3");
    const auto killed = run_process({"/bin/sh", "-c", "kill -9 $$"});
    EXPECT_EQ(killed.term_signal, 9);
    EXPECT_EQ(killed.status_text(), "killed by signal 9");
}

TEST(Subprocess, LargeOutputOnBothStreamsDoesNotDeadlock) {
    const auto result = run_process({"/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo 0123456789abcdef; echo fedcba9876543210 >&2; i=$((i+1)); done"});
    EXPECT_TRUE(result.ok());
    EXPECT_EQ(result.out.size(), 20000u * 17);
    EXPECT_EQ(result.err.size(), 20000u * 17);
}

TEST(Subprocess, WorkingDirectoryAndExtraEnvironment) {
    dg_test::TempDir dir;
    const fs::path odd = dir.path() / "a b;$(x)";
    fs::create_directories(odd);
    const auto result = run_process({"/bin/sh", "-c", "pwd; echo \"$DG_SUBPROCESS_TEST\""}, odd, {"DG_SUBPROCESS_TEST=v a l"});
    EXPECT_EQ(result.out, odd.string() + "\nv a l\n");
}

TEST(Subprocess, MissingProgramIsAConfigError) {
    EXPECT_THROW(run_process({"/nonexistent/program"}), ConfigError);
    EXPECT_THROW(run_process({}), ConfigError);
}

TEST(Subprocess, FormatCommandQuotesForDisplay) {
    EXPECT_EQ(format_command({"/usr/bin/nvcc", "-O3", "a b", "it's"}), "/usr/bin/nvcc -O3 'a b' 'it'\\''s'");
    EXPECT_TRUE(shell_safe("/usr/local/cuda-13.0/bin/nvcc"));
    EXPECT_FALSE(shell_safe("/opt/my cuda/bin/nvcc"));
    EXPECT_FALSE(shell_safe("/x/$(y)"));
}
