// SM90 FP8 block-scaled GEMM, "1D2D" recipe, BF16 output:
//     D[M, N] = sum_kb (A[:, kb] @ B[:, kb]^T) * sfa[m, kb] * sfb[n / 128, kb]
// A [M, K] e4m3 K-major with per-row-per-128-K scales (sfa, stored M-major: sfa[kb * stride + m]);
// B [N, K] e4m3 K-major with 128x128 block scales (sfb [ceil(N/128), ceil(K/128)] row-major).
// Grouped (MoE) modes come from the scheduler (extended interface, scheduler/grouped_scheduler.cuh):
// A, B and sfa are read through 3-D tensor maps {inner, outer, group} (group extent 1 when not grouped);
// sfb is [G, ceil(N/128), ceil(K/128)] (one [ceil(N/128), ceil(K/128)] block per B group); D is 2-D
// (rows from the scheduler's d_row0()). Masked: A [G, max_m, K], sfa per group M-major
// [G][ceil(K/128)][align(max_m, 4)]; m = max_m. The grouped row rules (padding rows, clipped rows) hold a
// flag per thread row and wave; a 256-row contiguous block of two groups is visited once per group.
// Masked with kSignalTiles (enable_overlap): each stored tile is counted in tile_signal (epilogue/tile_signal.cuh).
// Head-batched (einsum_scheduler.cuh, fp8_einsum): the masked layout for B, sfa and sfb with every head full,
// A read through a {K, head, rows} map and D stored at each head's column offset (no deferred store).
// Block-32 scales (kScaleGranK 32, recipe (1, 32, 32), dense): sfa per row per 32 K (sfa[ks * stride + m], ks =
// k / 32), sfb per 32x32 block ([ceil(N/32), ceil(K/32)] row-major); BLOCK_N a multiple of 32. Each 32-K step's
// wgmma goes into a fresh scratch accumulator, promoted with its own A scales and the B scale of each 32-column
// slice ("Block-32 scales" below).
//
// Persistent and warp-specialised. Block = warpgroup 0 (producer: one thread issues the TMA loads of
// the A tile, B tile and A scales of each 128-K block into a pipeline slot) + math warpgroups: BLOCK_M/64
// of them owning 64 rows each for BLOCK_M 64, 128 and 192, two owning 128 rows each for BLOCK_M 256. A
// warpgroup's rows are cut into 64-row "waves" (the wgmma M). Per 128-K block and wave each math
// warpgroup issues four m64nNk32 wgmmas into one scratch FP32 accumulator, waits, then promotes the
// scratch into the wave's final accumulator scaled by sfa[row] * sfb[column block] (two-level
// accumulation); the slot is released after the last wave's wgmmas. With two math warpgroups their
// wgmmas and promotions interleave on the tensor core. After the last K block the epilogue converts to
// BF16 and TMA-stores while the producer already loads the next tile (with a C operand, D = C + acc: the
// AccumDirectStoreEpilogue adds C in FP32 and stores from registers); dense tiles with 32+ K blocks defer
// that store into the next tile's first K block ("deferred store" below).
//
// Shared memory (dynamic, 1024-byte aligned; the host computes the same size in
// csrc/jit_kernels/heuristics/sm90_fp8_config.hpp):
//   [D staging BLOCK_M*BLOCK_N*2][A slots S*BLOCK_M*128][B slots S*BLOCK_N*128][sfa slots S*BLOCK_M*4*(128/gran)]
//   [full barriers S*8][empty barriers S*8]
#pragma once

#include "../common/pipeline.cuh"
#include "../common/sm90_gemm_prologue.cuh"
#include "../common/sm90_warp_roles.cuh"
#include "../common/types.cuh"
#include "../epilogue/accum_direct_store.cuh"
#include "../epilogue/bf16_direct_store.cuh"
#include "../epilogue/bf16_tma_store.cuh"
#include "../epilogue/tile_signal.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/prefetch.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_atoms.cuh"
#include "../ptx/wgmma_helpers.cuh"
#include "../scheduler/einsum_scheduler.cuh"
#include "../scheduler/gemm_scheduler.cuh"
#include "../scheduler/grouped_scheduler.cuh"
#include "sm90_fp8_gemm_1d2d_params.hpp"  // the generated entry point's parameter

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kScaleGranK = 128>
struct Sm90Fp8Gemm1d2dLayout {
    static constexpr u32 kBlockK = 128;
    // A scales per row and K block: 1, or 4 with block-32 scales.
    static constexpr u32 kSfaPerKBlock = kBlockK / kScaleGranK;
    static_assert(kScaleGranK == 128 || kScaleGranK == 32, "scale granularity along K: 128 or 32");
    // 256-row tiles: two math warpgroups of two waves each (fin 2 x BLOCK_N/2 + scratch BLOCK_N/2 registers).
    static constexpr u32 kNumMathWarpgroups = kBlockM == 256 ? 2 : kBlockM / 64;
    static constexpr u32 kRowsPerWarpgroup = kBlockM / kNumMathWarpgroups;
    static constexpr u32 kWaves = kRowsPerWarpgroup / 64;
    static constexpr u32 kNumMathThreads = 128 * kNumMathWarpgroups;
    static constexpr u32 kNumThreads = 128 + kNumMathThreads;

