// What the GEMM sources share (internal to csrc/apis; the public interface is gemm.hpp; the op spec table
// is gemm_ops.hpp): the Problem that validate() builds from a call, with the kernel it runs on.
// gemm_validation.cpp validates calls; gemm_run.cpp runs them.
#pragma once

#include <array>

#include "gemm.hpp"
#include "gemm_problem.hpp"

namespace deep_gemm::api {

// Short names for the per-op rules.
using F = Family;
using G = Grouping;

// Everything validation learned about a call.
struct Problem {
    int64_t m = 0, n = 0, k = 0, groups = 1;
    int64_t sf_k = 0;  // FP8: the scale tensors' K blocks (K-grouped: the groups' scale blocks, compact or padded)
    View a, b, d, sfa, sfb, c, layout;
    View signal;  // the masked FP8 op's enable_overlap counters (has_signal)
    bool has_sf = false, has_c = false, has_layout = false, has_signal = false;
    bool c_is_d = false;  // c and d are the same memory with the same layout (accumulate in place)
    Recipe recipe = kRecipe1D2D;
    kernels::GemmKernel kernel = kernels::GemmKernel::kFp8_1d2d;  // recipe_kernel() (always set)
};

// Validates every argument of `call` against the op's rules (raising through `check`) and returns what
// it learned. Shared by run_gemm, check_gemm_fake and check_gemm_real_for_benchmark.
Problem validate(const GemmOpSpec& spec, const GemmCall& call, const Checker& check);

}  // namespace deep_gemm::api
