// SM90 FP8 MQA logits (the sparse-attention indexer's scores), one fused kernel:
//
//   logits[i, j] = sum_h w[i, h] * relu(q[i, h, :] . kv[j, :]) * s[j]     for ks[i] <= j < ke[i]
//
// q: FP8 [S, H, D] (read as the [S * H, D] matrix), kv: FP8 [S_kv, D] with FP32 scales s [S_kv], w: FP32
// [S, H], ks / ke: int32 [S], clamped here to [0, S_kv] (they are device data: no value can make the kernel
// read or write outside its tensors). Dense logits: row i, column j. Compressed (kCompressed): column
// c = j - ks[i] for c < min(ke[i] - ks[i], num_cols). With kClean every other column of the row (of the
// num_cols columns) is -inf; without it those are not written. No [S, H, S_kv] intermediate exists: the
// head reduction happens in registers (mqa_logits_tile.cuh).
//
// One CTA per kQueries consecutive queries (the last queries in the first CTAs). Its kv range is the
// union of their [ks, ke) ranges (start rounded down to 8 rows), walked in 64-row tiles, so causal /
// context-parallel ranges cost only what they cover. Warpgroup 0 is the producer (one thread: the q tile once, then the kv tiles through a kNumStages
// ring, TMA with a D-byte swizzle); math warpgroups 1 and 2 take tiles alternately (tile t goes to
// warpgroup t % 2), so one warpgroup's QGMMAs overlap the other's relu / reduction / stores. After the
// tiles the math threads write the -inf of kClean (columns no tile writes), row by row, coalesced.
//
// Shared memory (dynamic, 1024-byte aligned): [q tile kN x D][kv slots kNumStages x 64 x D][barriers].
#pragma once

#include <cuda_bf16.h>

#include "../common/pipeline.cuh"
#include "../common/sm90_warp_roles.cuh"
#include "../common/types.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_helpers.cuh"
#include "mqa_logits_tile.cuh"
#include "sm90_fp8_mqa_logits_params.hpp"  // the generated entry point's parameters

namespace deep_gemm::mqa {

template <u32 kNumHeads, u32 kHeadDim, u32 kQueries, u32 kNumStages>
struct Sm90MqaLogitsLayout {
    using Tile = MqaTile<kNumHeads, kHeadDim, kQueries>;
    static constexpr u32 kNumMathWarpgroups = 2;
    static constexpr u32 kNumThreads = 128 * (1 + kNumMathWarpgroups);
    static constexpr u32 kOffQ = 0;
    static constexpr u32 kOffKv = align_up<u32>(Tile::kQTileBytes, 1024);
    static constexpr u32 kOffBarriers = kOffKv + kNumStages * align_up<u32>(Tile::kKvTileBytes, 1024);
    static constexpr u32 kSmemBytes = kOffBarriers + (1 + 2 * kNumStages) * 8;
    static constexpr u32 kKvSlotBytes = align_up<u32>(Tile::kKvTileBytes, 1024);
};

// [b, e) of query i: ks / ke clamped to [0, S_kv] (e >= b), e also capped at b + num_cols when compressed.
template <bool kCompressed>
__device__ __forceinline__ void query_range(const int* ks, const int* ke, u32 i, u32 seq_len_kv, u32 num_cols,
                                            u32& b, u32& e) {
    const int lim = static_cast<int>(seq_len_kv);
    const int kb = __ldg(ks + i), kend = __ldg(ke + i);
    b = static_cast<u32>(kb < 0 ? 0 : kb > lim ? lim : kb);
    e = static_cast<u32>(kend < 0 ? 0 : kend > lim ? lim : kend);
    if (e < b) e = b;
    if constexpr (kCompressed) e = e - b > num_cols ? b + num_cols : e;
}

template <u32 kNumHeads, u32 kHeadDim, u32 kQueries, u32 kNumStages, typename OutT, bool kCompressed, bool kClean>
__device__ __forceinline__ void sm90_fp8_mqa_logits_impl(const TmaDescriptor& tmap_q, const TmaDescriptor& tmap_kv,
                                                         const float* __restrict__ kv_scale,
                                                         const float* __restrict__ weights, u64 ld_w,
                                                         const int* __restrict__ ks, const int* __restrict__ ke,
                                                         OutT* __restrict__ logits, u64 ld_logits, u32 seq_len,
                                                         u32 seq_len_kv, u32 num_cols) {
    using Layout = Sm90MqaLogitsLayout<kNumHeads, kHeadDim, kQueries, kNumStages>;
    using Tile = typename Layout::Tile;
    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_q = smem + Layout::kOffQ;
    u8* smem_kv = smem + Layout::kOffKv;
    u64* q_full = reinterpret_cast<u64*>(smem + Layout::kOffBarriers);
    const PipelineBarriers<kNumStages> bars{q_full + 1, q_full + 1 + kNumStages};

    const u32 warpgroup = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        ptx::tma_prefetch_descriptor(tmap_q);
        ptx::tma_prefetch_descriptor(tmap_kv);
        ptx::mbarrier_init(q_full, 1);
        bars.init(4);  // one arrival per warp of the warpgroup that consumed the slot
    }
    __syncthreads();
    ptx::grid_dependency_wait();  // ks / ke / inputs may come from the previous kernel (PDL)

