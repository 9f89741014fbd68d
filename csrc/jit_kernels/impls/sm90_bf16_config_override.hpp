// DG_BF16_GEMM_CONFIG: a forced config for the dense SM90 BF16 GEMM ops (bf16_gemm_{nt,nn,tn,tt}; the
// M-grouped and K-grouped ops keep their heuristics), for tuning sweeps (benchmarks/sweep_bf16_configs.py).
//
//   DG_BF16_GEMM_CONFIG="block_m,block_n,stages[,multicast]"
//     block_m    64 or 128
//     block_n    a multiple of 16 in [16, kSm90Bf16MaxBlockN]
//     stages     0 = as many as fit in shared memory, else [kSm90Bf16MinStages, kSm90Bf16MaxStages]
//     multicast  0 = off, 1 = B multicast over a 2-CTA cluster when legal (else off, as the heuristic would),
//                absent = the heuristic's choice
//   Blanks around fields are ignored; unset, empty or blank = no override.
//
// Torch-free. The parser is declared here (not hidden in the .cpp) so the unit tests can reach it.
#pragma once

#include <string_view>

#include "../heuristics/sm90_bf16.hpp"

namespace deep_gemm::kernels {

inline constexpr const char* kBf16ConfigEnv = "DG_BF16_GEMM_CONFIG";

struct Sm90Bf16ConfigOverride {
    int block_m = 0;     // 0 = no override
    int block_n = 0;
    int num_stages = 0;  // 0 = as many as fit
    // The multicast field as a GemmProblem::multicast request: 0 = field absent (heuristic), 1 = off,
    // 2 = on when legal.
    int multicast_request = 0;

    bool active() const { return block_m != 0; }
    bool operator==(const Sm90Bf16ConfigOverride&) const = default;
};

// Parses the variable's value. Malformed values raise jit::ConfigError naming the variable, the value, what
// is wrong and the accepted form.
Sm90Bf16ConfigOverride parse_sm90_bf16_config_override(std::string_view text);

// The config `ov` (active) forces for one problem: stages 0 become as many as fit in `smem_limit` bytes with
// this epilogue and B majorness (MN-major B pads BLOCK_N to 64-column atoms). Raises jit::ConfigError when
// the tile does not fit.
heuristics::Sm90GemmConfig apply_sm90_bf16_config_override(const Sm90Bf16ConfigOverride& ov, bool b_mn_major,
                                                           heuristics::Sm90GemmEpilogue epilogue, int smem_limit);

}  // namespace deep_gemm::kernels
