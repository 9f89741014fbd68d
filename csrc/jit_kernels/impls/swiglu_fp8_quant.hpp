// Host side of the fused (SwiGLU ->) FP8 quantisation kernel (deep_gemm/include/deep_gemm/impls/
// swiglu_fp8_quant.cuh, which states the arithmetic). Torch-free: the torch layer (csrc/apis/swiglu.cpp)
// validates, allocates the outputs and fills the arguments.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>

#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

enum class QuantInput : int { kBf16 = 0, kFp16 = 1, kFp32 = 2 };
enum class QuantSfLayout : int { kColMajor = 0, kRowMajor = 1, kUe8m0 = 2 };  // values match the .cuh

// What selects a compiled kernel (everything else is a runtime argument).
struct QuantConfig {
    QuantInput input = QuantInput::kBf16;
    bool swiglu = true;             // x is [T, 2H] = [gate | up]; else x is [T, H]
    int group = 128;                // columns per scale: a power of two in [16, 512]
    QuantSfLayout sf_layout = QuantSfLayout::kColMajor;
    bool round_scale = false;       // power-of-two scales (required by kUe8m0)
    bool has_weights = false;
    bool has_clamp = false;
    bool output_bf16 = false;
    bool fast_math = true;

    uint32_t key() const;
    bool operator==(const QuantConfig& o) const { return key() == o.key(); }
};

struct QuantConfigHash {
    size_t operator()(const QuantConfig& c) const { return std::hash<uint32_t>()(c.key()); }
};

struct QuantArgs {
    QuantConfig config;
    const void* x = nullptr;        // row t at x + t * x_stride elements (16-byte aligned rows)
    int64_t x_stride = 0;
    uint8_t* y = nullptr;           // e4m3 [T, H], row stride y_stride bytes
    int64_t y_stride = 0;
    void* sf = nullptr;             // see the .cuh for the three layouts; sf_stride in elements (FP32) or words (UE8M0)
    int64_t sf_stride = 0;
    void* y_bf16 = nullptr;         // bf16 [T, H] (output_bf16 only)
    int64_t y_bf16_stride = 0;
    const float* weights = nullptr; // [T] (has_weights only)
    const int* avail_tokens = nullptr;  // one int on the device, or null (= num_tokens)
    int num_tokens = 0, hidden = 0, num_groups = 0;
    float clamp = 0.0f;
    int num_sms = 132;              // caps the grid at num_sms * blocks per SM
    int device = 0;
    CUstream stream = nullptr;
};

inline constexpr int kQuantThreads = 256;
// Blocks resident per SM, also the kernel's __launch_bounds__ minimum: 5 caps registers at 48 per thread,
// 1280 threads x 64 bytes of loads each keep enough bytes in flight to saturate HBM, and a grid of exactly
// num_sms * 5 blocks runs in one wave (no tail of blocks waiting for a free slot). The precise math
// (fast_math=False: IEEE division and expf) of the SwiGLU variants does not fit 48 registers (ptxas spilled
// 4-32 bytes in 26 of 96 configs, every one of them a precise SwiGLU one); they get 4 blocks (64 registers).
inline int quant_blocks_per_sm(const QuantConfig& c) { return c.fast_math or not c.swiglu ? 5 : 4; }

// The generated translation unit for one config.
jit::KernelSource swiglu_fp8_quant_source(const QuantConfig& config);

// The grid size for a call (at least 1).
unsigned swiglu_fp8_quant_grid(const QuantArgs& args);

// Builds/loads the kernel once per (device, config), then launches it on args.stream.
void swiglu_fp8_quant(const QuantArgs& args);

}  // namespace deep_gemm::kernels
