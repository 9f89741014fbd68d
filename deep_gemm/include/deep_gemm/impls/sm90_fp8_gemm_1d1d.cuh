// SM90 FP8 block-scaled GEMM, "1D1D" recipe (1, 1, 128), FP32 output (the weight-gradient GEMM):
//     D[M, N] = C[M, N] + sum_kb (A[:, kb] @ B[:, kb]^T) * sfa[m, kb] * sfb[n, kb]
// A [M, K] and B [N, K] e4m3 K-major; both carry one scale per row per 128-K block, stored MN-major:
// sfa element (m, kb) at sfa[kb * sfa_stride + m], sfb element (n, kb) at sfb[kb * sfb_stride + n].
// C (optional, FP32) may be D itself.
//
// Same structure as the 1D2D kernel (sm90_fp8_gemm_1d2d.cuh): persistent, warp-specialised, warpgroup 0
// produces (one thread issues the TMA loads of a K block: A tile, B tile, the tile's BLOCK_M A scales and
// BLOCK_N B scales, all into one pipeline slot) and BLOCK_M/64 math warpgroups consume. Per 128-K block a
// math warpgroup issues four m64nNk32 wgmmas into a scratch FP32 accumulator, reads its rows' A scales and
// its columns' B scales from the slot while they run, waits, releases the slot and promotes:
// fin += acc * sfa[row] * sfb[column]. The epilogue stores FP32 straight from registers, adding C
// (AccumDirectStoreEpilogue), so there is no D staging buffer. kPipelined (forced by DG_FP8_1D1D_GEMM_CONFIG):
// two scratch accumulators, K block kb + 1's wgmmas issued before K block kb is promoted, so the tensor core has
// queued work while the warpgroup does the FP32 math (the 1D2D kernel's pipelined promotion).
//
// kMulticast 2 (forced by DG_FP8_1D1D_GEMM_CONFIG): 2-CTA clusters take M blocks 2p and 2p + 1 of one N block
// (ClusterPairScheduler, or KGroupedScheduler's pairs within a group), so they read the same B tile: each CTA
// loads half of its rows into both CTAs' slot (TMA multicast), and a slot is free once both CTAs' consumers
// released it. kPrefetchC (forced; with C): C's tile is pulled into L2 a few K blocks before the epilogue reads it.
//
// K-grouped (the weight gradients of MoE experts): all groups in one persistent launch (KGroupedScheduler), each
// group with its own A / B tensor maps from the kernel parameters (Sm90Fp8KGroupedMaps), so the last partial wave
// of one group's tiles overlaps the next group's.
//
// Shared memory (dynamic, 1024-byte aligned; the host computes the same size in
// csrc/jit_kernels/heuristics/sm90_fp8_1d1d.hpp):
//   [A slots S*BLOCK_M*128][B slots S*BLOCK_N*128][sfa slots S*BLOCK_M*4][sfb slots S*align(BLOCK_N*4, 128)]
//   [full barriers S*8][empty barriers S*8]
#pragma once

#include "../common/pipeline.cuh"
#include "../common/sm90_gemm_prologue.cuh"
#include "../common/sm90_warp_roles.cuh"
#include "../common/types.cuh"
#include "../epilogue/accum_direct_store.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_atoms.cuh"
#include "../ptx/wgmma_helpers.cuh"
#include "../scheduler/gemm_scheduler.cuh"
#include "../scheduler/grouped_scheduler.cuh"
#include "sm90_fp8_gemm_1d1d_params.hpp"  // the generated entry point's parameters

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kNumStages>
struct Sm90Fp8Gemm1d1dLayout {
    static constexpr u32 kBlockK = 128;
    static constexpr u32 kNumMathWarpgroups = kBlockM / 64;
    static constexpr u32 kNumMathThreads = 128 * kNumMathWarpgroups;
    static constexpr u32 kNumThreads = 128 + kNumMathThreads;

