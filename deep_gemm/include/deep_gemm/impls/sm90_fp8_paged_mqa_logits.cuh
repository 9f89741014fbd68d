// Paged MQA logits (the sparse-attention indexer of DeepSeek V3.2), one fused kernel on sm_90a:
//
//   logits[b * kNextN + t, p] = sum_h w[b * kNextN + t, h] * relu(q[b, t, h, :] . kv(p)) * s(p)    for p < len(b, t)
//
// kv(p) / s(p) are the FP8 row and FP32 scale of token p of batch b: block block_table[b, p / kBlockKv], row
// p % kBlockKv. A block (page) of the kv cache is kBlockKv * D FP8 bytes (row-major [kBlockKv, D]) followed by
// kBlockKv FP32 scales; blocks are page_stride bytes apart; kBlockKv is 64 or 32. len(b, t) is the row's context
// length (see row_len), clamped on the device to [0, min(max_context_len, kBlockKv * table_width)] so no length
// read from memory can address past the logits row or the block table; block indices are clamped to
// [0, num_pages).
//
// Work unit = (batch b, tile j): one kv tile of 64 positions (wgmma M side, operand A) against the kNextN * H query
// heads of batch b (N side, operand B). With 32-row blocks a tile is gathered from two blocks (table entries 2j and
// 2j + 1, two TMA copies into the two halves of one ring slot), so the tiles, the schedule and the math do not
// depend on the block size. schedule_meta (get_paged_mqa_logits_metadata) holds, for SM i, the first unit
// (batch, tile) of its share; the units of batch b are j < ceil(max_t len(b, t) / 64), walked in order b-major.
// CTA i takes the units from entry i up to (excluding) entry i + 1.
//
// The per-tile math (QGMMA m64nNk32 of the kv tile against the batch's kNextN * H query rows, relu * w and the
// sum over heads in registers) is the shared MQA tile of the dense kernel (mqa_logits_tile.cuh).
//
// Warp roles (threads_of<kMathWGs> = 128 * kMathWGs + 32): kMathWGs math warpgroups take the units of the CTA in
// turns (unit i: warpgroup i % kMathWGs), so one's QGMMAs overlap another's reduction; the last warp issues the loads:
// kv tiles (the 64 x 128 FP8 rows and, through a second tensor map, the 64 scales) into a kStages ring, the
// query tile of a batch into one of two q slots when the batch changes.
// With clean logits, after its units each CTA writes -inf to positions [len, max_context_len) of a strided
// share of the rows (disjoint from what the units write, so no ordering between CTAs is needed).
#pragma once

#include "../common/pipeline.cuh"
#include "../common/types.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_helpers.cuh"
#include "mqa_logits_tile.cuh"
#include "sm90_fp8_paged_mqa_logits_params.hpp"  // Args and the entry point's parameters

