// Runs a program from an argument vector (posix_spawn, never a shell) and captures its output.
// Internal to the JIT core.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace deep_gemm::jit::detail {

struct ProcessResult {
    int exit_code = -1;    // exit status when the program exited normally, else -1
    int term_signal = 0;   // the signal that ended it, else 0
    std::string out;       // captured stdout
    std::string err;       // captured stderr
    bool ok() const { return exit_code == 0 && term_signal == 0; }
    std::string status_text() const;  // "exit status 2" / "killed by signal 9"
};

// argv[0] must be a path to an executable (no PATH search). stdin is /dev/null. `cwd` (if not empty)
// is the child's working directory; `extra_env` entries ("NAME=value") are added to (and override) the
// inherited environment. Throws ConfigError if the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {},
                          const std::vector<std::string>& extra_env = {});

// The command line as a shell would need it typed (single-quoted where needed), for messages only.
std::string format_command(const std::vector<std::string>& argv);

// First executable regular file named `name` in the directories of $PATH, or empty.
std::filesystem::path find_on_path(const std::string& name);

// True when `path` is a regular file (following links) that this process may execute.
bool is_executable_file(const std::filesystem::path& path);

}  // namespace deep_gemm::jit::detail