    static constexpr u32 kSmemA = kBlockM * kBlockK;
    static constexpr u32 kSmemB = kBlockN * kBlockK;
    static constexpr u32 kSmemSfa = kBlockM * 4;
    // TMA writes BLOCK_N * 4 bytes; the slot is padded so that the next one stays 128-byte aligned.
    static constexpr u32 kSmemSfb = (kBlockN * 4 + 127) / 128 * 128;
    static constexpr u32 kOffA = 0;
    static constexpr u32 kOffB = kOffA + kNumStages * kSmemA;
    static constexpr u32 kOffSfa = kOffB + kNumStages * kSmemB;
    static constexpr u32 kOffSfb = kOffSfa + kNumStages * kSmemSfa;
    static constexpr u32 kOffBarriers = kOffSfb + kNumStages * kSmemSfb;
    static constexpr u32 kSmemBytes = kOffBarriers + kNumStages * 2 * 8;
    // Bytes TMA delivers per slot (out-of-bounds parts are zero-filled and still counted).
    static constexpr u32 kTxBytes = kSmemA + kSmemB + kBlockM * 4 + kBlockN * 4;

    static_assert(kBlockM == 64 || kBlockM == 128, "BLOCK_M must be 64 or 128");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "BLOCK_N: multiple of 16 in [16, 256]");
    static_assert(kSmemA % 1024 == 0 && kSmemB % 1024 == 0, "128B-swizzled tiles must stay 1024-byte aligned");
    static_assert(kSmemSfa % 128 == 0 && kOffSfb % 128 == 0, "TMA destinations are 128-byte aligned");
};

// The tile order: dense, or K-grouped with the K of each group read from the kernel parameters; one CTA per
// tile, or 2-CTA clusters on pairs of M blocks (kMulticast 2).
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, bool kKGrouped, u32 kMulticast>
struct Sm90Fp8Gemm1d1dScheduler {
    using Type = GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>;
};
template <u32 kBlockM, u32 kBlockN, u32 kGroupN>
struct Sm90Fp8Gemm1d1dScheduler<kBlockM, kBlockN, kGroupN, false, 2> {
    using Type = ClusterPairScheduler<kBlockM, kBlockN, kGroupN>;
};
template <u32 kBlockM, u32 kBlockN, u32 kGroupN, u32 kMulticast>
struct Sm90Fp8Gemm1d1dScheduler<kBlockM, kBlockN, kGroupN, true, kMulticast> {
    using Type = KGroupedScheduler<kBlockM, kBlockN, kGroupN, true, kMulticast>;
};

// The kernel body of both entry points below. Dense: one A and one B tensor map, the whole K per tile. K-grouped
// (kKGrouped): the tiles of every group of this launch (KGroupedScheduler over ks, which points into the kernel
// parameters), each group with its own A / B maps (maps_a[g], maps_b[g]: the groups' rows have different
// strides), its own K, and its K blocks' scales from scale block scale_k_block0 + (the group's K offset) / 128 of
// sfa / sfb; D (and C) rows of group g start at g * m. A group with K == 0 stores C or zeros. kSfKAlign != 0 (the
// compact or padded scale layouts where they differ from that: a group K that is not a multiple of 128, or a
// padding alignment above 128): the group's scales start after the k_grouped_scale_blocks(K_h, kSfKAlign) of the
// launch's earlier groups, and a partial last K block reads zeros past K_g (the group's maps end there).
template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, bool kWithC, bool kKGrouped, bool kPipelined,
          u32 kMulticast, bool kPrefetchC, u32 kSfKAlign = 0>
