// Compiler selection, tool discovery, the ptxas report and the SASS dump (shared by NVCC and NVRTC).
#include "compiler.hpp"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <map>
#include <mutex>

#include "errors.hpp"
#include "files.hpp"
#include "log.hpp"
#include "subprocess.hpp"

namespace deep_gemm::jit::detail {

std::filesystem::path cuda_home() {
    const char* home = std::getenv("CUDA_HOME");
    if (home == nullptr || home[0] == '\0') home = std::getenv("CUDA_PATH");
    return (home != nullptr && home[0] != '\0') ? std::filesystem::path(home) : std::filesystem::path("/usr/local/cuda");
}

std::filesystem::path resolve_nvcc(const Settings& s) {
    if (!s.nvcc_compiler.empty()) {
        if (!is_executable_file(s.nvcc_compiler)) {
            throw ConfigError("DG_JIT_NVCC_COMPILER='" + s.nvcc_compiler +
                              "' is not an executable file; point it at nvcc, or unset it to search "
                              "$CUDA_HOME/bin, PATH and /usr/local/cuda/bin");
        }
        return s.nvcc_compiler;
    }
    if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && home[0] != '\0') {
        const std::filesystem::path candidate = std::filesystem::path(home) / "bin" / "nvcc";
        if (is_executable_file(candidate)) return candidate;
        // Not silently: the user meant this toolkit, and the search below may find another one.
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
            log(LogLevel::kWarning, "CUDA_HOME='" + std::string(home) + "' has no executable bin/nvcc; looking for "
                                    "nvcc on PATH and in /usr/local/cuda/bin instead (set CUDA_HOME to a CUDA toolkit, "
                                    "or DG_JIT_NVCC_COMPILER to nvcc)");
        }
    }
    if (std::filesystem::path on_path = find_on_path("nvcc"); !on_path.empty()) return on_path;
    const std::filesystem::path fallback = "/usr/local/cuda/bin/nvcc";
    if (is_executable_file(fallback)) return fallback;
    throw ConfigError(
        "nvcc was not found (looked at $CUDA_HOME/bin/nvcc, PATH and /usr/local/cuda/bin/nvcc); set "
        "DG_JIT_NVCC_COMPILER to its path, or set DG_JIT_USE_NVRTC=1 to compile with NVRTC");
}

std::filesystem::path resolve_cuobjdump(const Settings& s, const Compiler& c) {
    if (!s.cuobjdump.empty()) {
        if (!is_executable_file(s.cuobjdump)) {
            throw ConfigError("DG_JIT_CUOBJDUMP='" + s.cuobjdump + "' is not an executable file");
        }
        return s.cuobjdump;
    }
    std::vector<std::filesystem::path> candidates;
    if (!c.tool_dir().empty()) candidates.push_back(c.tool_dir() / "cuobjdump");
    candidates.push_back(cuda_home() / "bin" / "cuobjdump");
    if (std::filesystem::path on_path = find_on_path("cuobjdump"); !on_path.empty()) candidates.push_back(on_path);
    candidates.push_back("/usr/local/cuda/bin/cuobjdump");
    for (const auto& candidate : candidates) {
        if (is_executable_file(candidate)) return candidate;
    }
    throw ConfigError(
        "DG_JIT_DUMP_SASS/DG_JIT_DUMP_ASM need cuobjdump, which was not found beside nvcc, in "
        "$CUDA_HOME/bin, on PATH or in /usr/local/cuda/bin; set DG_JIT_CUOBJDUMP to its path (the "
        "nvidia-cuda-cuobjdump wheel ships one under site-packages/nvidia/cu13/bin)");
}

std::string arch_number(const std::string& arch) {
    bool ok = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0;
    std::size_t i = 3;
    std::size_t digits = 0;
    while (ok && i < arch.size() && arch[i] >= '0' && arch[i] <= '9') ++i, ++digits;
    if (ok && i < arch.size() && (arch[i] == 'a' || arch[i] == 'f')) ++i;
    ok = ok && digits >= 2 && i == arch.size();
    if (!ok) throw ConfigError("invalid target arch '" + arch + "'; expected e.g. sm_90a");
    return arch.substr(3);
}

