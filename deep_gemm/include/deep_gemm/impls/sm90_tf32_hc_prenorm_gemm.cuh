// TF32 "hyper-connection pre-norm" GEMM: for BF16 A [m, k] and FP32 B [n, k] (n <= 64),
//   d[s][i][j] = sum over k in split s of A[i, k] * tf32(B[j, k])   (TF32 products, FP32 accumulation;
//                tf32() rounds to nearest, ties away from zero, as torch's TF32 matmul does)
//   sqr_sum[s][i] = sum over k in split s of A[i, k]^2               (FP32)
// where split s of S covers the 64-wide K blocks [s * q + min(s, r), ...) with q = nkb / S, r = nkb % S
// (nkb = ceil(k / 64); the first r splits get one block more; an empty split writes zeros).
//
// One pass over A, which is the whole cost (n is tiny): a memory-bound kernel.
// - A unit (one CTA) is a 128-row block of A times a run of K blocks. A producer warp streams 128 x 64
//   BF16 tiles of A and kBlockN x 64 FP32 tiles of B by TMA (128-byte swizzle, zero fill past m, n and k)
//   through a kStages ring; two math warpgroups each own 64 rows.
// - B reaches the wgmmas from shared memory, where TMA leaves raw FP32 (a TF32 wgmma would drop the low 13
//   mantissa bits: truncation). So the math threads first round the stage's B tile in place with
//   cvt.rna.tf32.f32 (kBlockN * 16 16-byte vectors over 256 threads: at most 4 each), fence it for the async
//   proxy and meet at a named barrier before the stage's wgmmas. Rounding where B is produced (a pre-pass over
//   b) would cost a launch and a second pass over b, which is as large as a for small m; the in-place pass
//   costs a few shared-memory accesses and one barrier per K block, in a kernel bound by reading a.
// - A math thread reads its wgmma A fragment (2 rows x 2 columns per 8-wide K step) straight from the
//   swizzled BF16 tile, widens it to FP32 by a shift (exact: every BF16 value is a TF32 value), squares
//   and adds it to its row sums, and issues TF32 wgmmas with A from registers and B from shared memory.
//   Every element of the tile is in exactly one thread's fragment, so the row sums see each A[i, k] once.
// - Split-K inside a split (`reduce` > 1 units per (m block, split) group, chosen by the host to fill the
//   GPU when m is small): each unit stores its partial accumulators and row sums in a workspace slot, and
//   the last unit of a group to finish (a per-group counter) adds the slots in a fixed order (below) and
//   writes the outputs. The order does not depend on timing, so results are deterministic; the counter is
//   reset by the unit that read it, so the next launch finds it at zero.
// Rows past m are neither stored nor reduced; columns past n are not stored.
//
// Device-only code, compiles with NVCC and NVRTC.
#pragma once

#include "../common/types.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tf32.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_tf32.cuh"
#include "sm90_tf32_hc_prenorm_gemm_params.hpp"  // the generated entry point's parameters

namespace deep_gemm::hc_prenorm {

constexpr u32 kBlockM = 128, kBlockK = 64;
constexpr u32 kMathThreads = 256;              // two warpgroups of 64 rows
constexpr u32 kThreads = kMathThreads + 32;    // + one producer warp
constexpr u32 kABytes = kBlockM * kBlockK * 2;  // one BF16 tile: 128 rows of 128 bytes
constexpr u32 kReduceBarrier = 1, kRoundedBarrier = 2;  // named barriers of the math threads

template <u32 kBlockN>
struct Layout {
    static_assert(kBlockN % 8 == 0 and kBlockN >= 8 and kBlockN <= 64, "kBlockN: a multiple of 8 in [8, 64]");
    // B tile: two 32-column halves (one 128-byte swizzle row each), kBlockN rows of 128 bytes per half.
    static constexpr u32 kBHalfBytes = kBlockN * 128;
    static constexpr u32 kBBytes = 2 * kBHalfBytes;
    static constexpr u32 kStageBytes = kABytes + kBBytes;
    static constexpr u32 kNumAccum = kBlockN / 2;
    static constexpr u32 kSlotFloats = kNumAccum + 2;  // accumulators + two row sums per math thread
    // Ring of stages, then full/empty barriers and a flag word.
    static constexpr u32 smem_bytes(u32 stages) { return stages * kStageBytes + stages * 16 + 16; }
};

// x * y + z rounded once (spelled out: the JIT's trimmed headers have no fmaf).
__device__ __forceinline__ float fma_rn(float x, float y, float z) {
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(x), "f"(y), "f"(z));
    return r;
}

