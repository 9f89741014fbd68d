// Exception types raised by the torch-free JIT core. The Python layer maps them onto Python exceptions
// (ConfigError -> RuntimeError naming the variable, CompileError -> RuntimeError with the log, ...).
#pragma once

#include <stdexcept>
#include <string>

namespace deep_gemm::jit {

// Base of every error the core raises.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A DG_* variable has a malformed value, or the environment is unusable (cache dir not writable,
// compiler not found). The message names the variable, the value and the fix.
struct ConfigError : Error {
    using Error::Error;
};

// The compiler ran and failed. The message carries the kernel name, the command line, the exit status
// and the compiler log.
struct CompileError : Error {
    using Error::Error;
};

// A CUDA driver or runtime call failed, or no driver could be loaded.
struct CudaError : Error {
    using Error::Error;
};

}  // namespace deep_gemm::jit