__device__ __forceinline__ void sm90_fp8_gemm_1d1d_body(const TmaDescriptor* maps_a, const TmaDescriptor* maps_b,
                                                        const TmaDescriptor& tmap_sfa, const TmaDescriptor& tmap_sfb,
                                                        float* d, const float* c, u32 ldd, u32 ldc, u32 m, u32 n,
                                                        u32 k, const i32* ks, u32 num_groups, u32 scale_k_block0) {
    using Layout = Sm90Fp8Gemm1d1dLayout<kBlockM, kBlockN, kNumStages>;
    using Wgmma = ptx::WgmmaFp8<kBlockN>;
    using Scheduler = typename Sm90Fp8Gemm1d1dScheduler<kBlockM, kBlockN, kGroupN, kKGrouped, kMulticast>::Type;
    static_assert(kMulticast == 1 || kMulticast == 2, "multicast: 1 (off) or 2 (B shared by a 2-CTA cluster)");
    constexpr u32 kHalfRowsB = kBlockN / 2;  // each CTA's share of a multicast B tile (1024-byte aligned)
    static_assert(kMulticast == 1 || kHalfRowsB % 8 == 0, "multicast halves must stay 1024-byte aligned");
    using Epilogue = AccumDirectStoreEpilogue<kBlockM, kBlockN, true, kWithC>;
    constexpr u32 kBlockK = Layout::kBlockK;
    constexpr u32 kNumAccum = kBlockN / 2;
    const u32 num_k_blocks = ceil_div(k, kBlockK);  // dense: every tile's
    // A tile's K blocks and the K block of its first scale column.
    const auto tile_k_blocks = [&](const Scheduler& s) { return kKGrouped ? ceil_div(s.k_size(k), kBlockK) : num_k_blocks; };
    const auto tile_scale_k_block0 = [&](const auto& s) -> u32 {
        if constexpr (kSfKAlign == 0) {
            return scale_k_block0 + s.k_offset() / kBlockK;
        } else {
            static_assert(kKGrouped, "per-group scale blocks are a K-grouped layout");
            u32 block0 = scale_k_block0;  // ks: the launch's K values, in the kernel parameters (at most 32)
            for (u32 g = 0; g < s.group_index(); ++g)
                block0 += static_cast<u32>(k_grouped_scale_blocks(ks[g] > 0 ? static_cast<u32>(ks[g]) : 0u, kSfKAlign));
            return block0;
        }
    };

    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_a = smem + Layout::kOffA;
    u8* smem_b = smem + Layout::kOffB;
    float* smem_sfa = reinterpret_cast<float*>(smem + Layout::kOffSfa);
    u8* smem_sfb = smem + Layout::kOffSfb;
    auto pipe = PipelineBarriers<kNumStages>::at(smem + Layout::kOffBarriers);

    const u32 warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const u32 thread_in_wg = threadIdx.x % 128;
    const u32 cta_rank = kMulticast > 1 ? ptx::cluster_cta_rank() : 0u;

    if (threadIdx.x == 0) {
        if constexpr (!kKGrouped) {  // (a K-grouped launch has a map pair per group: left to the first loads)
            ptx::tma_prefetch_descriptor(maps_a[0]);
            ptx::tma_prefetch_descriptor(maps_b[0]);
        }
        ptx::tma_prefetch_descriptor(tmap_sfa);
        ptx::tma_prefetch_descriptor(tmap_sfb);
        pipe.init(kMulticast * (Layout::kNumMathThreads / 32));  // one arrival per math warp (of both CTAs)
    }
    // The barriers of both CTAs are initialised before either producer starts; then PDL's wait.
    sm90_gemm_wait_setup<kMulticast>();

    if (warpgroup == 0) {
        // ---------------- producer ----------------
        sm90_gemm_producer<Scheduler, kNumStages, kBlockN, Layout::kNumMathWarpgroups>(
            m, n, ks, num_groups, [&](const Scheduler& s, PipelineState<kNumStages>& st, i32 m0, i32 n0, i32, i32) {
                u32 group = 0;
                if constexpr (kKGrouped) group = s.group_index();
                const TmaDescriptor& tmap_a = maps_a[group];
                const TmaDescriptor& tmap_b = maps_b[group];
                const u32 kbs = tile_k_blocks(s);
                const u32 sk0 = tile_scale_k_block0(s);
                for (u32 kb = 0; kb < kbs; ++kb) {
                    pipe.producer_acquire(st);
                    u64* full = &pipe.full[st.stage];
                    ptx::mbarrier_arrive_expect_tx(full, Layout::kTxBytes);
                    const i32 k0 = static_cast<i32>(kb * kBlockK);
                    ptx::tma_load_2d(smem_a + st.stage * Layout::kSmemA, tmap_a, full, k0, m0);
                    if constexpr (kMulticast > 1) {
                        // This CTA's half of B's rows into the same offset of both CTAs' slot (the map's box is
                        // {128, BLOCK_N / 2}).
                        ptx::tma_load_2d_multicast(smem_b + st.stage * Layout::kSmemB + cta_rank * kHalfRowsB * kBlockK,
                                                   tmap_b, full, k0, n0 + static_cast<i32>(cta_rank * kHalfRowsB), 0x3);
                    } else {
                        ptx::tma_load_2d(smem_b + st.stage * Layout::kSmemB, tmap_b, full, k0, n0);
                    }
                    ptx::tma_load_2d(smem_sfa + st.stage * kBlockM, tmap_sfa, full, m0, static_cast<i32>(sk0 + kb));
                    ptx::tma_load_2d(smem_sfb + st.stage * Layout::kSmemSfb, tmap_sfb, full, n0,
                                     static_cast<i32>(sk0 + kb));
                    st.advance();
                }
            });
    } else {
        // ---------------- math ----------------
        if constexpr (Layout::kNumMathWarpgroups > 1) ptx::setmaxnreg_inc<kSm90MathRegs>();
        const u32 math_wg = warpgroup - 1;
        const u32 warp = thread_in_wg / 32, lane = thread_in_wg % 32;
        // This thread's accumulator rows inside the tile: row_lo and row_lo + 8; its columns: 8j + col_in_group
        // and + 1 for j < BLOCK_N / 8 (the wgmma m64nN accumulator layout).
        const u32 row_lo = math_wg * 64 + warp * 16 + lane / 4;
        const u32 col_in_group = (lane % 4) * 2;

        Scheduler scheduler(m, n, ks, num_groups);
        // No staging buffer and no tensor map: the direct-store epilogue ignores both (tmap_sfa fills the slot).
        Epilogue epilogue(nullptr, math_wg, thread_in_wg, tmap_sfa, d, ldd, c, ldc);
        PipelineState<kNumStages> st;

        float acc[kNumAccum];
        float fin[kNumAccum];
        float sb[kBlockN / 4];  // this thread's B scales of the current K block (its BLOCK_N / 4 columns)
#pragma unroll
        for (u32 i = 0; i < kNumAccum; ++i) acc[i] = 0.0f;  // (every K block's first wgmma overwrites it)

        // Second scratch accumulator of the pipelined loop (unused, and optimised away, otherwise).
        float acc2[kPipelined ? kNumAccum : 1];
#pragma unroll
        for (u32 i = 0; i < (kPipelined ? kNumAccum : 1); ++i) acc2[i] = 0.0f;

        // One arrival per math warp on the slot's empty barrier (with multicast on the peer's too: it wrote here).
        auto release = [&](const PipelineState<kNumStages>& s) {
            if constexpr (kMulticast > 1) {
                pipe.consumer_release_pair(s, cta_rank ^ 1u, lane);
            } else {
                pipe.consumer_release_warp(s, lane);
            }
        };
        // kPrefetchC: C's tile is pulled into L2 when the tile's K block kbs - kPrefetchAhead (or its first) is
        // issued: about two microseconds before the epilogue reads it, late enough that the streaming A and B
        // tiles do not evict it first (set by issue(), which counts the tile's K blocks).
        constexpr u32 kPrefetchAhead = 4;
        u32 issued = 0, prefetch_at = 0, tile_row0 = 0, tile_n0 = 0, tile_row_end = 0;
        // Waits for slot `st` and issues its K block's wgmmas into `a` (committed, not waited for).
        auto issue = [&](float(&a)[kNumAccum]) {
            if constexpr (kPrefetchC && kWithC) {
                if (issued++ == prefetch_at) epilogue.prefetch_c(tile_row0, tile_n0, tile_row_end, n);
            }
            pipe.consumer_wait(st);
            ptx::wgmma_fp8_kmajor_k128<Wgmma>(smem_addr(smem_a + st.stage * Layout::kSmemA + math_wg * 64 * kBlockK),
                                               smem_addr(smem_b + st.stage * Layout::kSmemB), a);
        };
        // This thread's scales of slot `s`: its two rows' A scales and its columns' B scales.
        auto read_scales = [&](const PipelineState<kNumStages>& s, float& a_lo, float& a_hi) {
            const float* sfa_slot = smem_sfa + s.stage * kBlockM;
            a_lo = sfa_slot[row_lo];
            a_hi = sfa_slot[row_lo + 8];
            const float* sfb_slot = reinterpret_cast<const float*>(smem_sfb + s.stage * Layout::kSmemSfb);
#pragma unroll
            for (u32 j = 0; j < kBlockN / 8; ++j) {
                const float2 v = *reinterpret_cast<const float2*>(sfb_slot + j * 8 + col_in_group);
                sb[2 * j] = v.x;
                sb[2 * j + 1] = v.y;
            }
        };
        auto promote = [&](float(&a)[kNumAccum], float a_lo, float a_hi) {
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(a[i]);
#pragma unroll
            for (u32 j = 0; j < kBlockN / 8; ++j) {
                fin[4 * j + 0] += a[4 * j + 0] * (a_lo * sb[2 * j]);
                fin[4 * j + 1] += a[4 * j + 1] * (a_lo * sb[2 * j + 1]);
                fin[4 * j + 2] += a[4 * j + 2] * (a_hi * sb[2 * j]);
                fin[4 * j + 3] += a[4 * j + 3] * (a_hi * sb[2 * j + 1]);
            }
        };
        // Pipelined loop: the oldest issued K block (slot `rel`, accumulator `a`) has completed: its scales are
        // read, its slot released, and it is promoted.
        auto retire = [&](PipelineState<kNumStages>& rel, float(&a)[kNumAccum]) {
            float a_lo, a_hi;
            read_scales(rel, a_lo, a_hi);
            release(rel);
            rel.advance();
            promote(a, a_lo, a_hi);
        };

        u32 m_block, n_block;
        while (scheduler.next(m_block, n_block)) {
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) fin[i] = 0.0f;

            const u32 kbs = tile_k_blocks(scheduler);
            if constexpr (kPrefetchC && kWithC) {
                issued = 0, prefetch_at = kbs > kPrefetchAhead ? kbs - kPrefetchAhead : 0;
                tile_row0 = kKGrouped ? scheduler.d_row0() : m_block * kBlockM;
                tile_n0 = n_block * kBlockN;
                tile_row_end = kKGrouped ? scheduler.d_row_end() : m;
            }
            if constexpr (kPipelined) {
                // As in the 1D2D kernel's pipelined loop, the set of in-flight accumulators is the same on every
                // path (ptxas serialises all wgmmas when it cannot prove an accumulator idle before it is read).
                if (kbs > 0) {
                    PipelineState<kNumStages> rel = st;  // the next slot to retire (all are at a tile's start)
                    issue(acc);
                    st.advance();
                    u32 kb = 0;
                    for (; kb + 2 < kbs; kb += 2) {
                        // Here: K block kb in flight in acc; acc2 idle.
                        issue(acc2);
                        st.advance();
                        ptx::wgmma_wait_group<1>();
                        retire(rel, acc);
                        issue(acc);
                        st.advance();
                        ptx::wgmma_wait_group<1>();
                        retire(rel, acc2);
                    }
                    if (kb + 1 < kbs) {
                        issue(acc2);
                        st.advance();
                        ptx::wgmma_wait_group<1>();
                        retire(rel, acc);
                        ptx::wgmma_wait_group<0>();
                        retire(rel, acc2);
                    } else {
                        ptx::wgmma_wait_group<0>();
                        retire(rel, acc);
                    }
                }
            } else {
                for (u32 kb = 0; kb < kbs; ++kb) {
                    issue(acc);
                    // The slot's scales, read while the wgmmas run.
                    float a_lo, a_hi;
                    read_scales(st, a_lo, a_hi);
                    ptx::wgmma_wait_group<0>();
                    // The slot's tiles (read by the now complete wgmmas) and scales (in registers) are done.
                    release(st);
                    st.advance();
                    promote(acc, a_lo, a_hi);
                }
            }

            if constexpr (kKGrouped) {
                epilogue.store(fin, scheduler.d_row0(), n_block * kBlockN, scheduler.d_row_end(), n);
            } else {
                epilogue.store(fin, m_block * kBlockM, n_block * kBlockN, m, n);
            }
        }
        ptx::grid_dependency_launch_dependents();
        epilogue.finish();
    }
    // The peer may still arrive on this CTA's empty barriers: neither CTA leaves before both are done.
    if constexpr (kMulticast > 1) ptx::cluster_sync();
}

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, u32 kCompiledM, u32 kCompiledN, u32 kCompiledK,
          bool kWithC, bool kPipelined = false, u32 kMulticast = 1, bool kPrefetchC = false>