// Which K blocks unit `j` of `reduce` in split `s` of `num_splits` covers (of `num_k_blocks`).
__device__ __forceinline__ void unit_k_blocks(u32 num_k_blocks, u32 num_splits, u32 s, u32 reduce, u32 j, u32& first,
                                              u32& count) {
    const u32 q = num_k_blocks / num_splits, r = num_k_blocks % num_splits;
    const u32 split_first = s * q + (s < r ? s : r), split_count = q + (s < r ? 1u : 0u);
    const u32 lo = split_count * j / reduce, hi = split_count * (j + 1) / reduce;
    first = split_first + lo;
    count = hi - lo;
}

// Rounds the B tile at `b` (kBlockN x 64 FP32 values, two swizzled halves: an elementwise pass does not care
// where each value sits) to TF32 in place, thread `tid` of the kMathThreads taking every kMathThreads-th
// 16-byte vector, and orders its writes before later wgmma (async proxy) reads. The caller's barrier makes
// every thread's part visible before any wgmma reads the tile.
template <u32 kBlockN>
__device__ __forceinline__ void round_b_tile_to_tf32(u8* b, u32 tid) {
    constexpr u32 kVectors = kBlockN * 64 * 4 / 16;
    #pragma unroll
    for (u32 i = 0; i < ceil_div(kVectors, kMathThreads); ++i) {
        const u32 v = tid + i * kMathThreads;
        if (kVectors % kMathThreads != 0 and v >= kVectors) break;
        uint4* p = reinterpret_cast<uint4*>(b) + v;
        uint4 x = *p;
        x.x = ptx::cvt_rna_tf32(x.x);
        x.y = ptx::cvt_rna_tf32(x.y);
        x.z = ptx::cvt_rna_tf32(x.z);
        x.w = ptx::cvt_rna_tf32(x.w);
        *p = x;
    }
    ptx::fence_proxy_async_smem();
}

