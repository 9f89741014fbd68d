// The compiler interface (NVCC or NVRTC) and its lazily built singleton. Internal to the JIT core.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "settings.hpp"

namespace deep_gemm::jit::detail {

// Stand-ins for absolute paths inside flags, so that flags can go into the cache key.
inline constexpr const char* kIncludePlaceholder = "${DG_INCLUDE}";
inline constexpr const char* kCudaIncludePlaceholder = "${CUDA_INCLUDE}";

struct CompileJob {
    std::string name;                    // kernel name, for messages
    std::string code;                    // the .cu text (also written to work_dir/kernel.cu by the caller)
    std::string arch;                    // "sm_90a"
    std::filesystem::path include_dir;   // replaces kIncludePlaceholder
    std::filesystem::path work_dir;      // outputs: kernel.cubin, and kernel.ptx / kernel.sass when asked
    bool dump_ptx = false;
    bool dump_sass = false;
    // Compile against trimmed CUDA headers (see Compiler::flags); build() sets it when DG_JIT_TRIM_HEADERS
    // is on and every header the kernel includes lies under include_dir.
    bool trim_headers = false;
};

class Compiler {
public:
    virtual ~Compiler() = default;
    virtual std::string kind() const = 0;     // "nvcc" or "nvrtc"
    virtual std::string version() const = 0;  // full version text (no absolute paths)
    // Flags for `arch` under `s`, with absolute paths replaced by the placeholders above. With
    // `trim_headers`, NVCC compiles against only the CUDA headers device code needs (valid for kernels that
    // include none of the toolkit's headers themselves; the cubin is the same, the front end reads less).
    virtual std::vector<std::string> flags(const std::string& arch, const Settings& s, bool trim_headers) const = 0;
    // The flags of a kernel that includes only our own headers (the usual case).
    std::vector<std::string> flags(const std::string& arch, const Settings& s) const {
        return flags(arch, s, s.trim_headers);
    }
    // Compiles job.code; writes work_dir/kernel.cubin (and the dumps) and returns the cubin bytes.
    // Throws CompileError (with command, status and log) or ConfigError.
    virtual std::string compile(const CompileJob& job, const Settings& s) const = 0;
    // Directory of the compiler's executable (to find cuobjdump beside it), or empty.
    virtual std::filesystem::path tool_dir() const { return {}; }
};

// The compiler chosen by settings().use_nvrtc (and DG_JIT_NVCC_COMPILER). Built on first use; a new one
// is built after reload_settings() only if the choice changed. Never destroyed.
const Compiler& compiler();

std::unique_ptr<Compiler> make_nvcc_compiler(const std::filesystem::path& nvcc);
std::unique_ptr<Compiler> make_nvrtc_compiler();

// NVCC as DG_JIT_NVCC_COMPILER / $CUDA_HOME/bin / PATH / /usr/local/cuda/bin name it. Throws ConfigError.
std::filesystem::path resolve_nvcc(const Settings& s);
// cuobjdump from DG_JIT_CUOBJDUMP / beside the compiler / $CUDA_HOME/bin / PATH / /usr/local/cuda/bin.
std::filesystem::path resolve_cuobjdump(const Settings& s, const Compiler& c);
// $CUDA_HOME, else /usr/local/cuda.
std::filesystem::path cuda_home();

// "sm_90a" -> {"90a"}; throws ConfigError for anything that is not sm_<digits>[a|f].
std::string arch_number(const std::string& arch);

// ---- ptxas resource report ----

struct PtxasFunctionReport {
    std::string function;
    long stack_frame = 0, spill_stores = 0, spill_loads = 0;
    long registers = -1;
};
std::vector<PtxasFunctionReport> parse_ptxas_report(const std::string& log);

// Logs the report when asked (DG_JIT_PTXAS_VERBOSE / DG_JIT_DEBUG) and, with DG_JIT_PTXAS_CHECK,
// throws CompileError when a function uses local memory (stack frame or spills).
void handle_ptxas_report(const std::string& name, const std::string& command, const std::string& log,
                         const Settings& s);

// Runs cuobjdump --dump-sass on work_dir/kernel.cubin into work_dir/kernel.sass.
void dump_sass(const CompileJob& job, const Settings& s, const Compiler& c);

// True when `path` has only characters that no shell treats specially ([A-Za-z0-9/._+,=@-]).
bool shell_safe(const std::string& path);

// NVCC and cuobjdump paste paths (the absolute source path, their temp files) into /bin/sh command
// lines, so they must run in a directory whose absolute path is shell-safe. When `work_dir` is not,
// this makes a private scratch directory under $TMPDIR (or /tmp) and removes it on destruction.
class RunDir {
public:
    explicit RunDir(const std::filesystem::path& work_dir);
    ~RunDir();
    RunDir(const RunDir&) = delete;
    RunDir& operator=(const RunDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    bool is_scratch() const { return scratch_; }
    // TMPDIR for the child when the inherited one is not shell-safe (empty otherwise).
    std::vector<std::string> env() const;
    // Copies `file` from the scratch dir into work_dir (no-op when running in work_dir).
    void copy_back(const std::string& file) const;

private:
    std::filesystem::path work_dir_, path_;
    bool scratch_ = false;
};

// Replaces the placeholders in `flags`.
std::vector<std::string> expand_flags(const std::vector<std::string>& flags, const std::filesystem::path& include_dir);

}  // namespace deep_gemm::jit::detail
