// NVRTC: libnvrtc opened with dlopen (no link dependency); compiles straight to a cubin for the real
// arch (nvrtcGetCUBIN), so the driver never JIT-compiles PTX.
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <memory>

#include "compiler.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "log.hpp"
#include "subprocess.hpp"

namespace deep_gemm::jit::detail {
namespace {

struct NvrtcApi {
    decltype(&::nvrtcVersion) version = nullptr;
    decltype(&::nvrtcGetErrorString) error_string = nullptr;
    decltype(&::nvrtcCreateProgram) create = nullptr;
    decltype(&::nvrtcDestroyProgram) destroy = nullptr;
    decltype(&::nvrtcCompileProgram) compile = nullptr;
    decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
    decltype(&::nvrtcGetProgramLog) log = nullptr;
    decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
    decltype(&::nvrtcGetCUBIN) cubin = nullptr;
    decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
    decltype(&::nvrtcGetPTX) ptx = nullptr;
    std::string library_file;  // e.g. "libnvrtc.so.13.0.88" (file name only)
    std::filesystem::path library_dir;
};

NvrtcApi open_nvrtc() {
    std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so", "libnvrtc.so.12"};
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so", "libnvrtc.so.12"}) {
        candidates.push_back((cuda_home() / "lib64" / name).string());
        candidates.push_back((cuda_home() / "lib" / name).string());
    }
    void* handle = nullptr;
    std::string errors;
    for (const std::string& candidate : candidates) {
        handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) break;
        if (const char* e = ::dlerror()) errors += std::string("\n  ") + e;
    }
    if (handle == nullptr) {
        throw ConfigError("DG_JIT_USE_NVRTC=1 but libnvrtc could not be loaded (tried libnvrtc.so.13, libnvrtc.so, "
                          "libnvrtc.so.12 and $CUDA_HOME/lib64):" + errors +
                          "\ninstall the CUDA toolkit's NVRTC, set CUDA_HOME, or unset DG_JIT_USE_NVRTC");
    }
    NvrtcApi api;
    auto resolve = [&](auto& fn, const char* symbol) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, symbol));
        if (fn == nullptr) throw ConfigError(std::string("libnvrtc lacks ") + symbol + "; it is too old (need CUDA 12.3+)");
    };
    resolve(api.version, "nvrtcVersion");
    resolve(api.error_string, "nvrtcGetErrorString");
    resolve(api.create, "nvrtcCreateProgram");
    resolve(api.destroy, "nvrtcDestroyProgram");
    resolve(api.compile, "nvrtcCompileProgram");
    resolve(api.log_size, "nvrtcGetProgramLogSize");
    resolve(api.log, "nvrtcGetProgramLog");
    resolve(api.cubin_size, "nvrtcGetCUBINSize");
    resolve(api.cubin, "nvrtcGetCUBIN");
    resolve(api.ptx_size, "nvrtcGetPTXSize");
    resolve(api.ptx, "nvrtcGetPTX");
    Dl_info info;
    if (::dladdr(reinterpret_cast<void*>(api.version), &info) != 0 && info.dli_fname != nullptr) {
        std::error_code ec;
        const std::filesystem::path real = std::filesystem::canonical(info.dli_fname, ec);
        api.library_file = (ec ? std::filesystem::path(info.dli_fname) : real).filename().string();
        api.library_dir = (ec ? std::filesystem::path(info.dli_fname) : real).parent_path();
    }
    return api;
}