std::vector<std::string> expand_flags(const std::vector<std::string>& flags, const std::filesystem::path& include_dir) {
    std::vector<std::string> out;
    out.reserve(flags.size());
    const std::string placeholders[2] = {kIncludePlaceholder, kCudaIncludePlaceholder};
    const std::string values[2] = {include_dir.string(), (cuda_home() / "include").string()};
    for (std::string flag : flags) {
        for (int i = 0; i < 2; ++i) {
            for (std::size_t pos; (pos = flag.find(placeholders[i])) != std::string::npos;) {
                flag.replace(pos, placeholders[i].size(), values[i]);
            }
        }
        out.push_back(std::move(flag));
    }
    return out;
}

bool shell_safe(const std::string& path) {
    for (char c : path) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                        c == '.' || c == '_' || c == '-' || c == '+' || c == ',' || c == '=' || c == '@';
        if (!ok) return false;
    }
    return !path.empty();
}

namespace {
// A TMPDIR fit for a compiler that runs in another directory: absolute (a relative one would name a
// different place there) and shell-safe.
bool usable_tmpdir(const char* tmp) { return tmp != nullptr && tmp[0] == '/' && shell_safe(tmp); }

std::filesystem::path safe_temp_base() {
    const char* tmp = std::getenv("TMPDIR");
    return usable_tmpdir(tmp) ? std::filesystem::path(tmp) : std::filesystem::path("/tmp");
}
}  // namespace

RunDir::RunDir(const std::filesystem::path& work_dir) : work_dir_(work_dir), path_(work_dir) {
    if (shell_safe(std::filesystem::absolute(work_dir).string())) return;
    std::string tmpl = (safe_temp_base() / "deep_gemm-build.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw ConfigError("cannot create a scratch build directory under " + safe_temp_base().string() + ": " +
                          std::strerror(errno) + "; set TMPDIR to a writable directory");
    }
    path_ = tmpl;
    scratch_ = true;
    for (const char* file : {"kernel.cu", "kernel.cubin"}) {
        if (auto data = read_file(work_dir / file)) write_file_durable(path_ / file, *data);
    }
}

RunDir::~RunDir() {
    if (scratch_) remove_tree(path_);
}

std::vector<std::string> RunDir::env() const {
    const char* tmp = std::getenv("TMPDIR");
    if (tmp == nullptr || tmp[0] == '\0' || usable_tmpdir(tmp)) return {};
    return {"TMPDIR=" + safe_temp_base().string()};
}

void RunDir::copy_back(const std::string& file) const {
    if (!scratch_) return;
    if (auto data = read_file(path_ / file)) write_file_durable(work_dir_ / file, *data);
}

// ---- ptxas report ----

namespace {

// The integer just before `unit` in `line` ("8 bytes stack frame" -> 8), or -1.
long number_before(const std::string& line, const std::string& unit) {
    const std::size_t at = line.find(unit);
    if (at == std::string::npos) return -1;
    std::size_t end = at;
    while (end > 0 && line[end - 1] == ' ') --end;
    std::size_t begin = end;
    while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
    if (begin == end) return -1;
    return std::strtol(line.substr(begin, end - begin).c_str(), nullptr, 10);
}

}  // namespace

std::vector<PtxasFunctionReport> parse_ptxas_report(const std::string& log) {
    std::vector<PtxasFunctionReport> reports;
    PtxasFunctionReport* current = nullptr;
    std::size_t pos = 0;
    while (pos < log.size()) {
        std::size_t end = log.find('\n', pos);
        if (end == std::string::npos) end = log.size();
        const std::string line = log.substr(pos, end - pos);
        pos = end + 1;
        static const std::string kProperties = "Function properties for ";
        if (const std::size_t at = line.find(kProperties); at != std::string::npos) {
            std::string function = line.substr(at + kProperties.size());
            while (!function.empty() && (function.back() == '\r' || function.back() == ' ')) function.pop_back();
            reports.push_back({function});
            current = &reports.back();
            continue;
        }
        if (current != nullptr && line.find("bytes stack frame") != std::string::npos) {
            current->stack_frame = std::max(0L, number_before(line, "bytes stack frame"));
            current->spill_stores = std::max(0L, number_before(line, "bytes spill stores"));
            current->spill_loads = std::max(0L, number_before(line, "bytes spill loads"));
            continue;
        }
        if (current != nullptr && line.find("Used ") != std::string::npos) {
            current->registers = number_before(line, "registers");
        }
    }
    return reports;
}

