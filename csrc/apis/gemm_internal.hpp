// What the GEMM sources share (internal to csrc/apis; the public interface is gemm.hpp; the op spec table
// is gemm_ops.hpp): the kernel choice and the Problem that validate() builds from a call.
// gemm_validation.cpp validates calls; gemm_run.cpp runs them.
#pragma once

#include <array>

#include "gemm.hpp"

namespace deep_gemm::api {

// Short names for the per-op rules.
using F = Family;
using G = Grouping;

enum class Kernel { kNone, kFp8_1D2D, kFp8_1D1D, kBf16 };

// Everything validation learned about a call.
struct Problem {
    int64_t m = 0, n = 0, k = 0, groups = 1;
    View a, b, d, sfa, sfb, c, layout;
    bool has_sf = false, has_c = false, has_layout = false;
    bool c_is_d = false;  // c and d are the same memory with the same layout (accumulate in place)
    Recipe recipe = kRecipe1D2D;
    Kernel kernel = Kernel::kNone;
};

// Validates every argument of `call` against the op's rules (raising through `check`) and returns what
// it learned. Shared by run_gemm, check_gemm_fake and check_gemm_real_for_benchmark.
Problem validate(const GemmOpSpec& spec, const GemmCall& call, const Checker& check);

}  // namespace deep_gemm::api