class Program {
public:
    Program(const NvrtcApi& api, const std::string& code) : api_(api) {
        const nvrtcResult r = api_.create(&program_, code.c_str(), "kernel.cu", 0, nullptr, nullptr);
        if (r != NVRTC_SUCCESS) throw CompileError(std::string("nvrtcCreateProgram: ") + api_.error_string(r));
    }
    ~Program() { api_.destroy(&program_); }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    nvrtcProgram get() const { return program_; }
    std::string log() const {
        std::size_t size = 0;
        if (api_.log_size(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
        std::string text(size, '\0');
        if (api_.log(program_, text.data()) != NVRTC_SUCCESS) return {};
        while (!text.empty() && text.back() == '\0') text.pop_back();
        return text;
    }

private:
    const NvrtcApi& api_;
    nvrtcProgram program_ = nullptr;
};

class NvrtcCompiler final : public Compiler {
public:
    NvrtcCompiler() : api_(open_nvrtc()) {
        if (api_.version(&major_, &minor_) != NVRTC_SUCCESS) throw ConfigError("nvrtcVersion failed");
        if (major_ < 12 || (major_ == 12 && minor_ < 3)) {
            throw ConfigError("NVRTC " + std::to_string(major_) + "." + std::to_string(minor_) +
                              " is too old: deep_gemm needs CUDA 12.3 or newer; unset DG_JIT_USE_NVRTC or install a "
                              "newer toolkit");
        }
        version_ = std::to_string(major_) + "." + std::to_string(minor_);
        if (!api_.library_file.empty()) version_ += " (" + api_.library_file + ")";
    }

    std::string kind() const override { return "nvrtc"; }
    // <toolkit>/lib64 -> <toolkit>/bin; site-packages/nvidia/cu13/lib -> .../cu13/bin (where the
    // nvidia-cuda-cuobjdump wheel puts cuobjdump).
    std::filesystem::path tool_dir() const override {
        return api_.library_dir.empty() ? std::filesystem::path() : api_.library_dir.parent_path() / "bin";
    }
    std::string version() const override { return version_; }

    // `trim_headers` changes nothing here: NVRTC reads no host headers, and its --minimal (a smaller
    // built-in header) measured within noise (< 5%) on our kernels while making the flags version-dependent.
    std::vector<std::string> flags(const std::string& arch, const Settings& s, bool /*trim_headers*/) const override {
        arch_number(arch);  // validates
        // NVRTC has no --expt-relaxed-constexpr (nor -O3: ptxas optimizes at -O3 by default); with
        // -default-device, unannotated (constexpr) functions are device functions, which covers the same use.
        std::vector<std::string> f = {"--gpu-architecture=" + arch,
                                      "-std=c++" + std::to_string(s.cpp_standard),
                                      "-default-device",
                                      std::string("-I") + kIncludePlaceholder,
                                      std::string("-I") + kCudaIncludePlaceholder};
        if (s.ptxas_verbose || s.debug || s.ptxas_check) f.push_back("--ptxas-options=--verbose");
        if (s.with_lineinfo) f.push_back("--generate-line-info");
        return f;
    }

    std::string compile(const CompileJob& job, const Settings& s) const override {
        const std::vector<std::string> options = expand_flags(flags(job.arch, s, job.trim_headers), job.include_dir);
        std::string log_text;
        const std::string command = "nvrtc " + format_command(options);
        std::string cubin = run(job, s, options, command, /*want_ptx=*/false, &log_text);
        handle_ptxas_report(job.name, command, log_text, s);
        write_file(job.work_dir / "kernel.cubin", cubin);  // build() rewrites it durably
        if (job.dump_ptx) {
            std::vector<std::string> ptx_options;
            for (const std::string& option : options) {
                if (option.rfind("--gpu-architecture=", 0) == 0) {
                    ptx_options.push_back("--gpu-architecture=compute_" + arch_number(job.arch));
                } else if (option.rfind("--ptxas-options", 0) != 0) {
                    ptx_options.push_back(option);
                }
            }
            const std::string ptx = run(job, s, ptx_options, "nvrtc " + format_command(ptx_options), true, nullptr);
            write_file(job.work_dir / "kernel.ptx", ptx);
        }
        if (job.dump_sass) dump_sass(job, s, *this);
        return cubin;
    }

private:
    std::string run(const CompileJob& job, const Settings& s, const std::vector<std::string>& options,
                    const std::string& command, bool want_ptx, std::string* log_out) const {
        if (s.print_compiler_command || s.debug) jit::log(LogLevel::kInfo, "compiling " + job.name + ": " + command);
        Program program(api_, job.code);
        std::vector<const char*> raw;
        raw.reserve(options.size());
        for (const std::string& option : options) raw.push_back(option.c_str());
        const nvrtcResult result = api_.compile(program.get(), static_cast<int>(raw.size()), raw.data());
        const std::string log_text = program.log();
        if (result != NVRTC_SUCCESS) {
            throw CompileError("failed to compile kernel " + job.name + " with NVRTC " + version_ + " (" +
                               api_.error_string(result) + ")\ncommand: " + command + "\nlog:\n" + log_text);
        }
        if (s.debug && !log_text.empty()) jit::log(LogLevel::kDebug, "NVRTC output for " + job.name + ":\n" + log_text);
        if (log_out != nullptr) *log_out = log_text;
        std::size_t size = 0;
        std::string out;
        nvrtcResult r = want_ptx ? api_.ptx_size(program.get(), &size) : api_.cubin_size(program.get(), &size);
        if (r == NVRTC_SUCCESS && size > 0) {
            out.resize(size);
            r = want_ptx ? api_.ptx(program.get(), out.data()) : api_.cubin(program.get(), out.data());
        }
        if (r != NVRTC_SUCCESS || size == 0) {
            throw CompileError(std::string("NVRTC produced no ") + (want_ptx ? "PTX" : "cubin") + " for kernel " +
                               job.name + " (" + api_.error_string(r) + ")\ncommand: " + command);
        }
        if (want_ptx) {
            while (!out.empty() && out.back() == '\0') out.pop_back();
        }
        return out;
    }

    NvrtcApi api_;
    int major_ = 0, minor_ = 0;
    std::string version_;
};

}  // namespace

std::unique_ptr<Compiler> make_nvrtc_compiler() { return std::make_unique<NvrtcCompiler>(); }

}  // namespace deep_gemm::jit::detail