    static constexpr u32 kSmemD = kBlockM * kBlockN * 2;
    static constexpr u32 kSmemA = kBlockM * kBlockK;
    static constexpr u32 kSmemB = kBlockN * kBlockK;
    static constexpr u32 kSmemSfa = kBlockM * 4 * kSfaPerKBlock;
    static constexpr u32 kOffA = kSmemD;
    static constexpr u32 kOffB = kOffA + kNumStages * kSmemA;
    static constexpr u32 kOffSfa = kOffB + kNumStages * kSmemB;
    static constexpr u32 kOffBarriers = kOffSfa + kNumStages * kSmemSfa;
    static constexpr u32 kSmemBytes = kOffBarriers + kNumStages * 2 * 8;
    // Bytes TMA delivers per slot (out-of-bounds parts are zero-filled and still counted).
    static constexpr u32 kTxBytes = kSmemA + kSmemB + kSmemSfa;

    static_assert(kBlockM == 64 || kBlockM == 128 || kBlockM == 192 || kBlockM == 256, "BLOCK_M must be 64, 128, 192 or 256");
    // Registers per math thread after setmaxnreg: 3 math warpgroups (BLOCK_M 192, 512 threads) share what is left
    // of the 64K-register file after the producer warpgroup (40 each): 152.
    static constexpr u32 kMathRegs = kNumMathWarpgroups == 3 ? 152 : kSm90MathRegs;
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "BLOCK_N: multiple of 16 in [16, 256]");
    static_assert(kSmemD % 1024 == 0 && kSmemA % 1024 == 0 && kSmemB % 1024 == 0,
                  "128B-swizzled tiles must stay 1024-byte aligned");
    static_assert(kSmemSfa % 128 == 0, "TMA destinations are 128-byte aligned");
};

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, u32 kCompiledM, u32 kCompiledN,
          u32 kCompiledK, typename Scheduler = GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>,
          typename Epilogue = Bf16TmaStoreEpilogue<kBlockM, kBlockN>, u32 kPromoteMode = 0,
          u32 kMulticast = 1, bool kMulticastOnA = false, u32 kScaleGranK = 128, bool kSignalTiles = false>
