// Epilogue of fp8_gemm_nt_skip_head_mid: FP32 accumulators -> BF16 written from registers into a head-split
// D. The GEMM computes N = num_heads * (kLeft + kRight) columns; computed column j of head h
// (j < kLeft + kRight) goes to D column h * (kLeft + kMid + kRight) + j, plus kMid when j >= kLeft. The kMid
// columns in the middle of each head are never written. Rows >= m and computed columns >= n are not written.
// Needs no shared memory and no tensor map; same interface as Bf16DirectStoreEpilogue (dense tiles).
#pragma once

#include "../common/types.cuh"
#include "../ptx/stmatrix.cuh"

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kLeft, u32 kMid, u32 kRight, u32 kRowsPerWarpgroup = 64>
struct HeadSplitStoreEpilogue {
    static_assert(kBlockN % 8 == 0, "BLOCK_N must be a multiple of 8");
    static_assert(kLeft + kRight > 0, "a head has computed columns");
    static_assert(kRowsPerWarpgroup == 64 || kRowsPerWarpgroup == 128, "64 or 128 rows per math warpgroup");
    static constexpr u32 kWaves = kRowsPerWarpgroup / 64;
    static constexpr u32 kSmemBytes = 0;
    static constexpr bool kUsesTensorMap = false;
    static constexpr bool kStagedStore = false;
    static constexpr u32 kComputed = kLeft + kRight, kHeadStride = kLeft + kMid + kRight;
    // An accumulator pair (even column c, c + 1) never straddles a left/right boundary and lands on an even
    // D column when all three widths are even: it is then one 4-byte store (when D allows it).
    static constexpr bool kEvenSplits = kLeft % 2 == 0 && kMid % 2 == 0 && kRight % 2 == 0;

    u32 math_wg;
    u32 thread;
    u16* d;
    u32 ldd;

    __device__ __forceinline__ HeadSplitStoreEpilogue(u8*, u32 wg, u32 t, const TmaDescriptor&, void* d_ptr, u32 ld,
                                                      const void* = nullptr, u32 = 0)
        : math_wg(wg), thread(t), d(static_cast<u16*>(d_ptr)), ldd(ld) {}

    // The D column of computed column `col`.
    static __device__ __forceinline__ u32 d_column(u32 col) {
        const u32 head = col / kComputed, j = col % kComputed;
        return head * kHeadStride + (j < kLeft ? j : j + kMid);
    }

    template <int kNumAccum>
    __device__ __forceinline__ void store_wave(const float (&acc)[kNumAccum], u32 row_lo, u32 m, u32 n0, u32 n) {
        static_assert(kNumAccum == kBlockN / 2, "accumulator count");
        const u32 lane = thread % 32;
        const bool pair_aligned = kEvenSplits && (ldd % 2) == 0 && (reinterpret_cast<u64>(d) % 4) == 0;
#pragma unroll
        for (u32 half = 0; half < 2; ++half) {
            const u32 row = row_lo + half * 8;
            if (row >= m) continue;
            u16* d_row = d + static_cast<u64>(row) * ldd;
#pragma unroll
            for (u32 j = 0; j < kBlockN / 8; ++j) {
                const u32 col = n0 + j * 8 + (lane % 4) * 2;
                const u32 packed = ptx::pack_bf16x2(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
                if (pair_aligned && col + 1 < n) {
                    *reinterpret_cast<u32*>(d_row + d_column(col)) = packed;
                } else {
                    if (col < n) d_row[d_column(col)] = static_cast<u16>(packed & 0xffffu);
                    if (col + 1 < n) d_row[d_column(col + 1)] = static_cast<u16>(packed >> 16);
                }
            }
        }
    }

    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        static_assert(kWaves == 1, "a warpgroup of several waves passes acc[wave][...]");
        store(reinterpret_cast<const float(&)[1][kNumAccum]>(acc), m0, n0, m, n);
    }

    // acc[w]: this thread's accumulators of wave w, rows [kRowsPerWarpgroup*math_wg + 64*w, +64).
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        const u32 warp = thread / 32, lane = thread % 32;
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w)
            store_wave(acc[w], m0 + math_wg * kRowsPerWarpgroup + w * 64 + warp * 16 + lane / 4, m, n0, n);
    }

    __device__ __forceinline__ void finish() {}
};

}  // namespace deep_gemm
