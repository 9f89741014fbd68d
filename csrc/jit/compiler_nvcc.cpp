// NVCC: run as a child process from an argument vector (never a shell).
#include <cstdlib>

#include "compiler.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "log.hpp"
#include "sha256.hpp"
#include "subprocess.hpp"

namespace deep_gemm::jit::detail {
namespace {

// NVCC runs its sub-steps through /bin/sh with paths pasted into the command lines (the absolute source
// path among them), so a path with a space, ';' or '$(...)' would break or even execute. It runs in a
// shell-safe directory (RunDir) with relative file names, and sees the include root either as it is
// (when shell-safe) or through a symlink named "include" in that directory.
std::filesystem::path nvcc_include_path(const std::filesystem::path& include_dir, const std::filesystem::path& run_dir) {
    if (shell_safe(include_dir.string())) return include_dir;
    const std::filesystem::path link = run_dir / "include";
    std::error_code ec;
    std::filesystem::remove(link, ec);
    std::filesystem::create_directory_symlink(include_dir, link, ec);
    if (ec) {
        throw ConfigError("cannot link the include dir " + include_dir.string() + " into " + run_dir.string() + ": " +
                          ec.message());
    }
    return "include";
}

constexpr int kMinMajor = 12, kMinMinor = 3;

// NVCC force-includes all of cuda_runtime.h into every compile. Its host half (the runtime API and, through
// crt/common_functions.h, the C and C++ math and library headers) is most of the front end's work in a cold
// kernel compile (about 0.35 s of 0.8 s for an FP8 GEMM: gcc's preprocessing plus cicc parsing) and adds
// nothing to a cubin. With trimmed headers, -D__CUDA_RUNTIME_H__ (that header's include guard) makes the
// forced include empty and this prelude declares what device code uses instead: the execution-space
// keywords, the built-in vector types and variables (threadIdx, ...) and the device intrinsics. The CUDA
// internal headers expect __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__ while they are read, as cuda_runtime.h
// arranges. Kernels that include a toolkit header themselves (cuda_fp16.h wants memcpy from the part left
// out) are compiled with the full header (build() decides), and a trimmed compile that fails is retried with
// the full header. The cubins are byte-identical either way.
constexpr const char* kDevicePrelude =
    "// deep_gemm: the device-side part of cuda_runtime.h (see csrc/jit/compiler_nvcc.cpp)\n"
    "#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n"
    "#include <crt/host_defines.h>\n"
    "#include <builtin_types.h>\n"
    "#include <vector_functions.h>\n"
    "#include <device_launch_parameters.h>\n"
    "#include <crt/device_functions.h>\n"
    "#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n";

// Named after its content, so that the name in the flags (part of the cache key) changes with it.
const std::string& device_prelude_name() {
    static const std::string name = "dg_device_prelude_" + sha256_hex(kDevicePrelude).substr(0, 12) + ".h";
    return name;
}

// A symlink named nvcc in some directory is resolved, so that nvcc finds its own toolkit.
std::filesystem::path canonical_or_same(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(path, ec);
    return ec ? path : real;
}

class NvccCompiler final : public Compiler {
public:
    explicit NvccCompiler(std::filesystem::path nvcc) : nvcc_(canonical_or_same(nvcc)) {
        const std::vector<std::string> argv = {nvcc_.string(), "--version"};
        const ProcessResult result = run_process(argv);
        if (!result.ok()) {
            throw ConfigError("cannot query the NVCC version: " + format_command(argv) + " ended with " +
                              result.status_text() + ":\n" + result.err + result.out +
                              "\nset DG_JIT_NVCC_COMPILER to a working nvcc");
        }
        // "Cuda compilation tools, release 13.0, V13.0.88" and "Build cuda_13.0.r13.0/compiler.36424714_0"
        const std::string& text = result.out;
        const std::size_t release = text.find("release ");
        int major = 0, minor = 0;
        if (release != std::string::npos) {
            char* end = nullptr;
            major = static_cast<int>(std::strtol(text.c_str() + release + 8, &end, 10));
            if (end != nullptr && *end == '.') minor = static_cast<int>(std::strtol(end + 1, nullptr, 10));
        }
        if (major == 0) {
            throw ConfigError("cannot parse the NVCC version from '" + nvcc_.string() + " --version':\n" + text +
                              "\nset DG_JIT_NVCC_COMPILER to a working nvcc");
        }
        if (major < kMinMajor || (major == kMinMajor && minor < kMinMinor)) {
            throw ConfigError("NVCC " + std::to_string(major) + "." + std::to_string(minor) + " at " +
                              nvcc_.string() + " is too old: deep_gemm needs CUDA 12.3 or newer (12.9+ "
                              "recommended); set DG_JIT_NVCC_COMPILER or CUDA_HOME to a newer toolkit");
        }
        // Keep the lines that identify the build ("release ...", "Build ..."), not the dates/copyright.
        std::size_t pos = 0;
        while (pos < text.size()) {
            std::size_t end = text.find('\n', pos);
            if (end == std::string::npos) end = text.size();
            const std::string line = text.substr(pos, end - pos);
            if (line.find("release") != std::string::npos || line.rfind("Build", 0) == 0) {
                if (!version_.empty()) version_ += "; ";
                version_ += line;
            }
            pos = end + 1;
        }
    }

