// Per-tile math of the MQA-logits kernels (dense: sm90_fp8_mqa_logits.cuh; the paged variant builds on
// the same pieces):
//
//   logits[i, j] = sum_h w[i, h] * relu(q[i, h, :] . kv[j, :]) * s[j]
//
// One tile is 64 kv rows (the wgmma M side, operand A) against the (query, head) rows of kQueries queries
// (the N side, operand B: N = kQueries * kNumHeads <= 256 rows of the [S * H, D] view of q). Both operands
// are K-major FP8 tiles written by TMA with a swizzle of D bytes (D = 32, 64 or 128: one swizzle row per
// tile row), so each k32 step of the FP8 QGMMA m64nNk32 advances the descriptors by 32 bytes.
//
// Accumulator of one warpgroup (PTX ISA wgmma "Register Fragments", D of m64nNk32):
//   acc[4j + 2r + e] = row 16 * warp + lane / 4 + 8 r,  column n = 8 j + 2 (lane % 4) + e     (r, e in {0, 1})
// Column n is query n / H, head n % H. A thread therefore holds, per row, kNumHeads / 4 heads of every
// query; relu * w and the sum over those heads run on its own registers, and the remaining sum over the 4
// lanes of a quad is a reduce-scatter with two shuffles (xor 2, xor 1): each lane ends with the full sum of
// kQueries / 4 queries (which ones: query_of), no shared memory involved.
//
// Interface used by the kernels (kept stable; a change is named in the commit that makes it):
//   MqaTile<kNumHeads, kHeadDim, kQueries>
//     kN, kNumAccum, kKvRows, kKvTileBytes, kQTileBytes, kSwizzleBytes, kQueriesPerLane, kNumWeights
//     mma(kv_tile_smem, q_tile_smem, acc)        issue D/32 wgmmas + commit (caller waits: wgmma_wait_group)
//     load_weights(w, weights, ld_w, first_query, num_queries, lane)
//     reduce(acc, w, out, lane)                  out[r][k]: row 8r + row_of(...), query query_of(k, lane)
//     query_of(k, lane), row_of(r, warp, lane)
#pragma once

#include <cuda_bf16.h>

#include "../common/types.cuh"
#include "../ptx/wgmma_atoms.cuh"
#include "../ptx/wgmma_helpers.cuh"

namespace deep_gemm::mqa {

// Output element conversion (FP32 or BF16 logits).
template <typename OutT>
__device__ __forceinline__ OutT to_logit(float v);

template <>
__device__ __forceinline__ float to_logit<float>(float v) {
    return v;
}

template <>
__device__ __forceinline__ __nv_bfloat16 to_logit<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

template <u32 kNumHeads, u32 kHeadDim, u32 kQueries>
struct MqaTile {
    static constexpr u32 kN = kQueries * kNumHeads;
    static constexpr u32 kNumAccum = kN / 2;
    static constexpr u32 kKvRows = 64;
    static constexpr u32 kSwizzleBytes = kHeadDim;  // FP8: one row of D bytes is one swizzle row
    static constexpr u32 kKvTileBytes = kKvRows * kHeadDim;
    static constexpr u32 kQTileBytes = kN * kHeadDim;
    static constexpr u32 kQueriesPerLane = kQueries / 4;
    static constexpr u32 kHeadsPerLane = kNumHeads / 4;  // per row and query
    static constexpr u32 kNumWeights = kQueries * kHeadsPerLane;

    static_assert(kNumHeads % 8 == 0 && kNumHeads >= 8, "heads: a multiple of 8 (one 8-column wgmma group per query)");
    static_assert(kQueries % 4 == 0, "queries per tile: a multiple of 4 (one per lane of a quad)");
    static_assert(kN % 8 == 0 && kN <= 256, "N = queries x heads must be a multiple of 8 in [8, 256]");
    static_assert(kHeadDim == 32 || kHeadDim == 64 || kHeadDim == 128, "head dim: 32, 64 or 128");

    using Wgmma = ptx::WgmmaFp8<kN>;

    // Descriptor swizzle mode of a D-byte swizzle: 1 = 128 B, 2 = 64 B, 3 = 32 B. SBO = 8 rows.
    __device__ __forceinline__ static u64 desc(u32 smem_address) {
        constexpr u32 kMode = kHeadDim == 128 ? 1u : kHeadDim == 64 ? 2u : 3u;
        return ptx::make_smem_desc(smem_address, 16u, 8u * kHeadDim, kMode);
    }

