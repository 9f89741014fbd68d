// Epilogue: FP32 accumulators of one math warpgroup (kRowsPerWarpgroup = 64 or 128 rows x BLOCK_N) -> BF16
// -> swizzled shared memory (stmatrix) -> TMA store. A warpgroup holds its rows as kWaves = rows / 64
// accumulator sets of the wgmma m64 layout ("waves"; wave w covers rows [64 w, 64 w + 64) of the
// warpgroup's slice). Each math warpgroup owns its slice of the staging buffer and stores it on its own
// (named barrier per warpgroup), so the warpgroups never wait for each other.
//
// Staging layout: BLOCK_N is cut into column chunks of kSwizzleBytes (128, 64 or 32 bytes = the widest
// swizzle that divides a BLOCK_N row); chunk c is a [BLOCK_M rows x kSwizzleBytes] box at
// c * BLOCK_M * kSwizzleBytes, rows contiguous, 16-byte units XOR-swizzled exactly as TMA expects for
// CU_TENSOR_MAP_SWIZZLE_{128,64,32}B (address bits [4, 4+log2(kSwizzleBytes/16)) ^= bits [7, ...)).
// The D tensor map's box is {kSwizzleBytes / 2 columns, 64 rows}: one TMA store per wave and chunk.
//
// Reuse across tiles: before a warpgroup overwrites its slice, its storing thread waits until the
// previous tile's bulk stores have finished reading shared memory (wait_group.read 0), then the
// warpgroup synchronises. After writing: proxy fence in every writer, barrier, one thread issues.
#pragma once

#include "../common/types.cuh"
#include "../ptx/stmatrix.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "bf16_direct_store.cuh"

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kRowsPerWarpgroup_ = 64>
struct Bf16TmaStoreEpilogue {
    static_assert(kBlockN % 16 == 0, "BLOCK_N must be a multiple of 16 (stmatrix pairs of 8 columns)");
    static constexpr u32 kSwizzleBytes = (kBlockN % 64 == 0) ? 128 : ((kBlockN % 32 == 0) ? 64 : 32);
    static constexpr u32 kChunkCols = kSwizzleBytes / 2;
    static constexpr u32 kNumChunks = kBlockN / kChunkCols;
    static constexpr u32 kUnitsPerRow = kSwizzleBytes / 16;
    static constexpr u32 kSmemBytes = kBlockM * kBlockN * 2;
    static constexpr u32 kRowsPerWarpgroup = kRowsPerWarpgroup_;
    static constexpr u32 kWaves = kRowsPerWarpgroup / 64;
    static_assert(kRowsPerWarpgroup == 64 || kRowsPerWarpgroup == 128, "64 or 128 rows per math warpgroup");
    // Staging chunk offsets stay multiples of the swizzle repeat (kSwizzleBytes * 8 bytes).
    static_assert((kBlockM * kSwizzleBytes) % 1024 == 0, "chunk alignment");

    static constexpr bool kUsesTensorMap = true;
    // store() also comes as stage() + issue() (the kernel may defer them into the next tile's first K block).
    static constexpr bool kStagedStore = true;

    u8* smem;
    u32 math_wg;    // 0 or 1
    u32 thread;     // 0..127 inside the warpgroup
    const TmaDescriptor& tmap_d;
    u16* d;   // for store_rows' partial slices only
    u32 ldd;

    // Common epilogue constructor: staging smem, math warpgroup index, thread in warpgroup, D tensor
    // map, D pointer and row stride (elements), and optionally a C operand (pointer, row stride) for
    // epilogues that accumulate D = C + acc. This one stores through the tensor map (no C); store_rows
    // also writes from registers.
    __device__ __forceinline__ Bf16TmaStoreEpilogue(u8* smem_d, u32 wg, u32 t, const TmaDescriptor& tmap, void* d_ptr,
                                                    u32 ld, const void* = nullptr, u32 = 0)
        : smem(smem_d), math_wg(wg), thread(t), tmap_d(tmap), d(static_cast<u16*>(d_ptr)), ldd(ld) {}