    // The CTA's kv range: the union of its queries' ranges (every thread computes it; a few cached loads).
    // Last queries first: in causal and context-parallel layouts later queries have longer ranges, and
    // starting the longest CTAs first shortens the tail of the last wave.
    const u32 first_query = (gridDim.x - 1 - blockIdx.x) * kQueries;
    const u32 num_queries = min_of<u32>(kQueries, seq_len - first_query);
    u32 lo = seq_len_kv, hi = 0;
#pragma unroll
    for (u32 q = 0; q < kQueries; ++q) {
        if (q < num_queries) {
            u32 b, e;
            query_range<kCompressed>(ks, ke, first_query + q, seq_len_kv, num_cols, b, e);
            if (b < e) {
                lo = min_of(lo, b);
                hi = hi > e ? hi : e;
            }
        }
    }
    const u32 base = lo & ~7u;
    const u32 num_tiles = hi > lo ? ceil_div<u32>(hi - base, Tile::kKvRows) : 0;

    if (warpgroup == 0) {
        ptx::setmaxnreg_dec<kSm90ProducerRegs>();
        if (threadIdx.x == 0 && num_tiles > 0) {
            ptx::mbarrier_arrive_expect_tx(q_full, Tile::kQTileBytes);
            ptx::tma_load_2d(smem_q, tmap_q, q_full, 0, static_cast<i32>(first_query * kNumHeads));
            PipelineState<kNumStages> st;
            for (u32 t = 0; t < num_tiles; ++t) {
                bars.producer_acquire(st);
                bars.producer_commit(st, Tile::kKvTileBytes);
                ptx::tma_load_2d(smem_kv + st.stage * Layout::kKvSlotBytes, tmap_kv, &bars.full[st.stage], 0,
                                 static_cast<i32>(base + t * Tile::kKvRows));
                st.advance();
            }
        }
        return;
    }

    ptx::setmaxnreg_inc<kSm90MathRegs>();
    const u32 math_wg = warpgroup - 1;

    float w[Tile::kNumWeights];
    Tile::load_weights(w, weights, ld_w, first_query, num_queries, lane);
    // Ranges of the queries this lane stores (empty for queries past S).
    u32 qb[Tile::kQueriesPerLane], qe[Tile::kQueriesPerLane];
#pragma unroll
    for (u32 k = 0; k < Tile::kQueriesPerLane; ++k) {
        const u32 q = Tile::query_of(k, lane);
        qb[k] = qe[k] = 0;
        if (q < num_queries) query_range<kCompressed>(ks, ke, first_query + q, seq_len_kv, num_cols, qb[k], qe[k]);
    }

    if (num_tiles > 0) ptx::mbarrier_wait(q_full, 0);
    float acc[Tile::kNumAccum];
    for (u32 t = math_wg; t < num_tiles; t += Layout::kNumMathWarpgroups) {
        const u32 stage = t % kNumStages, phase = (t / kNumStages) & 1;
        const u32 row0 = base + t * Tile::kKvRows + Tile::row_of(0, warp, lane), row1 = row0 + 8;
        const float s0 = row0 < seq_len_kv ? __ldg(kv_scale + row0) : 0.0f;
        const float s1 = row1 < seq_len_kv ? __ldg(kv_scale + row1) : 0.0f;

        ptx::mbarrier_wait(&bars.full[stage], phase);
#pragma unroll
        for (u32 i = 0; i < Tile::kNumAccum; ++i) ptx::fence_operand(acc[i]);
        ptx::wgmma_fence();
        Tile::mma(smem_kv + stage * Layout::kKvSlotBytes, smem_q, acc);
        ptx::wgmma_wait_group<0>();
#pragma unroll
        for (u32 i = 0; i < Tile::kNumAccum; ++i) ptx::fence_operand(acc[i]);
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&bars.empty[stage]);

        float out[2][Tile::kQueriesPerLane];
        Tile::reduce(acc, w, out, lane);
#pragma unroll
        for (u32 r = 0; r < 2; ++r) {
            const u32 j = r == 0 ? row0 : row1;
            const float s = r == 0 ? s0 : s1;
#pragma unroll
            for (u32 k = 0; k < Tile::kQueriesPerLane; ++k) {
                if (j >= qb[k] && j < qe[k]) {
                    const u64 row = first_query + Tile::query_of(k, lane);
                    const u32 col = kCompressed ? j - qb[k] : j;
                    logits[row * ld_logits + col] = to_logit<OutT>(out[r][k] * s);
                }
            }
        }
    }

    if constexpr (kClean) {
        // -inf in every column no tile writes: [0, b) and [e, S_kv) (dense) or [e - b, num_cols) (compressed).
        const u32 tid = threadIdx.x - 128;
        constexpr u32 kStride = 128 * Layout::kNumMathWarpgroups;
        const OutT neg_inf = to_logit<OutT>(-__int_as_float(0x7f800000));
        for (u32 q = 0; q < num_queries; ++q) {
            u32 b, e;
            query_range<kCompressed>(ks, ke, first_query + q, seq_len_kv, num_cols, b, e);
            OutT* row = logits + (u64)(first_query + q) * ld_logits;
            if constexpr (kCompressed) {
                for (u32 c = e - b + tid; c < num_cols; c += kStride) row[c] = neg_inf;
            } else {
                for (u32 c = tid; c < b; c += kStride) row[c] = neg_inf;
                for (u32 c = e + tid; c < seq_len_kv; c += kStride) row[c] = neg_inf;
            }
        }
    }
}

}  // namespace deep_gemm::mqa