template <u32 kBlockN, u32 kStages>
__device__ __forceinline__ void tf32_hc_prenorm_gemm(const TmaDescriptor& tmap_a, const TmaDescriptor& tmap_b,
                                                     float* __restrict__ d, long long d_row_stride,
                                                     long long d_split_stride, float* __restrict__ sqr_sum,
                                                     long long s_split_stride, int m, int n, u32 num_k_blocks,
                                                     u32 num_splits, u32 reduce, float* __restrict__ workspace,
                                                     u32* __restrict__ counters) {
    using L = Layout<kBlockN>;
    static_assert(kStages >= 2, "at least two stages");
    static_assert(kStages * kABytes >= 7 * 32 * L::kSlotFloats * 4, "the reduction's run sums fit the A ring");
    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_a = smem;
    u8* smem_b = smem + kStages * kABytes;
    u64* full = reinterpret_cast<u64*>(smem + kStages * L::kStageBytes);
    u64* empty = full + kStages;
    u32* last_flag = reinterpret_cast<u32*>(empty + kStages);

    // Unit -> (m block, split, position in the split's group).
    const u32 unit = blockIdx.x;
    const u32 j = unit % reduce, group = unit / reduce;
    const u32 s = group % num_splits, m_block = group / num_splits;
    u32 kb_first, kb_count;
    unit_k_blocks(num_k_blocks, num_splits, s, reduce, j, kb_first, kb_count);

    if (threadIdx.x == kMathThreads) {
        for (u32 i = 0; i < kStages; ++i) {
            ptx::mbarrier_init(&full[i], 1);
            ptx::mbarrier_init(&empty[i], kMathThreads);
        }
        ptx::mbarrier_init_fence();
        ptx::tma_prefetch_descriptor(tmap_a);
        ptx::tma_prefetch_descriptor(tmap_b);
    }
    __syncthreads();
    // PDL: inputs may still be written by the previous kernel until here.
    ptx::grid_dependency_wait();

    if (threadIdx.x >= kMathThreads) {
        // Producer: one thread streams the unit's K blocks.
        if (threadIdx.x == kMathThreads) {
            for (u32 t = 0; t < kb_count; ++t) {
                const u32 stage = t % kStages, phase = (t / kStages) & 1u;
                ptx::mbarrier_wait(&empty[stage], phase ^ 1u);
                ptx::mbarrier_arrive_expect_tx(&full[stage], L::kStageBytes);
                const i32 k0 = static_cast<i32>((kb_first + t) * kBlockK);
                u8* b = smem_b + stage * L::kBBytes;
                ptx::tma_load_2d(smem_a + stage * kABytes, tmap_a, &full[stage], k0, static_cast<i32>(m_block * kBlockM));
                ptx::tma_load_2d(b, tmap_b, &full[stage], k0, 0);
                ptx::tma_load_2d(b + L::kBHalfBytes, tmap_b, &full[stage], k0 + 32, 0);
            }
        }
        return;
    }

    const u32 tid = threadIdx.x, lane = tid % 32, warp = tid / 32;  // warps 0-3: rows 0-63, 4-7: rows 64-127
    const u32 row0 = warp * 16 + lane / 4;  // the thread's rows in the tile: row0 and row0 + 8
    const u32 quad = lane % 4;
    // Byte offsets of the fragment's two rows; the 128-byte swizzle XORs the 16-byte chunk index with row % 8
    // (the same for both rows, which are 8 apart).
    const u32 row0_bytes = row0 * 128, row1_bytes = (row0 + 8) * 128, swz = row0 % 8;

    float acc[L::kNumAccum];
    #pragma unroll
    for (u32 i = 0; i < L::kNumAccum; ++i) acc[i] = 0.0f;
    float ss0 = 0.0f, ss1 = 0.0f;

    for (u32 t = 0; t < kb_count; ++t) {
        const u32 stage = t % kStages, phase = (t / kStages) & 1u;
        ptx::mbarrier_wait(&full[stage], phase);
        const u8* a = smem_a + stage * kABytes;
        u8* b = smem_b + stage * L::kBBytes;
        const u32 b_addr = smem_addr(b);
        u32 frag[8][4];
        #pragma unroll
        for (u32 kk = 0; kk < 8; ++kk) {
            // K step kk is the 16-byte chunk kk of each row (8 BF16 values); the thread's columns are quad, quad + 4.
            const u32 chunk = ((kk ^ swz) * 16) + quad * 2;
            const u16 x00 = *reinterpret_cast<const u16*>(a + row0_bytes + chunk);
            const u16 x10 = *reinterpret_cast<const u16*>(a + row1_bytes + chunk);
            const u16 x01 = *reinterpret_cast<const u16*>(a + row0_bytes + chunk + 8);
            const u16 x11 = *reinterpret_cast<const u16*>(a + row1_bytes + chunk + 8);
            frag[kk][0] = static_cast<u32>(x00) << 16;
            frag[kk][1] = static_cast<u32>(x10) << 16;
            frag[kk][2] = static_cast<u32>(x01) << 16;
            frag[kk][3] = static_cast<u32>(x11) << 16;
        }
        // B after A's loads are issued, so that their latencies overlap; the barrier waits below the squares.
        round_b_tile_to_tf32<kBlockN>(b, tid);
        // The tile's 16 squares per row first, then one add into the running sum: the running sums see
        // k / 64 additions instead of k / 4 (smaller FP32 rounding drift over long K).
        float t0 = 0.0f, t1 = 0.0f;
        #pragma unroll
        for (u32 kk = 0; kk < 8; ++kk) {
            const float v00 = __uint_as_float(frag[kk][0]), v10 = __uint_as_float(frag[kk][1]);
            const float v01 = __uint_as_float(frag[kk][2]), v11 = __uint_as_float(frag[kk][3]);
            t0 = fma_rn(v00, v00, t0);
            t0 = fma_rn(v01, v01, t0);
            t1 = fma_rn(v10, v10, t1);
            t1 = fma_rn(v11, v11, t1);
        }
        ss0 += t0;
        ss1 += t1;
        ptx::named_barrier_sync(kRoundedBarrier, kMathThreads);  // the whole B tile is rounded
        ptx::wgmma_fence();
        #pragma unroll
        for (u32 kk = 0; kk < 8; ++kk) {
            // B: K step kk is 32 bytes into half kk / 4.
            const u64 desc = ptx::make_smem_desc_kmajor_sw128(b_addr + (kk / 4) * L::kBHalfBytes + (kk % 4) * 32);
            ptx::WgmmaTf32Rs<kBlockN>::mma(frag[kk], desc, acc, true);
        }
        ptx::wgmma_commit_group();
        ptx::wgmma_wait_group<0>();
        #pragma unroll
        for (u32 i = 0; i < L::kNumAccum; ++i) ptx::fence_operand(acc[i]);
        ptx::mbarrier_arrive(&empty[stage]);
    }
    // Row sums: the four threads of a quad hold the four column classes of the same two rows.
    ss0 += __shfl_xor_sync(0xffffffffu, ss0, 1);
    ss0 += __shfl_xor_sync(0xffffffffu, ss0, 2);
    ss1 += __shfl_xor_sync(0xffffffffu, ss1, 1);
    ss1 += __shfl_xor_sync(0xffffffffu, ss1, 2);
    ptx::grid_dependency_launch_dependents();

    const int grow0 = static_cast<int>(m_block * kBlockM + row0), grow1 = grow0 + 8;
    const bool has_rows = grow0 < m;  // a thread whose rows are all past m has nothing to store or reduce

    if (reduce > 1) {
        // Slot of (unit, accumulator i, thread): consecutive threads at consecutive addresses.
        const long long slot_stride = static_cast<long long>(L::kSlotFloats) * kMathThreads;
        float* mine = workspace + unit * slot_stride + tid;
        if (has_rows) {
            #pragma unroll
            for (u32 i = 0; i < L::kNumAccum; ++i) __stcg(mine + i * kMathThreads, acc[i]);
            __stcg(mine + L::kNumAccum * kMathThreads, ss0);
            __stcg(mine + (L::kNumAccum + 1) * kMathThreads, ss1);
        }
        __threadfence();  // the slot is visible GPU-wide before the counter says so
        ptx::named_barrier_sync(kReduceBarrier, kMathThreads);
        if (tid == 0) {
            const u32 arrived = atomicAdd(&counters[group], 1u);
            const bool last = arrived == reduce - 1;
            if (last) counters[group] = 0;  // every unit of the group has counted: ready for the next launch
            *last_flag = last ? 1u : 0u;
        }
        ptx::named_barrier_sync(kReduceBarrier, kMathThreads);
        if (*last_flag == 0) return;
        __threadfence();
        // Sum the group's slots. Only the warps whose 16 rows reach below m wrote slots ("source" warps);
        // with fewer than 8 of them (small m) the other warps help: warp w adds, for source warp w % S,
        // the run `part` = w / S of the slots (in unit order), and source warp w adds the runs' sums in
        // run order. The order depends on m and reduce only, never on timing.
        const int rows_left = m - static_cast<int>(m_block * kBlockM);
        const int rows_valid = rows_left < static_cast<int>(kBlockM) ? rows_left : static_cast<int>(kBlockM);
        const u32 src_warps = static_cast<u32>(rows_valid + 15) / 16;
        const u32 parts = (kMathThreads / 32) / src_warps, part = warp / src_warps;
        const u32 src = (warp % src_warps) * 32 + lane;  // the source thread whose slots this one adds
        const bool src_rows = static_cast<int>(m_block * kBlockM + (src / 32) * 16 + lane / 4) < m;
        float sum[L::kSlotFloats];
        #pragma unroll
        for (u32 i = 0; i < L::kSlotFloats; ++i) sum[i] = 0.0f;
        if (part < parts and src_rows) {
            // Loads of kBatch slots are issued before they are added, so that many L2 loads are in flight
            // (one slot at a time would wait an L2 latency per slot).
            const float* first = workspace + static_cast<long long>(group) * reduce * slot_stride + src;
            const u32 u_end = reduce * (part + 1) / parts;
            constexpr u32 kBatch = L::kSlotFloats >= 32 ? 1 : 32 / L::kSlotFloats;
            for (u32 u = reduce * part / parts; u < u_end; u += kBatch) {
                float v[kBatch][L::kSlotFloats];
                #pragma unroll
                for (u32 b = 0; b < kBatch; ++b) {
                    const float* slot = first + (u + b) * slot_stride;
                    #pragma unroll
                    for (u32 i = 0; i < L::kSlotFloats; ++i) v[b][i] = u + b < u_end ? __ldcg(slot + i * kMathThreads) : 0.0f;
                }
                #pragma unroll
                for (u32 b = 0; b < kBatch; ++b) {
                    #pragma unroll
                    for (u32 i = 0; i < L::kSlotFloats; ++i) sum[i] += v[b][i];
                }
            }
        }
        if (parts > 1) {
            // The runs' sums meet in shared memory (the A ring: every stage has been consumed).
            float* runs = reinterpret_cast<float*>(smem_a);
            const u32 width = src_warps * 32;
            if (part >= 1 and part < parts) {
                #pragma unroll
                for (u32 i = 0; i < L::kSlotFloats; ++i) runs[((part - 1) * L::kSlotFloats + i) * width + src] = sum[i];
            }
            ptx::named_barrier_sync(kReduceBarrier, kMathThreads);
            if (part == 0) {
                for (u32 p = 1; p < parts; ++p) {
                    #pragma unroll
                    for (u32 i = 0; i < L::kSlotFloats; ++i) sum[i] += runs[((p - 1) * L::kSlotFloats + i) * width + src];
                }
            }
        }
        if (part != 0) return;  // part 0 is warp w < src_warps, whose source is itself (src == tid)
        #pragma unroll
        for (u32 i = 0; i < L::kNumAccum; ++i) acc[i] = sum[i];
        ss0 = sum[L::kNumAccum];
        ss1 = sum[L::kNumAccum + 1];
    }
    if (not has_rows) return;

    // acc[4c + 0/1]: row0, columns 8c + 2 * quad + 0/1; acc[4c + 2/3]: row0 + 8, same columns.
    float* d_split = d + static_cast<long long>(s) * d_split_stride;
    #pragma unroll
    for (u32 c = 0; c < kBlockN / 8; ++c) {
        #pragma unroll
        for (u32 e = 0; e < 2; ++e) {
            const int col = static_cast<int>(8 * c + 2 * quad + e);
            if (col >= n) continue;
            d_split[grow0 * d_row_stride + col] = acc[4 * c + e];
            if (grow1 < m) d_split[grow1 * d_row_stride + col] = acc[4 * c + 2 + e];
        }
    }
    if (quad == 0) {
        float* s_split = sqr_sum + static_cast<long long>(s) * s_split_stride;
        s_split[grow0] = ss0;
        if (grow1 < m) s_split[grow1] = ss1;
    }
}

}  // namespace deep_gemm::hc_prenorm