__device__ __forceinline__ void sm90_fp8_gemm_1d1d_impl(const TmaDescriptor& tmap_a, const TmaDescriptor& tmap_b,
                                                        const TmaDescriptor& tmap_sfa, const TmaDescriptor& tmap_sfb,
                                                        float* d, const float* c, u32 ldd, u32 ldc, u32 m_runtime,
                                                        u32 n_runtime, u32 k_runtime) {
    const u32 m = kCompiledM != 0 ? kCompiledM : m_runtime;
    const u32 n = kCompiledN != 0 ? kCompiledN : n_runtime;
    const u32 k = kCompiledK != 0 ? kCompiledK : k_runtime;
    sm90_fp8_gemm_1d1d_body<kBlockM, kBlockN, kNumStages, kGroupN, kWithC, false, kPipelined, kMulticast, kPrefetchC>(
        &tmap_a, &tmap_b, tmap_sfa, tmap_sfb, d, c, ldd, ldc, m, n, k, nullptr, 0u, 0u);
}

// K-grouped (k_grouped_fp8_gemm_nt_contiguous): the groups of Sm90Fp8KGroupedMaps in one launch; d and c are
// [num_groups, m, n] with row stride n. kSfKAlign: the scale layout (the body's comment).
template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, u32 kCompiledM, u32 kCompiledN, bool kWithC,
          bool kPipelined = false, u32 kMulticast = 1, bool kPrefetchC = false, u32 kSfKAlign = 0>
__device__ __forceinline__ void sm90_fp8_gemm_1d1d_k_grouped_impl(const TmaDescriptor& tmap_sfa,
                                                                  const TmaDescriptor& tmap_sfb,
                                                                  const Sm90Fp8KGroupedMaps& groups, float* d,
                                                                  const float* c, u32 m_runtime, u32 n_runtime,
                                                                  u32 num_groups, u32 scale_k_block0) {
    const u32 m = kCompiledM != 0 ? kCompiledM : m_runtime;
    const u32 n = kCompiledN != 0 ? kCompiledN : n_runtime;
    sm90_fp8_gemm_1d1d_body<kBlockM, kBlockN, kNumStages, kGroupN, kWithC, true, kPipelined, kMulticast, kPrefetchC,
                            kSfKAlign>(
        groups.a, groups.b, tmap_sfa, tmap_sfb, d, c, n, n, m, n, 0u, groups.k, num_groups, scale_k_block0);
}

}  // namespace deep_gemm
