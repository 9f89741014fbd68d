// The typed registry of every DG_* environment variable (documented in docs/env_vars.md).
// Values are read once, when the JIT first needs them (not at import), so a program may set
// os.environ before its first kernel call. The per-call hot path never calls getenv.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace deep_gemm::jit {

struct Settings {
    std::filesystem::path cache_dir;  // DG_JIT_CACHE_DIR, else $HOME/.deep_gemm, else a per-user temp dir
    bool use_nvrtc = false;           // DG_JIT_USE_NVRTC
    std::string nvcc_compiler;        // DG_JIT_NVCC_COMPILER; empty: search $CUDA_HOME, PATH, /usr/local/cuda
    int cpp_standard = 20;            // DG_JIT_CPP_STANDARD
    bool debug = false;               // DG_JIT_DEBUG
    bool print_compiler_command = false;  // DG_JIT_PRINT_COMPILER_COMMAND
    bool print_load_time = false;     // DG_JIT_PRINT_LOAD_TIME
    bool ptxas_verbose = false;       // DG_JIT_PTXAS_VERBOSE
    bool ptxas_check = false;         // DG_JIT_PTXAS_CHECK
    bool with_lineinfo = false;       // DG_JIT_WITH_LINEINFO
    bool trim_headers = true;         // DG_JIT_TRIM_HEADERS: lighter CUDA headers for faster cold compiles
    bool dump_ptx = false;            // DG_JIT_DUMP_PTX or DG_JIT_DUMP_ASM
    bool dump_sass = false;           // DG_JIT_DUMP_SASS or DG_JIT_DUMP_ASM
    bool print_configs = false;       // DG_PRINT_CONFIGS
    std::string fp8_gemm_config;      // DG_FP8_GEMM_CONFIG: forced FP8 GEMM config for tuning (parsed by the kernel)
    std::string bf16_gemm_config;     // DG_BF16_GEMM_CONFIG: forced dense BF16 GEMM config for tuning (parsed by the kernel)
    std::string fp8_1d1d_gemm_config;  // DG_FP8_1D1D_GEMM_CONFIG: forced FP8 1D1D GEMM config (parsed by the kernel)
    bool use_tuning = true;           // DG_JIT_TUNING: plan with the cache's tuning table (tuning_table.hpp)
    std::string cuobjdump;            // DG_JIT_CUOBJDUMP; empty: search beside nvcc, $CUDA_HOME/bin, PATH
    std::filesystem::path record_path;  // DG_JIT_RECORD: append each kernel this process builds (JSON lines)
};

// Parsed on the first call (thread safe), then cached. Throws ConfigError naming the variable, the
// value and what is accepted when a value is malformed.
const Settings& settings();

// Drops the cached values so the next settings() re-reads the environment (tests, and the Python
// helper deep_gemm._C.reload_settings()).
void reload_settings();

// Documentation of one variable, for README generation and error messages.
struct SettingInfo {
    std::string name;
    std::string type;  // "bool", "int", "path", "string"
    std::string default_value;
    std::string doc;
};
const std::vector<SettingInfo>& setting_registry();

}  // namespace deep_gemm::jit
