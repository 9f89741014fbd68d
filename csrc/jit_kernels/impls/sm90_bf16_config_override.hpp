// DG_BF16_GEMM_CONFIG: a forced config for the dense SM90 BF16 GEMM ops (bf16_gemm_{nt,nn,tn,tt}; the
// M-grouped and K-grouped ops keep their heuristics), for tuning sweeps (benchmarks/sweep_bf16_configs.py).
//
//   DG_BF16_GEMM_CONFIG="block_m,block_n,stages[,multicast]": the knobs, legal values and meanings are
//   bf16_knobs() in sm90_bf16_gemm.cpp (knob_table.hpp for the syntax); unset, empty or blank = no override.
//
// Torch-free.
#pragma once

#include "../heuristics/sm90_bf16.hpp"
#include "knob_table.hpp"

namespace deep_gemm::kernels {

inline constexpr const char* kBf16ConfigEnv = "DG_BF16_GEMM_CONFIG";

// The config `forced` (a forced config: apply_forced over a default config) for one problem: stages 0 become
// as many as fit in `smem_limit` bytes with this epilogue and B majorness (MN-major B pads BLOCK_N to 64-column
// atoms). Raises jit::ConfigError when the tile does not fit.
heuristics::Sm90GemmConfig apply_sm90_bf16_config_override(heuristics::Sm90GemmConfig forced, bool b_mn_major,
                                                           heuristics::Sm90GemmEpilogue epilogue, int smem_limit);

}  // namespace deep_gemm::kernels