    // As store(), but writes only the rows below row_end whose flag is set (lo_ok[w]: this thread's first
    // accumulator row of wave w, hi_ok[w]: the row 8 below it), for bounds the tensor map does not know (masked
    // groups). A warpgroup whose rows are all to be written stores through TMA; otherwise its rows
    // are written from registers (a group's last tile only). Both paths run the staging and its barriers, so no
    // barrier sits in a branch the compiler cannot prove warp-uniform (it then took the whole tile loop for
    // divergent, and the wgmma descriptors out of uniform registers).
    template <int kNumAccum>
    __device__ __forceinline__ void store_rows(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 row_end,
                                               u32 n, const bool (&lo_ok)[kWaves], const bool (&hi_ok)[kWaves]) {
        const u32 warp = thread / 32, lane = thread % 32;
        const u32 row_lo = m0 + math_wg * kRowsPerWarpgroup + warp * 16 + lane / 4;  // wave w: + 64 w
        bool lo[kWaves], hi[kWaves], all = true;
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) {
            lo[w] = lo_ok[w] && row_lo + w * 64 < row_end;
            hi[w] = hi_ok[w] && row_lo + w * 64 + 8 < row_end;
            all = all && lo[w] && hi[w];
        }
        const bool whole = ptx::named_barrier_and(1 + math_wg, 128, all);
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) stage(acc[w], w);
        issue(m0, n0, whole ? row_end : 0u, n);  // row bound 0: no TMA store
        if (!whole) {
#pragma unroll
            for (u32 w = 0; w < kWaves; ++w)
                store_bf16_rows_direct<kBlockN>(acc[w], d, ldd, row_lo + w * 64, lo[w], hi[w], n0, n, lane);
        }
    }

    // acc: this thread's wgmma-layout accumulators for rows [64*math_wg, +64) of the tile at (m0, n0)
    // (one wave per warpgroup).
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
        static_assert(kWaves == 1, "a warpgroup of several waves passes acc[wave][...]");
        store(reinterpret_cast<const float(&)[1][kNumAccum]>(acc), m0, n0, m, n);
    }

    // acc[w]: this thread's accumulators of wave w, rows [kRowsPerWarpgroup*math_wg + 64*w, +64).
    template <int kNumAccum>
    __device__ __forceinline__ void store(const float (&acc)[kWaves][kNumAccum], u32 m0, u32 n0, u32 m, u32 n) {
#pragma unroll
        for (u32 w = 0; w < kWaves; ++w) stage(acc[w], w);
        issue(m0, n0, m, n);
    }

    // store() in two steps, so a kernel can overlap them with its next tile's first wgmmas: stage() writes
    // wave w's rows as BF16 into this warpgroup's staging slice (waves in order 0, 1, ...; before wave 0 it
    // waits until the previous store has read the slice), issue() hands the staged waves to the TMA store.
    template <int kNumAccum>
    __device__ __forceinline__ void stage(const float (&acc)[kNumAccum], u32 w) {
        static_assert(kNumAccum == kBlockN / 2, "accumulator count");
        if (w == 0) {
            if (thread == 0) ptx::bulk_wait_group_read<0>();
            ptx::named_barrier_sync(1 + math_wg, 128);
        }
        const u32 warp = thread / 32, lane = thread % 32;
        const u32 mat = lane / 8;
        // Row of the tile whose address this lane supplies for stmatrix.
        const u32 row = math_wg * kRowsPerWarpgroup + w * 64 + warp * 16 + (mat & 1) * 8 + (lane % 8);
        const u32 row_swizzle = ((row * kSwizzleBytes) >> 7) & (kUnitsPerRow - 1);
        const u32 base = smem_addr(smem) + row * kSwizzleBytes;
#pragma unroll
        for (u32 jp = 0; jp < kBlockN / 16; ++jp) {
            const u32 j = jp * 2;             // first of the two 8-column groups of this stmatrix
            const u32 col8 = j + (mat >> 1);  // 8-column group this lane addresses
            const u32 chunk = col8 / kUnitsPerRow;
            const u32 unit = (col8 % kUnitsPerRow) ^ row_swizzle;
            const u32 addr = base + chunk * (kBlockM * kSwizzleBytes) + unit * 16;
            ptx::stmatrix_x4(addr, ptx::pack_bf16x2(acc[4 * j + 0], acc[4 * j + 1]),
                             ptx::pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]),
                             ptx::pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                             ptx::pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7]));
        }
    }

    // The staged waves of the tile at (m0, n0) (all kWaves of them) -> D.
    __device__ __forceinline__ void issue(u32 m0, u32 n0, u32 m, u32 n) {
        ptx::fence_proxy_async_smem();
        ptx::named_barrier_sync(1 + math_wg, 128);
        if (thread == 0) {
#pragma unroll
            for (u32 w = 0; w < kWaves; ++w) {
                const u32 row_in_tile = math_wg * kRowsPerWarpgroup + w * 64;
                const u32 row0 = m0 + row_in_tile;
                if (row0 < m) {
#pragma unroll
                    for (u32 c = 0; c < kNumChunks; ++c) {
                        if (n0 + c * kChunkCols < n) {
                            ptx::tma_store_2d(tmap_d, smem + c * (kBlockM * kSwizzleBytes) + row_in_tile * kSwizzleBytes,
                                              static_cast<i32>(n0 + c * kChunkCols), static_cast<i32>(row0));
                        }
                    }
                }
            }
            ptx::bulk_commit_group();
        }
    }

    // Before the CTA exits: all stores complete.
    __device__ __forceinline__ void finish() {
        if (thread == 0) ptx::bulk_wait_group<0>();
    }
};

}  // namespace deep_gemm
