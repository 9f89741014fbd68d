// The DG_* registry: parsing, defaults, lazy thread-safe loading and reloading.
#include "settings.hpp"
#include "cache_settings.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "errors.hpp"
#include "log.hpp"
#include "settings_parse.hpp"

namespace deep_gemm::jit {
namespace {

std::mutex g_mutex;
std::atomic<const Settings*> g_current{nullptr};
// Every Settings ever published stays alive, so a reference from settings() never dangles after a
// reload (reloads are rare: tests and an explicit Python call).
// A generation: the settings and the cache's own (cache_settings.hpp), read together.
struct Generation : Settings {
    CacheSettings cache;
};
std::vector<std::unique_ptr<Generation>> g_generations;
std::atomic<bool> g_warned_temp_cache{false};

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

bool env_bool(const char* name, bool fallback) {
    const char* value = env(name);
    return value ? detail::parse_bool(name, value) : fallback;
}

// `value` shown with every byte that is not printable ASCII as \xNN (error messages must stay valid UTF-8:
// Python turns them into str).
std::string escaped(std::string_view value) {
    std::string out;
    for (const char c : value) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f || c == '\\') {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
            out += buffer;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

bool valid_utf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto b = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        unsigned code = 0;
        if (b < 0x80) {
            ++i;
            continue;
        } else if ((b & 0xe0) == 0xc0) {
            extra = 1, code = b & 0x1f;
        } else if ((b & 0xf0) == 0xe0) {
            extra = 2, code = b & 0x0f;
        } else if ((b & 0xf8) == 0xf0) {
            extra = 3, code = b & 0x07;
        } else {
            return false;
        }
        if (i + extra >= text.size()) return false;
        for (std::size_t k = 1; k <= extra; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xc0) != 0x80) return false;
            code = (code << 6) | (next & 0x3f);
        }
        const unsigned min_code[4] = {0, 0x80, 0x800, 0x10000};
        if (code < min_code[extra] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
        i += extra + 1;
    }
    return true;
}

// A path-valued variable: valid UTF-8 (Python reads every path back as str) without control characters
// (a newline or an escape in a directory name is a mistake, never a cache we should create).
std::string checked_path(const char* name, const char* value, const char* fix) {
    const std::string_view v(value);
    if (!valid_utf8(v)) {
        throw ConfigError(std::string(name) + "='" + escaped(v) + "' is not valid UTF-8; " + fix);
    }
    for (const char c : v) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            throw ConfigError(std::string(name) + "='" + escaped(v) + "' contains a control character; " + fix);
        }
    }
    return std::string(v);
}

// $HOME/.deep_gemm; without HOME, ${TMPDIR:-/tmp}/deep_gemm-<uid> (a relative TMPDIR is ignored: POSIX asks
// for an absolute one, and compilers run in other directories). The fallback is a name anyone could create
// first: build() applies the trust checks of docs/cache.md to it like to any other root.
void default_cache_dir(Generation& s) {
    if (const char* home = env("HOME")) {
        const std::string value = checked_path("HOME", home, "set HOME to your home directory or DG_JIT_CACHE_DIR "
                                                             "to the kernel cache directory");
        if (value[0] != '/') {
            throw ConfigError("HOME='" + value + "' is not an absolute path, so it cannot hold the kernel cache; set "
                              "HOME to your home directory or DG_JIT_CACHE_DIR to the kernel cache directory");
        }
        s.cache_dir = (std::filesystem::path(value) / ".deep_gemm").lexically_normal();
        s.cache.cache_dir_origin = "HOME='" + value + "', DG_JIT_CACHE_DIR being unset";
        return;
    }
    std::string base = "/tmp";
    s.cache.cache_dir_origin = "the HOME-less fallback under /tmp";
    if (const char* tmp = env("TMPDIR")) {
        const std::string value = checked_path("TMPDIR", tmp, "set TMPDIR to a directory or DG_JIT_CACHE_DIR to the "
                                                              "kernel cache directory");
        if (value[0] == '/') {
            base = value;
            s.cache.cache_dir_origin = "TMPDIR='" + value + "', HOME and DG_JIT_CACHE_DIR being unset";
        }
    }
    s.cache_dir = (std::filesystem::path(base) / ("deep_gemm-" + std::to_string(static_cast<unsigned long>(::getuid()))))
                      .lexically_normal();
    if (!g_warned_temp_cache.exchange(true)) {
        log(LogLevel::kWarning, "HOME is not set and DG_JIT_CACHE_DIR is not set; caching kernels in " +
                                    s.cache_dir.string() + " (set DG_JIT_CACHE_DIR to keep them elsewhere)");
    }
}

CacheSettings::CompileMode parse_compile_mode(const char* value) {
    std::string v(value);
    for (char& c : v) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (v == "compile" || v == "1" || v == "on" || v == "yes" || v == "true") return CacheSettings::CompileMode::kCompile;
    if (v == "warn") return CacheSettings::CompileMode::kWarn;
    if (v == "error" || v == "0" || v == "off" || v == "no" || v == "false") return CacheSettings::CompileMode::kError;
    throw ConfigError("DG_JIT_COMPILE='" + escaped(value) + "' is not a compile mode; use compile (the default), "
                      "warn or error");
}