__device__ __forceinline__ void sm90_fp8_gemm_1d2d_impl(const TmaDescriptor& tmap_a, const TmaDescriptor& tmap_b,
                                                        const TmaDescriptor& tmap_sfa,
                                                        const TmaDescriptor& tmap_d, const float* __restrict__ sfb,
                                                        void* d, u32 ldd, const void* c, u32 ldc,
                                                        const i32* grouped, u32 m_runtime,
                                                        u32 n_runtime, u32 k_runtime, u32 num_groups,
                                                        float* split_ws = nullptr, u32* split_counters = nullptr,
                                                        i32* tile_signal = nullptr) {
    using Layout = Sm90Fp8Gemm1d2dLayout<kBlockM, kBlockN, kNumStages, kScaleGranK>;
    using Wgmma = ptx::WgmmaFp8<kBlockN>;
    // Promotion overlap: 0 = none (wgmma, wait 0, promote); 1 = two full scratch accumulators (K block kb+1
    // runs while kb is promoted; 3 x BLOCK_N / 2 registers). (A split-N variant, promoting one N half while
    // the other half's wgmmas run, was tried and removed: ptxas 13.0 serialised its wgmmas, C7514.)
    // Block-32 scales: 1 = the two scratch accumulators take turns per 32-K step instead (step s+1 runs while s
    // is promoted).
    static_assert(kPromoteMode <= 1, "promote mode 0 or 1");
    constexpr bool kBlock32 = kScaleGranK == 32;
    static_assert(!kBlock32 || kBlockN % 32 == 0, "block-32 scales: BLOCK_N a multiple of 32 (whole B scale columns)");
    constexpr u32 kWaves = Layout::kWaves;
    constexpr u32 kRowsPerWarpgroup = Layout::kRowsPerWarpgroup;
    static_assert(kPromoteMode == 0 || kWaves == 1, "the pipelined promotion has no registers left for 2 waves");
    static_assert(Epilogue::kWaves == kWaves, "the epilogue must take this kernel's waves per warpgroup");
    constexpr bool kPipelinedPromote = kPromoteMode == 1 && !kBlock32;
    constexpr u32 kBlockK = Layout::kBlockK;
    constexpr u32 kNumAccum = kBlockN / 2;
    // The layout always reserves the TMA-store staging; the direct-store epilogue needs none of it.
    static_assert(Epilogue::kSmemBytes <= Layout::kSmemD, "epilogue staging size");
    // Multicast over a 2-CTA cluster: the pair shares B (scheduler pairs M blocks, each CTA loads half of the
    // B tile's rows into both CTAs) or A (kMulticastOnA: pairs N blocks, each CTA loads half of A's rows).
    static_assert(kMulticast == 1 || kMulticast == 2, "multicast: 1 (off) or 2 (2-CTA cluster)");
    static_assert(kMulticast == 1 || ((kMulticastOnA ? kBlockM : kBlockN) / 2) % 8 == 0,
                  "multicast halves must stay 1024-byte aligned");
    constexpr u32 kHalfRowsMc = (kMulticastOnA ? kBlockM : kBlockN) / 2;
    static_assert(!Scheduler::kAGroupMiddle || kMulticast == 1, "the head-batched A map {K, head, rows} is not multicast");
    // Split-K (SplitKScheduler): each unit covers part of a tile's K blocks and leaves an FP32 partial in
    // split_ws; the tile's last unit adds them up and stores D. split_counters: one zeroed u32 per tile,
    // reset to zero by the kernel for the next launch on the stream.
    constexpr u32 kNumSplits = Scheduler::kNumSplits;
    static_assert(kNumSplits == 1 || (kWaves == 1 && kMulticast == 1 && Scheduler::kPaddingRows == PaddingRows::kUnspecified),
                  "split-K: dense, one wave per math warpgroup, no multicast");
    // Tile signals (epilogue/tile_signal.cuh): the masked scheduler's tiles, each counted once stored.
    static_assert(!kSignalTiles || Scheduler::kClipRows, "tile signals are for the masked GEMM");

    const u32 m = kCompiledM != 0 ? kCompiledM : m_runtime;
    const u32 n = kCompiledN != 0 ? kCompiledN : n_runtime;
    const u32 k = kCompiledK != 0 ? kCompiledK : k_runtime;
    const u32 num_k_blocks = ceil_div(k, kBlockK);

    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_d = smem;
    u8* smem_a = smem + Layout::kOffA;
    u8* smem_b = smem + Layout::kOffB;
    float* smem_sfa = reinterpret_cast<float*>(smem + Layout::kOffSfa);
    auto pipe = PipelineBarriers<kNumStages>::at(smem + Layout::kOffBarriers);

    const u32 warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const u32 thread_in_wg = threadIdx.x % 128;

    const u32 cta_rank = kMulticast > 1 ? ptx::cluster_cta_rank() : 0u;
    const u32 peer_rank = cta_rank ^ 1u;

    // One arrival per math warp (of both CTAs with multicast: a slot is free when the peer is done too).
    if (threadIdx.x == 0)
        sm90_gemm_prefetch_and_init<Epilogue::kUsesTensorMap>(pipe, kMulticast * (Layout::kNumMathThreads / 32),
                                                              tmap_d, tmap_a, tmap_b, tmap_sfa);
    sm90_gemm_wait_setup<kMulticast>();

    if (warpgroup == 0) {
        // ---------------- producer ----------------
        sm90_gemm_producer<Scheduler, kNumStages, kBlockN, Layout::kNumMathWarpgroups>(
            m, n, grouped, num_groups,
            [&](const Scheduler& scheduler, PipelineState<kNumStages>& st, i32 m0, i32 n0, i32 ga, i32 gb) {
                // An all-padding tile (kZero) loads nothing.
                u32 kb0 = 0;
                u32 tile_k_blocks = Scheduler::kMayHaveEmptyK ? ceil_div(scheduler.k_size(k), kBlockK) : num_k_blocks;
                if constexpr (kNumSplits > 1) scheduler.split_k_blocks(num_k_blocks, kb0, tile_k_blocks);
                for (u32 kb = 0; kb < tile_k_blocks; ++kb) {
                    pipe.producer_acquire(st);
                    u64* full = &pipe.full[st.stage];
                    ptx::mbarrier_arrive_expect_tx(full, Layout::kTxBytes);
                    const i32 k0 = static_cast<i32>((kb0 + kb) * kBlockK);
                    u8* a_slot = smem_a + st.stage * Layout::kSmemA;
                    u8* b_slot = smem_b + st.stage * Layout::kSmemB;
                    if constexpr (kMulticast > 1 && kMulticastOnA) {
                        // This CTA's half of A's rows into the same offset of both CTAs' slot (the peer: the
                        // other half); the tensor map's box is {128, BLOCK_M / 2}.
                        ptx::tma_load_3d_multicast(a_slot + cta_rank * kHalfRowsMc * kBlockK, tmap_a, full, k0,
                                                   m0 + static_cast<i32>(cta_rank * kHalfRowsMc), ga, 0x3);
                    } else if constexpr (Scheduler::kAGroupMiddle) {
                        // Head-batched (einsum_scheduler.cuh): A's map is {K, head, rows}.
                        ptx::tma_load_3d(a_slot, tmap_a, full, k0, ga, m0);
                    } else {
                        ptx::tma_load_3d(a_slot, tmap_a, full, k0, m0, ga);
                    }
                    if constexpr (kMulticast > 1 && !kMulticastOnA) {
                        if (scheduler.pair_shares_b()) {
                            ptx::tma_load_3d_multicast(b_slot + cta_rank * kHalfRowsMc * kBlockK, tmap_b, full, k0,
                                                       n0 + static_cast<i32>(cta_rank * kHalfRowsMc), gb, 0x3);
                        } else {
                            // A contiguous pair of two groups: each CTA loads its own B tile, in the map's two
                            // half-tile boxes (the same bytes arrive, so the slot's expected count holds).
#pragma unroll
                            for (u32 half = 0; half < 2; ++half)
                                ptx::tma_load_3d(b_slot + half * kHalfRowsMc * kBlockK, tmap_b, full, k0,
                                                 n0 + static_cast<i32>(half * kHalfRowsMc), gb);
                        }
                    } else {
                        ptx::tma_load_3d(b_slot, tmap_b, full, k0, n0, gb);
                    }
                    // Block-32: the box {BLOCK_M, 4} brings the K block's four A scales per row.
                    ptx::tma_load_3d(smem_sfa + st.stage * kBlockM * Layout::kSfaPerKBlock, tmap_sfa, full, m0,
                                     static_cast<i32>((kb0 + kb) * Layout::kSfaPerKBlock), ga);
                    st.advance();
                }
            });
    } else {
        // ---------------- math ----------------
        if constexpr (Layout::kNumMathWarpgroups > 1) ptx::setmaxnreg_inc<Layout::kMathRegs>();
        const u32 math_wg = warpgroup - 1;
        const u32 warp = thread_in_wg / 32, lane = thread_in_wg % 32;
        // This thread's two accumulator rows of wave 0 inside the tile: row_lo and row_lo + 8 (wave w: + 64 w).
        const u32 row_lo = math_wg * kRowsPerWarpgroup + warp * 16 + lane / 4;

        // B scales: a tile of BLOCK_N columns starting at n0 touches scale blocks n0/128, +1, +2.
        constexpr bool kUniformScaleB = (128 % kBlockN) == 0;
        constexpr bool kMayNeedThird = kBlockN > 128 && (256 % kBlockN) != 0;
        const u32 num_scale_rows_b = ceil_div(n, 128u);

        Scheduler scheduler(m, n, grouped, num_groups);
        Epilogue epilogue(smem_d, math_wg, thread_in_wg, tmap_d, d, ldd, c, ldc);
        PipelineState<kNumStages> st;  // next slot to wait for / issue from
        PipelineState<kNumStages> rel;  // next slot to release (== st except in the pipelined loop)

        // Scales of one K block for this thread: its two rows per wave and the tile's (up to 3) B scale blocks.
        struct BScales {
            float b0, b1, b2;
        };
        struct KbScales : BScales {
            float a_lo[kWaves], a_hi[kWaves];
        };

        auto load_b_scales = [&](u32 kb, const float* sfb0, const float* sfb1, const float* sfb2) -> BScales {
            BScales b;
            b.b0 = __ldg(sfb0 + kb);
            b.b1 = kUniformScaleB ? b.b0 : __ldg(sfb1 + kb);
            b.b2 = kMayNeedThird ? __ldg(sfb2 + kb) : b.b1;
            return b;
        };

        // Waits for slot `st` and reads the K block's A scales from it; `b` holds the K block's B scales.
        auto wait_slot = [&](const BScales& b) -> KbScales {
            KbScales s;
            static_cast<BScales&>(s) = b;
            pipe.consumer_wait(st);
            const float* sfa_slot = smem_sfa + st.stage * kBlockM;
#pragma unroll
            for (u32 w = 0; w < kWaves; ++w) {
                s.a_lo[w] = sfa_slot[row_lo + w * 64];
                s.a_hi[w] = sfa_slot[row_lo + w * 64 + 8];
            }
            return s;
        };

        // Issues the 4 wgmmas of wave `wave` of slot `st` into `a` and commits them.
        auto mma_wave = [&](float(&a)[kNumAccum], u32 wave) {
            ptx::wgmma_fp8_kmajor_k128<Wgmma>(
                smem_addr(smem_a + st.stage * Layout::kSmemA + (math_wg * kRowsPerWarpgroup + wave * 64) * kBlockK),
                smem_addr(smem_b + st.stage * Layout::kSmemB), a);
        };

        // One-wave K block (the pipelined loop): wait for the slot, issue its wgmmas into `a`, move on.
        // The B scales are loaded from global first: their latency hides behind the barrier wait.
        auto issue = [&](float(&a)[kNumAccum], u32 kb, const float* sfb0, const float* sfb1,
                         const float* sfb2) -> KbScales {
            const KbScales s = wait_slot(load_b_scales(kb, sfb0, sfb1, sfb2));
            mma_wave(a, 0);
            st.advance();
            return s;
        };

        // Called once the wgmmas of the oldest unreleased slot have completed (its tiles were read and its
        // A scales are in registers): one arrival per math warp.
        auto release = [&]() {
            if constexpr (kMulticast > 1) {
                pipe.consumer_release_pair(rel, peer_rank, lane);
            } else {
                pipe.consumer_release_warp(rel, lane);
            }
            rel.advance();
        };

        // fin += a * sfa[row] * sfb[column block], for the rows of wave `wave`. Which 8-column groups take
        // which B scale depends on scale_off = n0 % 128, a multiple of gcd(BLOCK_N, 128): it takes at most
        // 128 / gcd values (2 for BLOCK_N 192, 8 for 112), so one promotion is instantiated per value and
        // picked at run time; inside it the scale of each group is a compile-time choice (one FFMA per
        // accumulator, no per-column compares or selects).
        auto promote = [&](float(&f)[kNumAccum], float(&a)[kNumAccum], const KbScales& s, u32 wave,
                           u32 scale_off) {
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(a[i]);
            auto promote_at = [&](auto off) {
                constexpr u32 kOff = decltype(off)::value;
#pragma unroll
                for (u32 j = 0; j < kBlockN / 8; ++j) {
                    // 8-column groups never straddle a 128 boundary; block index relative to n0 / 128.
                    const u32 block = (kOff + j * 8) / 128;
                    const float b = block == 0 ? s.b0 : (block == 1 ? s.b1 : s.b2);
                    const float s_lo = s.a_lo[wave] * b, s_hi = s.a_hi[wave] * b;
                    f[4 * j + 0] += a[4 * j + 0] * s_lo;
                    f[4 * j + 1] += a[4 * j + 1] * s_lo;
                    f[4 * j + 2] += a[4 * j + 2] * s_hi;
                    f[4 * j + 3] += a[4 * j + 3] * s_hi;
                }
            };
            if constexpr (kUniformScaleB) {
                promote_at(U32Constant<0>{});  // the tile lies inside one scale block
            } else {
                constexpr u32 kStep = gcd_u32(kBlockN, 128);
                dispatch_multiple_of<kStep, 128 / kStep>(scale_off, promote_at);
            }
        };

        // Split-K: writes this unit's partial tile f (FP32, in fragment order: consecutive threads write
        // consecutive float2, so stores and reads are whole 256-byte warp accesses) to split_ws; the unit
        // that arrives last on the tile's counter adds all partials in split order (bitwise the same
        // whichever unit is last) into f and returns true; the others return false. Nobody waits.
        auto split_k_combine = [&](float(&f)[kNumAccum], u32 tile, u32 split) -> bool {
            constexpr u32 kThreads = Layout::kNumMathThreads;
            constexpr u32 kPairs = kNumAccum / 2;
            constexpr u32 kBarrier = 7;  // named barrier of the math threads (the epilogues use 1 + math_wg)
            const u32 tid = threadIdx.x - 128;
            float2* tile_ws = reinterpret_cast<float2*>(split_ws) + size_t(tile) * kNumSplits * kPairs * kThreads;
            float2* mine = tile_ws + size_t(split) * kPairs * kThreads;
#pragma unroll
            for (u32 i = 0; i < kPairs; ++i) mine[i * kThreads + tid] = make_float2(f[2 * i], f[2 * i + 1]);
            __threadfence();
            ptx::named_barrier_sync(kBarrier, kThreads);
            bool last = false;
            if (tid == 0) {
                last = atomicAdd(split_counters + tile, 1u) == kNumSplits - 1;
                if (last) split_counters[tile] = 0;  // all units have arrived: ready for the next launch
            }
            last = !ptx::named_barrier_and(kBarrier, kThreads, !last);  // broadcast (an OR through bar.red)
            if (!last) return false;
            __threadfence();
            float sum[kNumAccum];
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) sum[i] = 0.0f;
#pragma unroll
            for (u32 s = 0; s < kNumSplits; ++s) {
                if (s == split) {
#pragma unroll
                    for (u32 i = 0; i < kNumAccum; ++i) sum[i] += f[i];
                } else {
                    const float2* theirs = tile_ws + size_t(s) * kPairs * kThreads;
#pragma unroll
                    for (u32 i = 0; i < kPairs; ++i) {
                        const float2 v = __ldcg(theirs + i * kThreads + tid);  // L2: L1 is not coherent
                        sum[2 * i] += v.x;
                        sum[2 * i + 1] += v.y;
                    }
                }
            }
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) f[i] = sum[i];
            return true;
        };

        float acc[kNumAccum];
        float fin[kWaves][kNumAccum];
