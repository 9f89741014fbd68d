// Epilogue for FP32 outputs and for D = C + acc: the FP32 accumulators are written straight from
// registers to global memory with bounds checks (no staging shared memory), optionally adding C first.
// D is float32 when kOutFp32, else bfloat16; C is float32 when kCFp32 (by default D's dtype); each has its
// own row stride, and C may alias D (every element is read and then written by the same thread).
//
// Accumulator layout (wgmma m64nN, per 64-row wave of a math warpgroup): acc[4j + 0/1] is row 16*warp + lane/4,
// columns 8j + 2*(lane%4) + 0/1; acc[4j + 2/3] the same columns 8 rows further down. A thread therefore
// writes column pairs (8 bytes of FP32, 4 of BF16); the 4 lanes of a quad cover 8 consecutive columns, so
// each warp store fills whole 32-byte sectors of FP32 rows.
//
// Same interface as Bf16TmaStoreEpilogue; kSmemBytes = 0 (the kernel reserves no staging buffer).
#pragma once

#include "../common/types.cuh"
#include "../ptx/prefetch.cuh"
#include "../ptx/stmatrix.cuh"

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, bool kOutFp32, bool kWithC, u32 kRowsPerWarpgroup = 64, bool kCFp32 = kOutFp32>
struct AccumDirectStoreEpilogue {
    static_assert(kBlockN % 8 == 0, "BLOCK_N must be a multiple of 8");
    static_assert(kRowsPerWarpgroup == 64 || kRowsPerWarpgroup == 128, "64 or 128 rows (1 or 2 waves) per math warpgroup");
    static constexpr u32 kWaves = kRowsPerWarpgroup / 64;
    static constexpr u32 kSmemBytes = 0;
    static constexpr bool kUsesTensorMap = false;
    static constexpr bool kStagedStore = false;
    // Column groups (of 8) handled per batch: C loads of a batch are all issued before its stores.
    static constexpr u32 kGroups = kBlockN / 8;
    static constexpr u32 kBatch = kGroups % 8 == 0 ? 8 : (kGroups % 4 == 0 ? 4 : (kGroups % 2 == 0 ? 2 : 1));
    static_assert((kBlockN / 8) % kBatch == 0, "batch");

    u32 math_wg;
    u32 thread;
    u8* d;
    const u8* c;
    u32 ldd, ldc;
    bool d_pairs, c_pairs;  // column pairs can be accessed as one 8-byte (FP32) / 4-byte (BF16) word

    __device__ __forceinline__ AccumDirectStoreEpilogue(u8*, u32 wg, u32 t, const TmaDescriptor&, void* d_ptr, u32 ld,
                                                        const void* c_ptr = nullptr, u32 ld_c = 0)
        : math_wg(wg),
          thread(t),
          d(static_cast<u8*>(d_ptr)),
          c(static_cast<const u8*>(c_ptr)),
          ldd(ld),
          ldc(ld_c) {
        d_pairs = (ldd % 2) == 0 && (reinterpret_cast<u64>(d_ptr) % (kOutFp32 ? 8 : 4)) == 0;
        c_pairs = (ldc % 2) == 0 && (reinterpret_cast<u64>(c_ptr) % (kCFp32 ? 8 : 4)) == 0;
    }

    static __device__ __forceinline__ float bf16_to_float(u16 x) { return __uint_as_float(static_cast<u32>(x) << 16); }

    // Reads the pair (col, col + 1) of row `row_ptr` (elements past `n` read as 0).
    __device__ __forceinline__ void load_pair(const u8* row_ptr, u32 col, u32 n, bool pairs, float& x0, float& x1) const {
        x0 = 0.0f, x1 = 0.0f;
        if constexpr (kCFp32) {
            const float* p = reinterpret_cast<const float*>(row_ptr) + col;
            if (pairs && col + 1 < n) {
                const float2 v = *reinterpret_cast<const float2*>(p);
                x0 = v.x, x1 = v.y;
            } else {
                if (col < n) x0 = p[0];
                if (col + 1 < n) x1 = p[1];
            }
        } else {
            const u16* p = reinterpret_cast<const u16*>(row_ptr) + col;
            if (pairs && col + 1 < n) {
                const u32 v = *reinterpret_cast<const u32*>(p);
                x0 = bf16_to_float(static_cast<u16>(v & 0xffffu)), x1 = bf16_to_float(static_cast<u16>(v >> 16));
            } else {
                if (col < n) x0 = bf16_to_float(p[0]);
                if (col + 1 < n) x1 = bf16_to_float(p[1]);
            }
        }
    }