std::unique_ptr<Generation> read_environment() {
    auto s = std::make_unique<Generation>();
    if (const char* dir = env("DG_JIT_CACHE_DIR")) {
        const std::string value = checked_path("DG_JIT_CACHE_DIR", dir, "set it to the kernel cache directory");
        std::error_code ec;
        std::filesystem::path path = std::filesystem::absolute(value, ec);
        s->cache_dir = (ec ? std::filesystem::path(value) : path).lexically_normal();
    } else {
        default_cache_dir(*s);
    }
    s->cache.trust_group = env_bool("DG_JIT_CACHE_TRUST_GROUP", false);
    if (const char* mode = env("DG_JIT_COMPILE")) s->cache.compile_mode = parse_compile_mode(mode);
    s->use_nvrtc = env_bool("DG_JIT_USE_NVRTC", false);
    if (const char* nvcc = env("DG_JIT_NVCC_COMPILER")) {
        s->nvcc_compiler = checked_path("DG_JIT_NVCC_COMPILER", nvcc, "point it at nvcc");
    }
    if (const char* standard = env("DG_JIT_CPP_STANDARD")) {
        s->cpp_standard = detail::parse_cpp_standard("DG_JIT_CPP_STANDARD", standard);
    }
    s->debug = env_bool("DG_JIT_DEBUG", false);
    s->print_compiler_command = env_bool("DG_JIT_PRINT_COMPILER_COMMAND", false);
    s->print_load_time = env_bool("DG_JIT_PRINT_LOAD_TIME", false);
    s->ptxas_verbose = env_bool("DG_JIT_PTXAS_VERBOSE", false);
    s->ptxas_check = env_bool("DG_JIT_PTXAS_CHECK", false);
    s->with_lineinfo = env_bool("DG_JIT_WITH_LINEINFO", false);
    s->trim_headers = env_bool("DG_JIT_TRIM_HEADERS", true);
    const bool dump_asm = env_bool("DG_JIT_DUMP_ASM", false);
    s->dump_ptx = env_bool("DG_JIT_DUMP_PTX", false) || dump_asm;
    s->dump_sass = env_bool("DG_JIT_DUMP_SASS", false) || dump_asm;
    s->print_configs = env_bool("DG_PRINT_CONFIGS", false);
    s->use_tuning = env_bool("DG_JIT_TUNING", true);
    if (const char* cuobjdump = env("DG_JIT_CUOBJDUMP")) {
        s->cuobjdump = checked_path("DG_JIT_CUOBJDUMP", cuobjdump, "point it at cuobjdump");
    }
    if (const char* record_value = env("DG_JIT_RECORD")) {
        const std::string record = checked_path("DG_JIT_RECORD", record_value, "set it to the file to append to");
        std::error_code ec;
        std::filesystem::path path = std::filesystem::absolute(record, ec);
        s->record_path = ec ? std::filesystem::path(record) : path;
    }
    if (const char* config = env("DG_FP8_GEMM_CONFIG")) s->fp8_gemm_config = config;
    if (const char* config = env("DG_BF16_GEMM_CONFIG")) s->bf16_gemm_config = config;
    if (const char* config = env("DG_FP8_1D1D_GEMM_CONFIG")) s->fp8_1d1d_gemm_config = config;
    // Build-time only (read by setup.py), but a malformed value is still reported.
    env_bool("DG_JIT_USE_RUNTIME_API", false);
    return s;
}

}  // namespace

const Settings& settings() {
    if (const Settings* current = g_current.load(std::memory_order_acquire)) return *current;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (const Settings* current = g_current.load(std::memory_order_acquire)) return *current;
    g_generations.push_back(read_environment());  // throws ConfigError; nothing is published then
    g_current.store(g_generations.back().get(), std::memory_order_release);
    return *g_generations.back();
}

const CacheSettings& cache_settings() { return static_cast<const Generation&>(settings()).cache; }

void reload_settings() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_current.store(nullptr, std::memory_order_release);
}