void handle_ptxas_report(const std::string& name, const std::string& command, const std::string& log,
                         const Settings& s) {
    if ((s.ptxas_verbose || s.debug) && !log.empty()) {
        jit::log(LogLevel::kInfo, "ptxas report for " + name + ":\n" + log);
    }
    if (!s.ptxas_check) return;
    const auto reports = parse_ptxas_report(log);
    if (reports.empty()) {
        throw CompileError("DG_JIT_PTXAS_CHECK: no ptxas resource report for kernel " + name +
                           "\ncommand: " + command + "\nlog:\n" + log);
    }
    for (const auto& r : reports) {
        if (r.stack_frame > 0 || r.spill_stores > 0 || r.spill_loads > 0) {
            throw CompileError("DG_JIT_PTXAS_CHECK: kernel " + name + " (function " + r.function +
                               ") uses local memory: " + std::to_string(r.stack_frame) + " bytes stack frame, " +
                               std::to_string(r.spill_stores) + " bytes spill stores, " +
                               std::to_string(r.spill_loads) + " bytes spill loads\ncommand: " + command +
                               "\nlog:\n" + log);
        }
    }
}

void dump_sass(const CompileJob& job, const Settings& s, const Compiler& c) {
    const std::vector<std::string> argv = {resolve_cuobjdump(s, c).string(), "--dump-sass", "kernel.cubin"};
    const RunDir run_dir(job.work_dir);
    const std::string command = format_command(argv);
    if (s.print_compiler_command || s.debug) jit::log(LogLevel::kInfo, "dumping SASS of " + job.name + ": " + command);
    // cuobjdump runs nvdisasm; when neither NVDISASM_PATH nor PATH provides one, point it at a toolkit's.
    std::vector<std::string> extra_env = run_dir.env();
    const char* nvdisasm_path = std::getenv("NVDISASM_PATH");
    if ((nvdisasm_path == nullptr || nvdisasm_path[0] == '\0') && find_on_path("nvdisasm").empty() &&
        !is_executable_file(std::filesystem::path(argv[0]).parent_path() / "nvdisasm")) {
        for (const auto& dir : {c.tool_dir(), cuda_home() / "bin", std::filesystem::path("/usr/local/cuda/bin")}) {
            if (!dir.empty() && is_executable_file(dir / "nvdisasm")) {
                extra_env.push_back("NVDISASM_PATH=" + dir.string());
                break;
            }
        }
    }
    const ProcessResult result = run_process(argv, run_dir.path(), extra_env);
    if (!result.ok()) {
        const std::string tool = s.cuobjdump.empty() ? "cuobjdump" : "DG_JIT_CUOBJDUMP='" + s.cuobjdump + "'";
        throw CompileError(tool + " failed for kernel " + job.name + " (its SASS dump, asked for by DG_JIT_DUMP_SASS or "
                           "DG_JIT_DUMP_ASM)\ncommand: " + command + "\n" +
                           result.status_text() + "\nlog:\n" + result.err + result.out);
    }
    write_file_durable(job.work_dir / "kernel.sass", result.out);
}

// ---- singleton ----

const Compiler& compiler() {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Compiler>>* compilers = new std::map<std::string, std::unique_ptr<Compiler>>();
    static const Settings* last_settings = nullptr;
    static const Compiler* last_compiler = nullptr;

    const Settings& s = settings();
    std::lock_guard<std::mutex> lock(mutex);
    if (&s == last_settings && last_compiler != nullptr) return *last_compiler;
    std::string choice;
    std::filesystem::path nvcc;
    if (s.use_nvrtc) {
        choice = "nvrtc";
    } else {
        nvcc = resolve_nvcc(s);
        choice = "nvcc:" + nvcc.string();
    }
    auto it = compilers->find(choice);
    if (it == compilers->end()) {
        std::unique_ptr<Compiler> made = s.use_nvrtc ? make_nvrtc_compiler() : make_nvcc_compiler(nvcc);
        if (s.debug) jit::log(LogLevel::kDebug, "using " + made->kind() + " " + made->version());
        it = compilers->emplace(choice, std::move(made)).first;
    }
    last_settings = &s;
    last_compiler = it->second.get();
    return *last_compiler;
}

}  // namespace deep_gemm::jit::detail