    __device__ __forceinline__ void store_pair(u8* row_ptr, u32 col, u32 n, float x0, float x1) const {
        if constexpr (kOutFp32) {
            float* p = reinterpret_cast<float*>(row_ptr) + col;
            if (d_pairs && col + 1 < n) {
                *reinterpret_cast<float2*>(p) = make_float2(x0, x1);
            } else {
                if (col < n) p[0] = x0;
                if (col + 1 < n) p[1] = x1;
            }
        } else {
            u16* p = reinterpret_cast<u16*>(row_ptr) + col;
            const u32 packed = ptx::pack_bf16x2(x0, x1);
            if (d_pairs && col + 1 < n) {
                *reinterpret_cast<u32*>(p) = packed;
            } else {
                if (col < n) p[0] = static_cast<u16>(packed & 0xffffu);
                if (col + 1 < n) p[1] = static_cast<u16>(packed >> 16);
            }
        }
    }

    // acc: this thread's accumulators for rows [64*math_wg, +64) of the tile at (m0, n0) (one wave per
    // warpgroup); rows >= m and columns >= n are not written.
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        static_assert(kWaves == 1, "a warpgroup of several waves passes acc[wave][...]");
        store_wave(acc, m0 + math_wg * 64, n0, m, n);
    }

    // acc[w]: this thread's accumulators of wave w, rows [kRowsPerWarpgroup*math_wg + 64*w, +64).
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) store_wave(acc[w], m0 + math_wg * kRowsPerWarpgroup + w * 64, n0, m, n);
    }

    // The 64 rows from `row0` (wgmma m64 accumulator layout).
    template <int kNumAccum>
    __device__ __forceinline__ void store_wave(const float (&acc)[kNumAccum], u32 row0, u32 n0, u32 m, u32 n) {
        static_assert(kNumAccum == kBlockN / 2, "accumulator count");
        constexpr u64 kElem = kOutFp32 ? 4 : 2, kCElem = kCFp32 ? 4 : 2;
        const u32 warp = thread / 32, lane = thread % 32;
        const u32 row_lo = row0 + warp * 16 + lane / 4;
#pragma unroll
        for (u32 half = 0; half < 2; ++half) {
            const u32 row = row_lo + half * 8;
            if (row >= m) continue;
            u8* d_row = d + static_cast<u64>(row) * ldd * kElem;
            const u8* c_row = kWithC ? c + static_cast<u64>(row) * ldc * kCElem : nullptr;
#pragma unroll
            for (u32 j0 = 0; j0 < kBlockN / 8; j0 += kBatch) {
                float cv[2 * kBatch];  // C values of this batch (unused without C)
#pragma unroll
                for (u32 jj = 0; jj < kBatch; ++jj) {
                    const u32 col = n0 + (j0 + jj) * 8 + (lane % 4) * 2;
                    if constexpr (kWithC) load_pair(c_row, col, n, c_pairs, cv[2 * jj], cv[2 * jj + 1]);
                }
#pragma unroll
                for (u32 jj = 0; jj < kBatch; ++jj) {
                    const u32 j = j0 + jj;
                    const u32 col = n0 + j * 8 + (lane % 4) * 2;
                    const float x0 = acc[4 * j + 2 * half], x1 = acc[4 * j + 2 * half + 1];
                    if constexpr (kWithC) {
                        store_pair(d_row, col, n, x0 + cv[2 * jj], x1 + cv[2 * jj + 1]);
                    } else {
                        store_pair(d_row, col, n, x0, x1);
                    }
                }
            }
        }
    }

    // Pulls C's rows of this thread's quad into L2 ahead of store() (the same m0, n0, m, n; one wave per
    // warpgroup): the 4 lanes of a quad take every 4th 128-byte line of its two rows' BLOCK_N columns, so the
    // epilogue's C loads wait on L2 instead of HBM. Only lines inside C (rows < m, columns < n) are touched.
    __device__ __forceinline__ void prefetch_c(u32 m0, u32 n0, u32 m, u32 n) const {
        static_assert(kWaves == 1, "one wave per warpgroup");
        if constexpr (kWithC) {
            constexpr u32 kLineCols = 128 / (kCFp32 ? 4 : 2);
            constexpr u32 kLines = (kBlockN + kLineCols - 1) / kLineCols;
            const u32 warp = thread / 32, lane = thread % 32;
            const u32 row_lo = m0 + math_wg * 64 + warp * 16 + lane / 4;
#pragma unroll
            for (u32 half = 0; half < 2; ++half) {
                const u32 row = row_lo + half * 8;
                if (row >= m) continue;
#pragma unroll
                for (u32 line = lane % 4; line < kLines; line += 4) {
                    const u32 col = n0 + line * kLineCols;
                    if (col < n) ptx::prefetch_l2(c + (static_cast<u64>(row) * ldc + col) * (kCFp32 ? 4 : 2));
                }
            }
        }
    }

    __device__ __forceinline__ void finish() {}
};

}  // namespace deep_gemm