namespace deep_gemm::paged_mqa {

constexpr u32 kPageRows = 64;   // kv rows per tile (unit) = wgmma M; a kv block holds kPageRows or kPageRows / 2
constexpr u32 kHeadDim = 128;   // FP8 bytes per kv / q row = one 128-byte swizzle row
template <u32 kMathWGs>
constexpr u32 threads_of = 128 * kMathWGs + 32;

template <u32 kNumHeads, u32 kNextN, u32 kStages>
struct Layout {
    static constexpr u32 kN = kNumHeads * kNextN;
    static constexpr u32 kKvTileBytes = kPageRows * kHeadDim;  // 8 KB, 1024-byte multiple
    static constexpr u32 kQTileBytes = kN * kHeadDim;          // N rows of 128 B, 1024-byte multiple (N % 8 == 0)
    static constexpr u32 kScaleBytes = kPageRows * 4;          // the page's 64 float32 scales
    static constexpr u32 kQOffset = kStages * kKvTileBytes;
    static constexpr u32 kScaleOffset = kQOffset + 2 * kQTileBytes;
    static constexpr u32 kBarOffset = kScaleOffset + kStages * kScaleBytes;
    static constexpr u32 kNumBarriers = 2 * kStages + 4;
    static constexpr u32 kSmemBytes = kBarOffset + kNumBarriers * 8;
    static_assert(kN % 32 == 0 && kN <= 256, "N = next_n * heads: a multiple of 32, at most 256");
};

// Runtime arguments shared by both roles: Args, in sm90_fp8_paged_mqa_logits_params.hpp (the host fills the same struct).

// Context length of row (b, t): 2-D lens give it per row; 1-D lens give the batch's length L, and row t
// (the t-th of the batch's kNextN draft tokens) sees positions p <= L - kNextN + t.
template <u32 kNextN, bool kLens2d, u32 kBlockKv>
__device__ __forceinline__ int row_len(const Args& a, int b, u32 t) {
    const long long raw = kLens2d ? (long long)__ldg(a.context_lens + (long long)b * kNextN + t)
                                  : (long long)__ldg(a.context_lens + b) - (long long)kNextN + t + 1;
    const long long cap = min((long long)a.max_context_len, (long long)a.table_width * kBlockKv);
    return (int)max(0ll, min(raw, cap));
}

template <u32 kNextN, bool kLens2d, u32 kBlockKv>
__device__ __forceinline__ int batch_pages(const Args& a, int b) {
    int longest = 0;
#pragma unroll
    for (u32 t = 0; t < kNextN; ++t) longest = max(longest, row_len<kNextN, kLens2d, kBlockKv>(a, b, t));
    return (longest + (int)kPageRows - 1) / (int)kPageRows;
}

// Calls f(b, page) for this CTA's units (64-position tiles) in order. Every value read from schedule is clamped
// and the walk only moves forward, so any schedule ends after at most all units.
template <u32 kNextN, bool kLens2d, u32 kBlockKv, typename F>
__device__ __forceinline__ void for_each_unit(const Args& a, F&& f) {
    const int* s = a.schedule + 2 * blockIdx.x;
    int b = min(max(__ldg(s), 0), a.batch), page = max(__ldg(s + 1), 0);
    const int end_b = min(max(__ldg(s + 2), 0), a.batch), end_page = max(__ldg(s + 3), 0);
    int pages = b < a.batch ? batch_pages<kNextN, kLens2d, kBlockKv>(a, b) : 0;
    while (b < a.batch and (b < end_b or (b == end_b and page < end_page))) {
        if (page >= pages) {
            ++b, page = 0;
            pages = b < a.batch ? batch_pages<kNextN, kLens2d, kBlockKv>(a, b) : 0;
            continue;
        }
        f(b, page);
        ++page;
    }
}

template <u32 kNumHeads, u32 kNextN, u32 kStages, u32 kMathWGs, bool kLens2d, bool kClean, typename OutT, u32 kBlockKv>
__device__ __forceinline__ void paged_mqa_logits_impl(const TmaDescriptor& tmap_q, const TmaDescriptor& tmap_kv,
                                                      const TmaDescriptor& tmap_sf, const Args& a) {
    using L = Layout<kNumHeads, kNextN, kStages>;
    constexpr u32 kN = L::kN;
    // The shared tile takes 4 queries per tile: the kN = kNextN * H columns of a batch are read as 4
    // pseudo-queries of kN / 4 heads (query t = pseudo-queries t * kSpan .. t * kSpan + kSpan - 1).
    static_assert(4 % kNextN == 0, "next_n must be 1, 2 or 4");
    constexpr u32 kSpan = 4 / kNextN;
    using Tile = mqa::MqaTile<kN / 4, kHeadDim, 4>;
    static_assert(Tile::kN == kN && Tile::kKvTileBytes == L::kKvTileBytes && Tile::kQTileBytes == L::kQTileBytes,
                  "paged layout and tile disagree");
    static_assert(Tile::kQueriesPerLane == 1, "one pseudo-query per lane");
    static_assert(kBlockKv == kPageRows || kBlockKv == kPageRows / 2, "kv blocks of 64 or 32 rows");
    constexpr u32 kBlocksPerTile = kPageRows / kBlockKv;  // kv blocks gathered into one 64-row tile: 1 or 2
    constexpr int kTilesPerChunk = 32 / (int)kBlocksPerTile;  // tiles whose table entries one warp load covers

    extern __shared__ __align__(1024) u8 smem[];
    u8* kv_smem = smem;
    u8* q_smem = smem + L::kQOffset;
    const float* sf_smem = reinterpret_cast<const float*>(smem + L::kScaleOffset);
    u64* bars = reinterpret_cast<u64*>(smem + L::kBarOffset);
    const PipelineBarriers<kStages> kv_bars{bars, bars + kStages};
    const PipelineBarriers<2> q_bars{bars + 2 * kStages, bars + 2 * kStages + 2};

    static_assert(kMathWGs == 1 || kMathWGs == 2, "one or two math warpgroups");
    constexpr u32 kThreads = threads_of<kMathWGs>;
    const u32 thread = threadIdx.x, warp = thread / 32, lane = thread % 32;
    if (thread == 128 * kMathWGs) {
        ptx::tma_prefetch_descriptor(tmap_q);
        ptx::tma_prefetch_descriptor(tmap_kv);
        ptx::tma_prefetch_descriptor(tmap_sf);
        kv_bars.init(4);             // a page is read by one warpgroup: one arrival per warp
        q_bars.init(4 * kMathWGs);   // a batch's queries by all of them
    }
    __syncthreads();
    ptx::grid_dependency_wait();

    if (warp == 4 * kMathWGs) {
        // Producer warp: every lane walks the units (the same data, so the same path); the block indices of up
        // to 32 blocks of a batch are loaded at once, one per lane, and lane 0 issues the barriers and TMA loads
        // (one copy of rows and one of scales per block: kBlocksPerTile of each fill one ring slot).
        PipelineState<kStages> ks;
        PipelineState<2> qs;
        int prev_b = -1, chunk_first = 0, chunk_block = 0;
        for_each_unit<kNextN, kLens2d, kBlockKv>(a, [&](int b, int page) {
            const bool new_batch = b != prev_b;
            if (new_batch) {
                if (prev_b >= 0) qs.advance();
                prev_b = b;
                if (lane == 0) {
                    q_bars.producer_acquire(qs);
                    q_bars.producer_commit(qs, L::kQTileBytes);
                    ptx::tma_load_2d(q_smem + qs.stage * L::kQTileBytes, tmap_q, &q_bars.full[qs.stage], 0, b * (int)kN);
                }
            }
            if (new_batch or page - chunk_first >= kTilesPerChunk) {
                chunk_first = page;
                // Entries past the batch's blocks (or the table: block 0) are read but their rows are not used.
                const int p = page * (int)kBlocksPerTile + (int)lane;
                const int raw = p < a.table_width ? __ldg(a.block_table + (long long)b * a.table_stride + p) : 0;
                chunk_block = min(max(raw, 0), a.num_pages - 1);
            }
            int blocks[kBlocksPerTile];
#pragma unroll
            for (u32 i = 0; i < kBlocksPerTile; ++i)
                blocks[i] = __shfl_sync(0xffffffffu, chunk_block, (page - chunk_first) * (int)kBlocksPerTile + (int)i);
            if (lane == 0) {
                kv_bars.producer_acquire(ks);
                kv_bars.producer_commit(ks, L::kKvTileBytes + L::kScaleBytes);
#pragma unroll
                for (u32 i = 0; i < kBlocksPerTile; ++i) {
                    // Block i fills rows [i * kBlockKv, (i + 1) * kBlockKv) of the tile (a 1024-byte multiple: the
                    // 128-byte swizzle of the half is that of the same rows in a 64-row box).
                    ptx::tma_load_3d(kv_smem + ks.stage * L::kKvTileBytes + i * kBlockKv * kHeadDim, tmap_kv,
                                     &kv_bars.full[ks.stage], 0, 0, blocks[i]);
                    ptx::tma_load_2d(const_cast<float*>(sf_smem) + ks.stage * kPageRows + i * kBlockKv, tmap_sf,
                                     &kv_bars.full[ks.stage], 0, blocks[i]);
                }
            }
            __syncwarp();
            ks.advance();
        });
    } else {
        // Math warpgroups: the shared MQA tile (mqa_logits_tile.cuh) does the QGMMAs and relu * w over the heads.
        // Every warpgroup walks all units (ring stages and q slots advance in step) and computes its own; each waits
        // for and releases every batch's q slot, so a slot's release count is the same whoever computed its units.
        const u32 wg = warp / 4;
        u32 unit = 0;
        PipelineState<kStages> ks;
        PipelineState<2> qs;
        int prev_b = -1, my_len = 0;
        float w[Tile::kNumWeights];
        float acc[Tile::kNumAccum];
        OutT* logits = static_cast<OutT*>(a.logits);
        // After Tile::reduce this lane holds pseudo-query lane % 4, i.e. part (lane % 4) % kSpan of query my_t.
        const u32 my_t = (lane % 4) / kSpan;
        const bool writer = lane % kSpan == 0;
        const u32 row0 = Tile::row_of(0, warp % 4, lane);
        for_each_unit<kNextN, kLens2d, kBlockKv>(a, [&](int b, int page) {
            if (b != prev_b) {
                if (prev_b >= 0) {
                    q_bars.consumer_release_warp(qs, lane);
                    qs.advance();
                }
                prev_b = b;
                my_len = row_len<kNextN, kLens2d, kBlockKv>(a, b, my_t);
                // Batch b's weights are the 4 pseudo-rows 4b .. 4b + 3 of kN / 4 floats (weights contiguous).
                Tile::load_weights(w, a.weights, kN / 4, 4u * (u32)b, 4u, lane);
                q_bars.consumer_wait(qs);
            }
            if (unit++ % kMathWGs != wg) {
                ks.advance();
                return;
            }
            kv_bars.consumer_wait(ks);
            const float s0 = sf_smem[ks.stage * kPageRows + row0], s1 = sf_smem[ks.stage * kPageRows + row0 + 8];
            ptx::wgmma_fence();
            Tile::mma(kv_smem + ks.stage * L::kKvTileBytes, q_smem + qs.stage * L::kQTileBytes, acc);
            ptx::wgmma_wait_group<0>();
#pragma unroll
            for (u32 i = 0; i < Tile::kNumAccum; ++i) ptx::fence_operand(acc[i]);
            kv_bars.consumer_release_warp(ks, lane);
            ks.advance();

            float out[2][Tile::kQueriesPerLane];
            Tile::reduce(acc, w, out, lane);
#pragma unroll
            for (u32 r = 0; r < 2; ++r) {
#pragma unroll
                for (u32 m = 1; m < kSpan; m <<= 1) out[r][0] += __shfl_xor_sync(0xffffffffu, out[r][0], m);
            }
            if (writer) {
                const int p0 = page * (int)kPageRows + (int)row0;
                OutT* row = logits + (long long)(b * (int)kNextN + (int)my_t) * a.logits_stride;
                if (p0 < my_len) row[p0] = mqa::to_logit<OutT>(out[0][0] * s0);
                if (p0 + 8 < my_len) row[p0 + 8] = mqa::to_logit<OutT>(out[1][0] * s1);
            }
        });
    }

    if constexpr (kClean) {
        // -inf at [len, max_context_len) of rows blockIdx.x, blockIdx.x + gridDim.x, ...
        const OutT neg_inf = mqa::to_logit<OutT>(-__int_as_float(0x7f800000));
        OutT* logits = static_cast<OutT*>(a.logits);
        const int rows = a.batch * (int)kNextN;
        for (int row = blockIdx.x; row < rows; row += gridDim.x) {
            const int b = row / (int)kNextN;
            const int begin = row_len<kNextN, kLens2d, kBlockKv>(a, b, (u32)(row % (int)kNextN));
            OutT* out = logits + (long long)row * a.logits_stride;
            for (int p = begin + (int)thread; p < a.max_context_len; p += (int)kThreads) out[p] = neg_inf;
        }
    }
    ptx::grid_dependency_launch_dependents();
}

}  // namespace deep_gemm::paged_mqa
