// Split-K workspace shared by the kernels that reduce partial results across CTAs through global memory
// (the FP8 1D2D GEMM's split-K, the TF32 hc_prenorm GEMM's K split). Torch-free.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace deep_gemm::kernels {

// Split-K memory: FP32 partial tiles, then one u32 counter per tile. Every launch leaves the counters at
// zero (the last unit of a tile resets its counter), so launches that are serialised can share a buffer:
// one per (device, stream), and one per CUDA graph capture (its replays are serialised; they may run on
// another stream than eager calls on the capturing one). A new buffer's counters are zeroed by a memset
// queued on the stream (captured into the graph when capturing). Buffers grow on demand and are never
// freed, as cuBLAS keeps its workspaces: an outgrown one may still be referenced by a queued launch or a
// captured graph. The FP8 model picks split-K only with tiles of at most 64x64 in one wave of units, so its
// buffer stays under ~2 MB (forced configs may need more); the hc_prenorm GEMM needs at most
// 2 x SMs x 256 threads x (n / 2 + 2) floats (~4 MB for n = 24 on 132 SMs).
struct SplitKWorkspace {
    float* partials;
    unsigned int* counters;
};

// The buffer for (device, stream, capture) with at least `partial_bytes` of partials and `tiles` zeroed
// counters (grown on demand; see above).
SplitKWorkspace split_k_workspace(int device, CUstream stream, size_t partial_bytes, size_t tiles);

}  // namespace deep_gemm::kernels