    // acc = kv_tile[64 x D] . q_tile[kN x D]^T: D/32 wgmmas, committed as one group; both tiles 1024-byte
    // aligned. The caller fences before (wgmma_fence) and waits after (wgmma_wait_group).
    __device__ __forceinline__ static void mma(const void* kv_tile, const void* q_tile, float (&acc)[kNumAccum]) {
        const u32 a = smem_addr(kv_tile), b = smem_addr(q_tile);
#pragma unroll
        for (u32 k = 0; k < kHeadDim / 32; ++k) Wgmma::mma(desc(a + 32 * k), desc(b + 32 * k), acc, k > 0);
        ptx::wgmma_commit_group();
    }

    // This lane's weights: w[q * kHeadsPerLane + 2 t + e] = weights[first_query + q, 8 t + 2 (lane % 4) + e]
    // for t < kNumHeads / 8 (zero for queries at or past num_queries).
    __device__ __forceinline__ static void load_weights(float (&w)[kNumWeights], const float* weights, u64 ld_w,
                                                        u32 first_query, u32 num_queries, u32 lane) {
#pragma unroll
        for (u32 q = 0; q < kQueries; ++q) {
            const bool valid = q < num_queries;
            const float* row = weights + (u64)(first_query + (valid ? q : 0)) * ld_w + 2 * (lane % 4);
#pragma unroll
            for (u32 t = 0; t < kNumHeads / 8; ++t) {
#pragma unroll
                for (u32 e = 0; e < 2; ++e) w[q * kHeadsPerLane + 2 * t + e] = valid ? __ldg(row + 8 * t + e) : 0.0f;
            }
        }
    }

    // Which block query out[.][k] of `lane` holds after reduce().
    __device__ __forceinline__ static u32 query_of(u32 k, u32 lane) {
        return k + (lane & 1) * (kQueries / 4) + ((lane >> 1) & 1) * (kQueries / 2);
    }

    // Tile row (0..63) of out[r][.] for thread `lane` of warp `warp` (0..3) of the warpgroup.
    __device__ __forceinline__ static u32 row_of(u32 r, u32 warp, u32 lane) { return 16 * warp + lane / 4 + 8 * r; }

    // out[r][k] = sum_h w[query_of(k), h] * relu(acc[row_of(r), query_of(k), h]) (no kv scale).
    __device__ __forceinline__ static void reduce(const float (&acc)[kNumAccum], const float (&w)[kNumWeights],
                                                  float (&out)[2][kQueriesPerLane], u32 lane) {
        const bool hi2 = (lane >> 1) & 1, hi1 = lane & 1;
#pragma unroll
        for (u32 r = 0; r < 2; ++r) {
            // Own heads of every query.
            float part[kQueries];
#pragma unroll
            for (u32 q = 0; q < kQueries; ++q) {
                float s = 0.0f;
#pragma unroll
                for (u32 t = 0; t < kNumHeads / 8; ++t) {
                    const u32 j = q * (kNumHeads / 8) + t;
#pragma unroll
                    for (u32 e = 0; e < 2; ++e)
                        s = fmaf(fmaxf(acc[4 * j + 2 * r + e], 0.0f), w[q * kHeadsPerLane + 2 * t + e], s);
                }
                part[q] = s;
            }
            // Reduce-scatter over the quad: lanes differing in bit 1 split the queries in halves, then bit 0.
            float half[kQueries / 2];
#pragma unroll
            for (u32 p = 0; p < kQueries / 2; ++p) {
                const float keep = hi2 ? part[p + kQueries / 2] : part[p];
                const float give = hi2 ? part[p] : part[p + kQueries / 2];
                half[p] = keep + __shfl_xor_sync(0xffffffffu, give, 2);
            }
#pragma unroll
            for (u32 p = 0; p < kQueries / 4; ++p) {
                const float keep = hi1 ? half[p + kQueries / 4] : half[p];
                const float give = hi1 ? half[p] : half[p + kQueries / 4];
                out[r][p] = keep + __shfl_xor_sync(0xffffffffu, give, 1);
            }
        }
    }
};

}  // namespace deep_gemm::mqa