#pragma unroll
        for (u32 i = 0; i < kNumAccum; ++i) acc[i] = 0.0f;
        // Second scratch accumulator of the pipelined variants (unused, and optimised away, otherwise).
        constexpr u32 kNumAccum2 = kPromoteMode == 1 ? kNumAccum : 1;
        float acc2[kNumAccum2];
#pragma unroll
        for (u32 i = 0; i < kNumAccum2; ++i) acc2[i] = 0.0f;

        // Deferred store (the dense plain loop with the TMA-store epilogue, K of 32+ blocks): a tile's D is
        // staged and handed to TMA during the next tile's first K block, partly behind that block's wgmmas,
        // instead of leaving the tensor cores idle between tiles while both warpgroups convert and stage; the
        // last tile stores after the loop. Measured on the H200 (docs/kernels/sm90_fp8_gemm_1d2d.md, "Deferred store"): 1.6-2.6%
        // faster at K 7168-16384, 1-3% slower at K 512-1536, hence the K threshold.
        constexpr bool kDeferStore = Epilogue::kStagedStore && kPromoteMode == 0 && !kBlock32 && kNumSplits == 1 &&
                                     Scheduler::kPaddingRows == PaddingRows::kUnspecified && !Scheduler::kClipRows &&
                                     !Scheduler::kMayHaveEmptyK && !Scheduler::kDColumnGroups;
        const bool defer_store = kDeferStore && num_k_blocks >= 32;
        bool pending = false;  // fin holds a finished tile not yet staged
        u32 pending_row0 = 0, pending_n0 = 0, pending_row_end = 0;

        u32 m_block, n_block;
        while (scheduler.next(m_block, n_block)) {
            const u32 d_row0 = scheduler.d_row0();
            const u32 n0 = n_block * kBlockN;
            if constexpr (Scheduler::kMayHaveEmptyK) {
                if (scheduler.k_size(k) == 0) {
                    // All padding: no K loop (the producer loads nothing for this tile); zeros stored up to
                    // d_row_end() (kZero: all rows, kUnspecified: none).
                    float zeros[kWaves][kNumAccum];
#pragma unroll
                    for (u32 w = 0; w < kWaves; ++w) {
#pragma unroll
                        for (u32 i = 0; i < kNumAccum; ++i) zeros[w][i] = 0.0f;
                    }
                    epilogue.store(zeros, d_row0, n0, scheduler.d_row_end(), n);
                    continue;
                }
            }
            // Padding rows of a contiguous layout, per wave: lo_ok[w] / hi_ok[w] for this thread's rows row_lo and
            // row_lo + 8 of wave w (asked before the K loop, so the loads' latency hides).
            bool lo_ok[kWaves], hi_ok[kWaves];
#pragma unroll
            for (u32 w = 0; w < kWaves; ++w) {
                lo_ok[w] = hi_ok[w] = true;
                if constexpr (Scheduler::kPaddingRows != PaddingRows::kUnspecified) {
                    lo_ok[w] = scheduler.row_valid(d_row0 + row_lo + w * 64);
                    hi_ok[w] = scheduler.row_valid(d_row0 + row_lo + w * 64 + 8);
                }
            }
            const u32 sb0 = n0 / 128;  // may be past the last scale row for an N-pair's padding tile
            const float* sfb_group = sfb + scheduler.b_group() * num_scale_rows_b * num_k_blocks;
            const float* sfb0 = sfb_group + min_of(sb0, num_scale_rows_b - 1) * num_k_blocks;
            const float* sfb1 = sfb_group + min_of(sb0 + 1, num_scale_rows_b - 1) * num_k_blocks;
            const float* sfb2 = sfb_group + min_of(sb0 + 2, num_scale_rows_b - 1) * num_k_blocks;
            const u32 scale_off = n0 % 128;  // column of n0 inside its B scale block
            // This tile's K blocks [kb0, kb0 + tile_kbs): all of K unless split.
            u32 kb0 = 0, tile_kbs = num_k_blocks;
            if constexpr (kNumSplits > 1) scheduler.split_k_blocks(num_k_blocks, kb0, tile_kbs);
            // The pipelined loop loads a K block's B scales only one wgmma wave before it promotes them, so it
            // pulls the tile's B-scale rows (K blocks [kb0, kb0 + tile_kbs): 32 per 128-byte line) into L1
            // first: the per-K-block loads then hit L1 instead of stalling the promotion on L2 or HBM every 32 K
            // blocks (measured 2-6% on the memory-bound M=128 shapes). The plain loop loads them a whole K
            // block ahead and measured 1-3% slower with this prefetch (it holds the issuing warp at the tile
            // start). Element kb0 + 32 i, clamped to the last one, touches every line of the range.
            if constexpr (kPipelinedPromote) {
                for (u32 i = thread_in_wg; i <= tile_kbs / 32 + 1; i += 128) {
                    const u32 kb = kb0 + min_of(i * 32, tile_kbs - 1);
                    ptx::prefetch_l1(sfb0 + kb);
                    if constexpr (!kUniformScaleB) ptx::prefetch_l1(sfb1 + kb);
                    if constexpr (kMayNeedThird) ptx::prefetch_l1(sfb2 + kb);
                }
            }

            if (!defer_store) {  // (deferred: zeroed in the first K block, once staged)
#pragma unroll
                for (u32 w = 0; w < kWaves; ++w) {
#pragma unroll
                    for (u32 i = 0; i < kNumAccum; ++i) fin[w][i] = 0.0f;
                }
            }

            // A warpgroup whose rows all lie at or past d_row_end() (kClipRows: a masked group's last M block)
            // writes nothing: it only waits for and releases the tile's slots (its fin stays zero), leaving the
            // tensor cores to the warpgroups with rows. Only with one 64-row wave per warpgroup: for two, the
            // partial tiles' own instance of the K loop moved the full loop's counters out of uniform registers
            // and cost full tiles 3.5-4.5% (docs/kernels/sm90_fp8_gemm_1d2d.md, "Idle warpgroups of masked tiles").
            constexpr bool kSkipIdleWarpgroups =
                Scheduler::kClipRows && kWaves == 1 && Layout::kNumMathWarpgroups > 1;
            if (kSkipIdleWarpgroups && d_row0 + math_wg * kRowsPerWarpgroup >= scheduler.d_row_end()) {
#pragma unroll 1
                for (u32 kb = 0; kb < tile_kbs; ++kb) {
                    pipe.consumer_wait(st);
                    st.advance();
                    release();
                }
            } else if constexpr (kBlock32) {
                // Block-32 scales: a K block is four 32-K steps with scales of their own. Per step and wave one k32
                // wgmma into a scratch accumulator (overwritten), then fin += scratch * sfa[row][step] * sfb[slice][step],
                // each of the tile's BLOCK_N / 32 column slices with its own B scale. kPromoteMode 1 (one wave per
                // warpgroup): acc and acc2 take turns, so step s+1's wgmma runs while step s is promoted; 0: wgmma, wait,
                // promote. sfb rows are padded to a multiple of 4 scales (align(ceil(K/32), 4), zeros past K), so a K
                // block's four B scales of a slice are one 16-byte load, issued before the slot's barrier wait (the
                // tile's B-scale rows are pulled into L1 first); a step's A scales are read from the slot right after its
                // wgmma is issued. Steps past K read zero-filled A and zero A scales; tile columns past N (never stored)
                // read the last B-scale row.
                constexpr u32 kSteps = Layout::kSfaPerKBlock;
                constexpr u32 kSlices = kBlockN / 32;
                static_assert(kSteps == 4, "block-32: four 32-K steps (one float4 of B scales) per 128-K block");
                const u32 sfb_ld = num_k_blocks * kSteps;  // align(ceil(K/32), 4)
                const u32 num_rows_b = ceil_div(n, 32u);
                const float* sfb_group = sfb + scheduler.b_group() * num_rows_b * sfb_ld;
                u32 row_off[kSlices];
#pragma unroll
                for (u32 q = 0; q < kSlices; ++q) row_off[q] = min_of(n0 / 32 + q, num_rows_b - 1) * sfb_ld;
                // The tile's K range of each B-scale row, [kb0 * 4, (kb0 + tile_kbs) * 4): one element per 128-byte line.
                const u32 ks0 = kb0 * kSteps, ks_count = tile_kbs * kSteps;
                for (u32 i = thread_in_wg; i < kSlices * (ks_count / 32 + 2); i += 128) {
                    const u32 row = min_of(n0 / 32 + i % kSlices, num_rows_b - 1);
                    ptx::prefetch_l1(sfb_group + row * sfb_ld + ks0 + min_of(i / kSlices * 32, ks_count - 1));
                }

                // f += a * sfa[step] * sfb[slice][step]: the 8-column groups 4q..4q+3 of the fragment are slice q's.
                auto promote32 = [&](float(&f)[kNumAccum], float(&a)[kNumAccum], float a_lo, float a_hi,
                                     const float4(&b)[kSlices], u32 step) {
#pragma unroll
                    for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(a[i]);
#pragma unroll
                    for (u32 q = 0; q < kSlices; ++q) {
                        const float bs = step == 0 ? b[q].x : step == 1 ? b[q].y : step == 2 ? b[q].z : b[q].w;
                        const float s_lo = a_lo * bs, s_hi = a_hi * bs;
#pragma unroll
                        for (u32 j = 4 * q; j < 4 * q + 4; ++j) {
                            f[4 * j + 0] += a[4 * j + 0] * s_lo;
                            f[4 * j + 1] += a[4 * j + 1] * s_lo;
                            f[4 * j + 2] += a[4 * j + 2] * s_hi;
                            f[4 * j + 3] += a[4 * j + 3] * s_hi;
                        }
                    }
                };

                for (u32 kb = 0; kb < tile_kbs; ++kb) {
                    float4 b[kSlices];
#pragma unroll
                    for (u32 q = 0; q < kSlices; ++q)
                        b[q] = __ldg(reinterpret_cast<const float4*>(sfb_group + row_off[q] + (kb0 + kb) * kSteps));
                    pipe.consumer_wait(st);
                    const float* sfa_slot = smem_sfa + st.stage * kBlockM * kSteps;
                    const u32 a_slot = smem_addr(smem_a + st.stage * Layout::kSmemA + math_wg * kRowsPerWarpgroup * kBlockK);
                    const u32 b_tile = smem_addr(smem_b + st.stage * Layout::kSmemB);
#pragma unroll
                    for (u32 w = 0; w < kWaves; ++w) {
                        const u32 a_tile = a_slot + w * 64 * kBlockK;
                        // Issues step s of this wave into `scratch`, then reads the step's A scales (lo, hi).
                        auto issue_step = [&](float(&scratch)[kNumAccum], u32 step) -> float2 {
                            ptx::wgmma_fp8_kmajor_k32_step<Wgmma>(a_tile, b_tile, step, scratch);
                            const float* sfa_step = sfa_slot + step * kBlockM + row_lo + w * 64;
                            return make_float2(sfa_step[0], sfa_step[8]);
                        };
                        // The slot's tiles (read by the wgmmas, now complete) and scales (in registers) are done.
                        auto slot_done = [&] {
                            if (w + 1 == kWaves) {
                                st.advance();
                                release();
                            }
                        };
                        if constexpr (kPromoteMode == 1) {
                            const float2 a0 = issue_step(acc, 0);
                            const float2 a1 = issue_step(acc2, 1);
                            ptx::wgmma_wait_group<1>();
                            promote32(fin[w], acc, a0.x, a0.y, b, 0);
                            const float2 a2 = issue_step(acc, 2);
                            ptx::wgmma_wait_group<1>();
                            promote32(fin[w], acc2, a1.x, a1.y, b, 1);
                            const float2 a3 = issue_step(acc2, 3);
                            ptx::wgmma_wait_group<1>();
                            promote32(fin[w], acc, a2.x, a2.y, b, 2);
                            ptx::wgmma_wait_group<0>();
                            slot_done();
                            promote32(fin[w], acc2, a3.x, a3.y, b, 3);
                        } else {
#pragma unroll
                            for (u32 step = 0; step < kSteps; ++step) {
                                const float2 a = issue_step(acc, step);
                                ptx::wgmma_wait_group<0>();
                                if (step + 1 == kSteps) slot_done();
                                promote32(fin[w], acc, a.x, a.y, b, step);
                            }
                        }
                    }
                }
            } else if constexpr (kPipelinedPromote) {
                // Two scratch accumulators: K block kb+1 is issued into the other one before K block kb is
                // promoted, so the tensor core has queued work while this warpgroup does the FP32 math.
                // The control flow keeps the set of in-flight accumulators the same on every path (ptxas
                // serialises all wgmmas when it cannot prove an accumulator idle before it is read).
                KbScales s_even = issue(acc, kb0, sfb0, sfb1, sfb2);
                u32 kb = 0;
                for (; kb + 2 < tile_kbs; kb += 2) {
                    // Here: K block kb in flight in acc; acc2 idle.
                    const KbScales s_odd = issue(acc2, kb0 + kb + 1, sfb0, sfb1, sfb2);
                    ptx::wgmma_wait_group<1>();
                    release();
                    promote(fin[0], acc, s_even, 0, scale_off);
                    s_even = issue(acc, kb0 + kb + 2, sfb0, sfb1, sfb2);
                    ptx::wgmma_wait_group<1>();
                    release();
                    promote(fin[0], acc2, s_odd, 0, scale_off);
                }
                if (kb + 1 < tile_kbs) {
                    const KbScales s_odd = issue(acc2, kb0 + kb + 1, sfb0, sfb1, sfb2);
                    ptx::wgmma_wait_group<1>();
                    release();
                    promote(fin[0], acc, s_even, 0, scale_off);
                    ptx::wgmma_wait_group<0>();
                    release();
                    promote(fin[0], acc2, s_odd, 0, scale_off);
                } else {
                    ptx::wgmma_wait_group<0>();
                    release();
                    promote(fin[0], acc, s_even, 0, scale_off);
                }
            } else {
                // The B scales are loaded one K block ahead (the last K block loads its own again), so their
                // global latency hides behind a whole K block of wgmmas instead of delaying the promotion.
                BScales b_next = load_b_scales(kb0, sfb0, sfb1, sfb2);
                // One K block; the first of a tile (kFirst) also stages and stores the previous tile's D (deferred
                // store). Instantiated twice, so the steady-state loop carries none of that. The previous tile's
                // waves but the last are staged before this block's first wgmmas are issued, the last one and the
                // store while they run: staging a wave behind its own wave's wgmmas would keep three accumulator
                // sets live (old, new and scratch), more registers than the kernels without compiled dims have.
                auto k_block = [&](u32 kb, auto first) {
                    constexpr bool kFirst = decltype(first)::value != 0;
                    const KbScales s = wait_slot(b_next);
                    b_next = load_b_scales(kb0 + min_of(kb + 1, tile_kbs - 1), sfb0, sfb1, sfb2);
                    // Stages the previous tile's wave v (if any) and clears it for this tile. (The epilogue is a
                    // parameter of dependent type, so that only the calls compile stage(): not every epilogue has it.)
                    auto stage_previous = [&](auto& staged_epilogue, u32 v) {
                        if (pending) staged_epilogue.stage(fin[v], v);
#pragma unroll
                        for (u32 i = 0; i < kNumAccum; ++i) fin[v][i] = 0.0f;
                    };
                    // (kFirst runs only when defer_store; nested ifs: a discarded branch must not name stage().)
                    if constexpr (kDeferStore) {
                        if constexpr (kFirst) {
#pragma unroll
                            for (u32 v = 0; v + 1 < kWaves; ++v) stage_previous(epilogue, v);
                        }
                    }
#pragma unroll
                    for (u32 w = 0; w < kWaves; ++w) {
                        mma_wave(acc, w);
                        if constexpr (kDeferStore) {
                            if constexpr (kFirst) {
                                if (w == 0) {
                                    stage_previous(epilogue, kWaves - 1);
                                    if (pending) epilogue.issue(pending_row0, pending_n0, pending_row_end, n);
                                }
                            }
                        }
                        ptx::wgmma_wait_group<0>();
                        if (w + 1 == kWaves) {
                            // The slot's tiles (read by wgmma, now complete) and scales (in registers) are done.
                            st.advance();
                            release();
                        }
                        promote(fin[w], acc, s, w, scale_off);
                    }
                };
                u32 kb = 0;
                if (defer_store) k_block(kb++, U32Constant<1>{});
                for (; kb < tile_kbs; ++kb) k_block(kb, U32Constant<0>{});
            }

            // A tile the epilogue must not write runs it with an empty row range (its staging and barriers, no
            // stores) rather than skipping it in a branch the compiler cannot prove warp-uniform: that made ptxas
            // take the tile loop for divergent and move the wgmma descriptors out of uniform registers (two R2UR
            // per descriptor and K block; see also MaskedGroupedScheduler::next()). Such tiles: split-K units but
            // the tile's last, and a warpgroup's rows that another visit of a 256-row contiguous block writes.
            u32 d_row_end = scheduler.d_row_end();
            if constexpr (kNumSplits > 1) {
                if (!split_k_combine(fin[0], scheduler.tile(), scheduler.split())) d_row_end = 0;
            }
            if (!scheduler.rows_written(math_wg * kRowsPerWarpgroup)) d_row_end = 0;
            if constexpr (Scheduler::kPaddingRows == PaddingRows::kZero) {
#pragma unroll
                for (u32 w = 0; w < kWaves; ++w) {
#pragma unroll
                    for (u32 j = 0; j < kBlockN / 8; ++j) {
                        if (!lo_ok[w]) fin[w][4 * j + 0] = fin[w][4 * j + 1] = 0.0f;
                        if (!hi_ok[w]) fin[w][4 * j + 2] = fin[w][4 * j + 3] = 0.0f;
                    }
                }
            }
            if (defer_store) {
                pending = true;
                pending_row0 = d_row0, pending_n0 = n0, pending_row_end = d_row_end;
            } else if constexpr (Scheduler::kClipRows) {
                epilogue.store_rows(fin, d_row0, n0, d_row_end, n, lo_ok, hi_ok);
                if constexpr (kSignalTiles)
                    signal_tile_stored<Layout::kNumMathThreads>(epilogue, thread_in_wg, tile_signal,
                                                                scheduler.a_group() * ceil_div(m, kBlockM) + m_block,
                                                                d_row0 < scheduler.d_row_end());
            } else if constexpr (Scheduler::kDColumnGroups) {
                // Head-batched: the tile's columns in D's [rows, heads * N] view, bounded by its head's last column.
                epilogue.store(fin, d_row0, scheduler.d_col0() + n0, d_row_end, scheduler.d_col_end(n));
            } else {
                epilogue.store(fin, d_row0, n0, d_row_end, n);
            }
        }
        if constexpr (kDeferStore) {
            if (pending) epilogue.store(fin, pending_row0, pending_n0, pending_row_end, n);
        }
        ptx::grid_dependency_launch_dependents();
        epilogue.finish();
    }
    // The peer may still arrive on this CTA's empty barriers: neither CTA leaves before both are done.
    if constexpr (kMulticast > 1) ptx::cluster_sync();
}

}  // namespace deep_gemm
