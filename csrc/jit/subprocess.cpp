#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "errors.hpp"

extern char** environ;

namespace deep_gemm::jit::detail {
namespace {

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

struct SpawnActions {
    posix_spawn_file_actions_t actions;
    SpawnActions() { posix_spawn_file_actions_init(&actions); }
    ~SpawnActions() { posix_spawn_file_actions_destroy(&actions); }
};

}  // namespace

std::string ProcessResult::status_text() const {
    if (term_signal != 0) return "killed by signal " + std::to_string(term_signal);
    return "exit status " + std::to_string(exit_code);
}

std::string format_command(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& arg : argv) {
        if (!out.empty()) out.push_back(' ');
        bool plain = !arg.empty();
        for (char c : arg) {
            const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                              std::strchr("-_./=,:+@%", c) != nullptr;
            plain = plain && safe;
        }
        if (plain) {
            out += arg;
            continue;
        }
        out.push_back('\'');
        for (char c : arg) {
            if (c == '\'') {
                out += "'\\''";
            } else {
                out.push_back(c);
            }
        }
        out.push_back('\'');
    }
    return out;
}

bool is_executable_file(const std::filesystem::path& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    return ::access(path.c_str(), X_OK) == 0;
}

std::filesystem::path find_on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    if (path == nullptr) return {};
    std::string_view rest(path);
    while (true) {
        const std::size_t colon = rest.find(':');
        std::string_view dir = rest.substr(0, colon);
        if (!dir.empty()) {
            std::filesystem::path candidate = std::filesystem::path(dir) / name;
            if (is_executable_file(candidate)) return candidate;
        }
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return {};
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                          const std::vector<std::string>& extra_env) {
    if (argv.empty()) throw ConfigError("run_process: empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw ConfigError(std::string("pipe2: ") + std::strerror(errno));
    Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw ConfigError(std::string("pipe2: ") + std::strerror(errno));
    Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

    SpawnActions actions;
    posix_spawn_file_actions_addopen(&actions.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions.actions, out_write.fd, 1);
    posix_spawn_file_actions_adddup2(&actions.actions, err_write.fd, 2);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions.actions, cwd.c_str());

    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    std::vector<char*> env;
    for (const std::string& entry : extra_env) env.push_back(const_cast<char*>(entry.c_str()));
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string_view current(*e);
        const std::string_view name = current.substr(0, current.find('='));
        bool overridden = false;
        for (const std::string& entry : extra_env) {
            overridden = overridden || std::string_view(entry).substr(0, entry.find('=')) == name;
        }
        if (!overridden) env.push_back(*e);
    }
    env.push_back(nullptr);

    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions.actions, nullptr, args.data(), env.data());
    out_write.reset();
    err_write.reset();
    if (rc != 0) {
        throw ConfigError("cannot run '" + argv[0] + "': " + std::strerror(rc));
    }

    ProcessResult result;
    pollfd fds[2] = {{out_read.fd, POLLIN, 0}, {err_read.fd, POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_count = 2;
    char buffer[65536];
    while (open_count > 0) {
        const int ready = ::poll(fds, 2, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
            if (n > 0) {
                sinks[i]->append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                fds[i].fd = -1;
                --open_count;
            }
        }
    }

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw ConfigError("waitpid for '" + argv[0] + "': " + std::strerror(errno));
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
    return result;
}

}  // namespace deep_gemm::jit::detail