const std::vector<SettingInfo>& setting_registry() {
    static const std::vector<SettingInfo> registry = {
        {"DG_JIT_CACHE_DIR", "path", "$HOME/.deep_gemm",
         "cache root; without HOME a per-user directory under $TMPDIR or /tmp"},
        {"DG_JIT_CACHE_TRUST_GROUP", "bool", "0",
         "accept a cache root shared by one of your groups (group-writable, setgid); docs/cache.md"},
        {"DG_JIT_COMPILE", "string", "compile",
         "what a cache miss does: compile, warn (compile and warn once per kernel) or error (raise, naming "
         "the kernel and the warm-up command); docs/cache.md"},
        {"DG_JIT_USE_NVRTC", "bool", "0", "compile with NVRTC instead of NVCC"},
        {"DG_JIT_NVCC_COMPILER", "path", "$CUDA_HOME/bin/nvcc",
         "NVCC to run; else $CUDA_HOME/bin/nvcc, nvcc on PATH, /usr/local/cuda/bin/nvcc"},
        {"DG_JIT_CPP_STANDARD", "int", "20", "-std=c++N for kernels (17 or 20)"},
        {"DG_JIT_DEBUG", "bool", "0", "log JIT decisions, commands, compiler output"},
        {"DG_JIT_PRINT_COMPILER_COMMAND", "bool", "0", "log each compiler invocation"},
        {"DG_JIT_PRINT_LOAD_TIME", "bool", "0", "log cubin load latency"},
        {"DG_JIT_PTXAS_VERBOSE", "bool", "0", "log the ptxas resource report (registers, smem, spills)"},
        {"DG_JIT_PTXAS_CHECK", "bool", "0", "fail a compile whose kernel uses local memory (spills, stack)"},
        {"DG_JIT_WITH_LINEINFO", "bool", "0", "embed line info for profilers"},
        {"DG_JIT_TRIM_HEADERS", "bool", "1",
         "faster cold NVCC compiles: kernels that include only our headers get the device part of "
         "cuda_runtime.h, not all of it (same cubin); 0 = NVCC's full default header"},
        {"DG_JIT_DUMP_PTX", "bool", "0", "write kernel.ptx into the cache entry"},
        {"DG_JIT_DUMP_SASS", "bool", "0", "write kernel.sass into the cache entry (needs cuobjdump)"},
        {"DG_JIT_DUMP_ASM", "bool", "0", "both DG_JIT_DUMP_PTX and DG_JIT_DUMP_SASS"},
        {"DG_JIT_CUOBJDUMP", "path", "",
         "cuobjdump for DG_JIT_DUMP_SASS; else beside nvcc, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin"},
        {"DG_JIT_USE_RUNTIME_API", "bool", "0", "read by setup.py at build time: load through the Runtime API"},
        {"DG_JIT_RECORD", "path", "",
         "append every kernel this process builds or finds in the cache to this file (JSON lines), "
         "for `python -m deep_gemm warmup`"},
        {"DG_PRINT_CONFIGS", "bool", "0", "log the config chosen for each new shape"},
        {"DG_JIT_TUNING", "bool", "1",
         "plan calls with the tuned picks of the cache's tuning table (`python -m deep_gemm tune`; docs/cache.md); "
         "0 = the heuristics only"},
        {"DG_FP8_GEMM_CONFIG", "string", "",
         "force the FP8 GEMM config: \"block_m,block_n,stages[,pipelined[,multicast[,group_n[,split_k]]]]\" "
         "(block_m 64/128/192/256; docs/env_vars.md), or "
         "\"rules\" / \"legacy\" instead of the config model (tuning)"},
        {"DG_FP8_1D1D_GEMM_CONFIG", "string", "",
         "force the FP8 1D1D GEMM config (recipe (1, 1, 128) and k_grouped_fp8_gemm_nt_contiguous): "
         "\"block_m,block_n[,stages[,group_n[,pipelined[,multicast[,prefetch_c]]]]]\", block_m 64/128, block_n a "
         "multiple of 16 up to 176, stages 0 = as many as fit (docs/env_vars.md; tuning)"},
        {"DG_BF16_GEMM_CONFIG", "string", "",
         "force the dense BF16 GEMM config (bf16_gemm_{nt,nn,tn,tt}; not the grouped ops): "
         "\"block_m,block_n,stages[,multicast]\", stages 0 = as many as fit, multicast 0 = off, "
         "1 = B multicast when legal, absent = heuristic (tuning)"},
    };
    return registry;
}

namespace detail {

namespace {
std::string trim_lower(std::string_view value) {
    std::size_t begin = 0, end = value.size();
    while (begin < end && (value[begin] == ' ' || value[begin] == '\t')) ++begin;
    while (end > begin && (value[end - 1] == ' ' || value[end - 1] == '\t')) --end;
    std::string out(value.substr(begin, end - begin));
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}
}  // namespace

bool parse_bool(std::string_view name, std::string_view value) {
    const std::string v = trim_lower(value);
    if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
    if (v == "0" || v == "false" || v == "no" || v == "off") return false;
    throw ConfigError(std::string(name) + "='" + std::string(value) +
                      "' is not a boolean; use 0 or 1 (true/false, yes/no, on/off are also accepted)");
}

int parse_cpp_standard(std::string_view name, std::string_view value) {
    std::string v = trim_lower(value);
    if (v.rfind("c++", 0) == 0) v = v.substr(3);
    if (v == "17") return 17;
    if (v == "20") return 20;
    throw ConfigError(std::string(name) + "='" + std::string(value) +
                      "' is not a supported C++ standard; use 17 or 20");
}

}  // namespace detail
}  // namespace deep_gemm::jit
