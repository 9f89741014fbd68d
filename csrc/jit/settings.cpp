// The DG_* registry: parsing, defaults, lazy thread-safe loading and reloading.
#include "settings.hpp"

#include <unistd.h>

#include <atomic>
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
std::vector<std::unique_ptr<Settings>> g_generations;
std::atomic<bool> g_warned_temp_cache{false};

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

bool env_bool(const char* name, bool fallback) {
    const char* value = env(name);
    return value ? detail::parse_bool(name, value) : fallback;
}

std::filesystem::path default_cache_dir() {
    if (const char* home = env("HOME")) return std::filesystem::path(home) / ".deep_gemm";
    const char* tmp = env("TMPDIR");
    std::filesystem::path dir = std::filesystem::path(tmp ? tmp : "/tmp") /
                                ("deep_gemm-" + std::to_string(static_cast<unsigned long>(::getuid())));
    if (!g_warned_temp_cache.exchange(true)) {
        log(LogLevel::kWarning, "HOME is not set and DG_JIT_CACHE_DIR is not set; caching kernels in " +
                                    dir.string() + " (set DG_JIT_CACHE_DIR to keep them elsewhere)");
    }
    return dir;
}

std::unique_ptr<Settings> read_environment() {
    auto s = std::make_unique<Settings>();
    if (const char* dir = env("DG_JIT_CACHE_DIR")) {
        std::error_code ec;
        std::filesystem::path path = std::filesystem::absolute(dir, ec);
        s->cache_dir = (ec ? std::filesystem::path(dir) : path).lexically_normal();
    } else {
        s->cache_dir = default_cache_dir();
    }
    s->use_nvrtc = env_bool("DG_JIT_USE_NVRTC", false);
    if (const char* nvcc = env("DG_JIT_NVCC_COMPILER")) s->nvcc_compiler = nvcc;
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
    if (const char* cuobjdump = env("DG_JIT_CUOBJDUMP")) s->cuobjdump = cuobjdump;
    if (const char* record = env("DG_JIT_RECORD")) {
        std::error_code ec;
        std::filesystem::path path = std::filesystem::absolute(record, ec);
        s->record_path = ec ? std::filesystem::path(record) : path;
    }
    if (const char* config = env("DG_FP8_GEMM_CONFIG")) s->fp8_gemm_config = config;
    if (const char* config = env("DG_BF16_GEMM_CONFIG")) s->bf16_gemm_config = config;
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

void reload_settings() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_current.store(nullptr, std::memory_order_release);
}

const std::vector<SettingInfo>& setting_registry() {
    static const std::vector<SettingInfo> registry = {
        {"DG_JIT_CACHE_DIR", "path", "$HOME/.deep_gemm",
         "cache root; without HOME a per-user directory under $TMPDIR or /tmp"},
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
        {"DG_FP8_GEMM_CONFIG", "string", "",
         "force the FP8 GEMM config: \"block_m,block_n,stages[,pipelined[,multicast[,group_n[,split_k]]]]\" "
         "(block_m 64/128/192/256; docs/env_vars.md), or "
         "\"rules\" / \"legacy\" instead of the config model (tuning)"},
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
