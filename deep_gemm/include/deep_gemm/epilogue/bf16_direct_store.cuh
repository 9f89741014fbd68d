// Fallback epilogue: FP32 accumulators -> BF16 written straight from registers with bounds checks. For
// outputs a TMA store cannot address (row stride not a multiple of 16 bytes, e.g. N = 100 contiguous,
// or a base that is not 16-byte aligned). Same interface as Bf16TmaStoreEpilogue; needs no shared memory.
#pragma once

#include "../common/types.cuh"
#include "../ptx/stmatrix.cuh"

namespace deep_gemm {

// Writes this thread's wgmma-layout accumulators of rows row_lo and row_lo + 8 (lo_ok / hi_ok: whether to
// write each) and columns n0 + [0, kBlockN) below n as BF16 to d (row stride ldd elements).
template <u32 kBlockN, int kNumAccum>
__device__ __forceinline__ void store_bf16_rows_direct(const float (&acc)[kNumAccum], u16* d, u32 ldd, u32 row_lo,
                                                       bool lo_ok, bool hi_ok, u32 n0, u32 n, u32 lane) {
    // Pairs are one 4-byte store when every (row * ldd + even col) address is 4-byte aligned: an even ldd
    // and a 4-byte aligned base (a D view may start at an odd column, 2 bytes past a 4-byte boundary).
    const bool pair_aligned = (ldd % 2) == 0 && (reinterpret_cast<u64>(d) % 4) == 0;
#pragma unroll
    for (u32 half = 0; half < 2; ++half) {
        if (!(half == 0 ? lo_ok : hi_ok)) continue;
        u16* d_row = d + static_cast<u64>(row_lo + half * 8) * ldd;
#pragma unroll
        for (u32 j = 0; j < kBlockN / 8; ++j) {
            const u32 col = n0 + j * 8 + (lane % 4) * 2;
            const u32 packed = ptx::pack_bf16x2(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
            if (pair_aligned && col + 1 < n) {
                *reinterpret_cast<u32*>(d_row + col) = packed;
            } else {
                if (col < n) d_row[col] = static_cast<u16>(packed & 0xffffu);
                if (col + 1 < n) d_row[col + 1] = static_cast<u16>(packed >> 16);
            }
        }
    }
}

template <u32 kBlockM, u32 kBlockN, u32 kRowsPerWarpgroup = 64>
struct Bf16DirectStoreEpilogue {
    static_assert(kBlockN % 8 == 0, "BLOCK_N must be a multiple of 8");
    // A warpgroup holds its rows as kWaves accumulator sets of 64 rows (as in Bf16TmaStoreEpilogue).
    static constexpr u32 kWaves = kRowsPerWarpgroup / 64;
    static_assert(kRowsPerWarpgroup == 64 || kRowsPerWarpgroup == 128, "64 or 128 rows per math warpgroup");
    static constexpr u32 kSmemBytes = 0;
    static constexpr bool kUsesTensorMap = false;
    static constexpr bool kStagedStore = false;

    u32 math_wg;
    u32 thread;
    u16* d;
    u32 ldd;

    __device__ __forceinline__ Bf16DirectStoreEpilogue(u8*, u32 wg, u32 t, const TmaDescriptor&, void* d_ptr,
                                                       u32 ld, const void* = nullptr, u32 = 0)
        : math_wg(wg), thread(t), d(static_cast<u16*>(d_ptr)), ldd(ld) {}

    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        static_assert(kWaves == 1, "a warpgroup of several waves passes acc[wave][...]");
        store(reinterpret_cast<const float(&)[1][kNumAccum]>(acc), m0, n0, m, n);
    }

    // acc[w]: this thread's accumulators of wave w, rows [kRowsPerWarpgroup*math_wg + 64*w, +64).
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        static_assert(kNumAccum == kBlockN / 2, "accumulator count");
        const u32 warp = thread / 32, lane = thread % 32;
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) {
            const u32 row_lo = m0 + math_wg * kRowsPerWarpgroup + w * 64 + warp * 16 + lane / 4;
            store_bf16_rows_direct<kBlockN>(acc[w], d, ldd, row_lo, row_lo < m, row_lo + 8 < m, n0, n, lane);
        }
    }

    // As store(), but writes only the rows below m whose flag is set (lo_ok[w]: this thread's first row of wave
    // w, hi_ok[w]: the row 8 below it).
    template <int kNumAccum>
    __device__ __forceinline__ void store_rows(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 m, u32 n,
                                               const bool (&lo_ok)[kWaves], const bool (&hi_ok)[kWaves]) {
        static_assert(kNumAccum == kBlockN / 2, "accumulator count");
        const u32 warp = thread / 32, lane = thread % 32;
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) {
            const u32 row_lo = m0 + math_wg * kRowsPerWarpgroup + w * 64 + warp * 16 + lane / 4;
            store_bf16_rows_direct<kBlockN>(acc[w], d, ldd, row_lo, lo_ok[w] && row_lo < m, hi_ok[w] && row_lo + 8 < m,
                                            n0, n, lane);
        }
    }

    __device__ __forceinline__ void finish() {}
};

}  // namespace deep_gemm
