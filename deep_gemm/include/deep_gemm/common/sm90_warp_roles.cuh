// Register split of the warp-specialised SM90 FP8 kernels (1D2D and 1D1D): warpgroup 0 produces (TMA)
// and gives registers back with setmaxnreg; the math warpgroups take them for their accumulators.
// 40 + 2 x 232 registers x 128 threads stays within the 64K-register file with two math warpgroups.
#pragma once

#include "types.cuh"

namespace deep_gemm {

constexpr u32 kSm90ProducerRegs = 40;
constexpr u32 kSm90MathRegs = 232;

}  // namespace deep_gemm