    std::string kind() const override { return "nvcc"; }
    std::string version() const override { return version_; }
    std::filesystem::path tool_dir() const override { return nvcc_.parent_path(); }

    std::vector<std::string> flags(const std::string& arch, const Settings& s, bool trim_headers) const override {
        const std::string number = arch_number(arch);
        std::vector<std::string> f = {"-cubin",
                                      "-gencode=arch=compute_" + number + ",code=sm_" + number,
                                      "-std=c++" + std::to_string(s.cpp_standard),
                                      "-O3",
                                      "--expt-relaxed-constexpr",
                                      std::string("-I") + kIncludePlaceholder};
        if (trim_headers) f.insert(f.end(), {"-D__CUDA_RUNTIME_H__", "-include", device_prelude_name()});
        if (s.ptxas_verbose || s.debug || s.ptxas_check) {
            f.push_back("-Xptxas");
            f.push_back("-v");
        }
        if (s.with_lineinfo) f.push_back("-lineinfo");
        return f;
    }

    std::string compile(const CompileJob& job, const Settings& s) const override {
        const RunDir run_dir(job.work_dir);
        const std::filesystem::path include = nvcc_include_path(job.include_dir, run_dir.path());
        bool trim = job.trim_headers;
        if (trim) write_file(run_dir.path() / device_prelude_name(), kDevicePrelude);
        auto cubin_argv = [&] {
            std::vector<std::string> argv = {nvcc_.string()};
            for (std::string& flag : expand_flags(flags(job.arch, s, trim), include)) argv.push_back(std::move(flag));
            argv.insert(argv.end(), {"-o", "kernel.cubin", "kernel.cu"});
            return argv;
        };
        std::vector<std::string> argv = cubin_argv();
        std::string command = format_command(argv);
        ProcessResult result = run(job, s, argv, command, run_dir, /*may_fail=*/trim);
        if (!result.ok()) {
            // The prelude relies on how the toolkit splits cuda_runtime.h internally; should a toolkit
            // differ, the compile still succeeds with the full header (then at twice the cost). A kernel that
            // fails both ways is the kernel's error (raised below), not the toolkit's: warn only when the
            // full header helped.
            const std::string trimmed_output = (result.err + result.out).substr(0, 2000);
            trim = false;
            argv = cubin_argv();
            command = format_command(argv);
            result = run(job, s, argv, command, run_dir);
            log(LogLevel::kWarning, "nvcc failed on kernel " + job.name + " with trimmed CUDA headers but " +
                "compiled it with the full ones (DG_JIT_TRIM_HEADERS=0 skips the first attempt). nvcc said:\n" +
                trimmed_output);
        }
        handle_ptxas_report(job.name, command, result.err + result.out, s);

        std::optional<std::string> cubin = read_file(run_dir.path() / "kernel.cubin");
        if (!cubin || cubin->empty()) {
            throw CompileError("nvcc produced no cubin for kernel " + job.name + "\ncommand: " + command);
        }
        if (job.dump_ptx) {
            const std::string number = arch_number(job.arch);
            std::vector<std::string> ptx_argv = {nvcc_.string(), "-ptx",
                                                 "-gencode=arch=compute_" + number + ",code=compute_" + number};
            for (std::string& flag : expand_flags(flags(job.arch, s, trim), include)) {
                if (flag == "-cubin" || flag.rfind("-gencode", 0) == 0 || flag == "-Xptxas" || flag == "-v") continue;
                ptx_argv.push_back(std::move(flag));
            }
            ptx_argv.insert(ptx_argv.end(), {"-o", "kernel.ptx", "kernel.cu"});
            run(job, s, ptx_argv, format_command(ptx_argv), run_dir);
        }
        std::error_code ec;
        if (include != job.include_dir) std::filesystem::remove(run_dir.path() / "include", ec);
        if (job.trim_headers) std::filesystem::remove(run_dir.path() / device_prelude_name(), ec);
        for (const char* file : {"kernel.cubin", "kernel.ptx"}) run_dir.copy_back(file);
        if (job.dump_sass) dump_sass(job, s, *this);
        return *cubin;
    }

private:
    // Runs nvcc; a failure throws CompileError, or is returned when `may_fail`.
    ProcessResult run(const CompileJob& job, const Settings& s, const std::vector<std::string>& argv,
                      const std::string& command, const RunDir& run_dir, bool may_fail = false) const {
        if (s.print_compiler_command || s.debug) jit::log(LogLevel::kInfo, "compiling " + job.name + ": " + command);
        ProcessResult result = run_process(argv, run_dir.path(), run_dir.env());
        if (!result.ok() && may_fail) return result;
        if (!result.ok()) {
            throw CompileError("failed to compile kernel " + job.name + " with nvcc (" + result.status_text() +
                               ")\ncommand (in " + run_dir.path().string() + "): " + command + "\nlog:\n" +
                               result.err + result.out);
        }
        if (s.debug && !(result.err + result.out).empty()) {
            jit::log(LogLevel::kDebug, "nvcc output for " + job.name + ":\n" + result.err + result.out);
        }
        return result;
    }

    std::filesystem::path nvcc_;
    std::string version_;
};

}  // namespace

std::unique_ptr<Compiler> make_nvcc_compiler(const std::filesystem::path& nvcc) {
    return std::make_unique<NvccCompiler>(nvcc);
}

}  // namespace deep_gemm::jit::detail
