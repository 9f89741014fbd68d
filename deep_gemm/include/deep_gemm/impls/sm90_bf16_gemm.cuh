// SM90 BF16 GEMM with FP32 accumulation:  D[M, N] = (C +) A[M, K] @ B[N, K]^T
// A is K-major ([M, K], K contiguous) or M-major (stored [K, M], M contiguous); B is K-major ([N, K]) or
// N-major (stored [K, N]). D (and C) are row-major [M, N], bf16 or float32 (see the epilogues).
// Grouped (MoE) modes come from the scheduler: dense (GroupedOrderScheduler), M-grouped contiguous and
// masked, K-grouped contiguous (grouped_scheduler.cuh); A and B are always addressed through 3-D tensor
// maps {inner, outer, group} (group extent 1 when not grouped), so a group's tile never reads another
// group's rows. The scheduler also gives each tile its K range (k_offset / k_size: the whole K except for
// K-grouped problems, whose groups may even have K == 0: such a tile stores C or zeros).
// The einsum schedulers (einsum_scheduler.cuh) add addressing variants, compile-time constants of the
// scheduler that are off for all others (whose code is left exactly as it was, in the `else` branches):
// K blocks that walk (batch, K block) with the batch as the maps' group coordinate (kKWalksGroups), an A map
// {K, group, rows} (kAGroupMiddle) and a column offset of each tile in D (kDColumnGroups).
//
// Same structure as the FP8 kernel (sm90_fp8_gemm_1d2d.cuh), minus the scales and the promotion:
// warpgroup 0 = producer (one thread issues TMA loads into the PipelineBarriers ring), BLOCK_M/64 math
// warpgroups (64 rows each) issue four m64nNk16 bf16 wgmmas per 64-K stage straight into one FP32
// accumulator across the whole K loop. One wgmma group stays in flight: stage kb's slot is released after
// stage kb+1's wgmmas have been issued (wait_group 1).
//
// Shared-memory operand layouts (all 128-byte swizzled by TMA, every tile 1024-byte aligned):
//   K-major  (A or B): rows of the M/N dimension, 128 bytes = 64 bf16 of K each; TMA box {64, rows}.
//                      Descriptor: SBO 1024 (8 rows), +32 bytes per k16 step.
//   MN-major (A or B): atoms of 64 M/N elements x 64 K rows (8 KB), atom i at i * 8192; TMA box {64, 64}
//                      per atom. Descriptor (imm-trans = 1): SBO 1024 (8 K rows), LBO 8192 (next atom),
//                      +2048 bytes (16 K rows) per k16 step. MN-major B pads BLOCK_N up to whole atoms.
//
// Shared memory (dynamic, 1024-byte aligned; host formula in csrc/jit_kernels/heuristics/sm90_bf16.hpp):
//   [D staging Epilogue::kSmemBytes][A slots S * BM*128][B slots S * BNpad*128][full S*8][empty S*8]
#pragma once

#include "../common/pipeline.cuh"
#include "../common/sm90_gemm_prologue.cuh"
#include "../common/sm90_warp_roles.cuh"
#include "../common/types.cuh"
#include "../epilogue/accum_direct_store.cuh"
#include "../epilogue/bf16_direct_store.cuh"
#include "../epilogue/bf16_tma_store.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma_atoms.cuh"
#include "../ptx/wgmma_helpers.cuh"
#include "../scheduler/einsum_scheduler.cuh"
#include "../scheduler/gemm_scheduler.cuh"
#include "../scheduler/grouped_scheduler.cuh"
#include "sm90_bf16_gemm_params.hpp"  // the generated entry point's parameters

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, bool kAMnMajor, bool kBMnMajor, u32 kSmemD>
struct Sm90Bf16GemmLayout {
    static constexpr u32 kBlockK = 64;            // 128 bytes of bf16: one swizzle row
    static constexpr u32 kAtomMN = 64;            // MN extent of one MN-major swizzle atom
    static constexpr u32 kAtomBytes = kAtomMN * kBlockK * 2;
    static constexpr u32 kNumMathWarpgroups = kBlockM / 64;
    static constexpr u32 kNumMathThreads = 128 * kNumMathWarpgroups;
    static constexpr u32 kNumThreads = 128 + kNumMathThreads;
    static constexpr u32 kBlockNPad = kBMnMajor ? align_up(kBlockN, kAtomMN) : kBlockN;

    static constexpr u32 kSmemA = kBlockM * kBlockK * 2;
    static constexpr u32 kSmemB = kBlockNPad * kBlockK * 2;
    static constexpr u32 kOffA = kSmemD;
    static constexpr u32 kOffB = kOffA + kNumStages * kSmemA;
    static constexpr u32 kOffBarriers = kOffB + kNumStages * kSmemB;
    static constexpr u32 kSmemBytes = kOffBarriers + kNumStages * 2 * 8;
    // Bytes TMA delivers per slot (out-of-bounds parts are zero-filled and still counted).
    static constexpr u32 kTxBytes = kSmemA + kSmemB;

    static_assert(kBlockM == 64 || kBlockM == 128, "BLOCK_M must be 64 or 128");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "BLOCK_N: multiple of 16 in [16, 256]");
    static_assert(kSmemD % 1024 == 0 && kSmemA % 1024 == 0 && kSmemB % 1024 == 0,
                  "128B-swizzled tiles must stay 1024-byte aligned");
};

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, bool kAMnMajor, bool kBMnMajor, u32 kCompiledM,
          u32 kCompiledN, u32 kCompiledK, typename Scheduler, typename Epilogue, u32 kMulticast = 1>
__device__ __forceinline__ void sm90_bf16_gemm_impl(const TmaDescriptor& tmap_a, const TmaDescriptor& tmap_b,
                                                    const TmaDescriptor& tmap_d, void* d, u32 ldd, const void* c,
                                                    u32 ldc, const i32* grouped, u32 m_runtime, u32 n_runtime,
                                                    u32 k_runtime, u32 num_groups) {
    using Layout = Sm90Bf16GemmLayout<kBlockM, kBlockN, kNumStages, kAMnMajor, kBMnMajor, Epilogue::kSmemBytes>;
    using Wgmma = ptx::WgmmaBf16<kBlockN>;
    constexpr u32 kBlockK = Layout::kBlockK;
    constexpr u32 kNumAccum = kBlockN / 2;
    static_assert(kMulticast == 1 || kMulticast == 2, "multicast: 1 (off) or 2 (B shared by a 2-CTA cluster)");
    // (Dense pairs only: this kernel does not ask the scheduler's pair_shares_b(), which contiguous pairs need.)
    static_assert(kMulticast == 1 || !Scheduler::kMayHaveEmptyK, "BF16 multicast is for dense tile pairs");
    // With multicast each CTA of the pair loads half of B (rows of a K-major B, whole atoms of an MN-major B)
    // and multicasts it into both CTAs; the scheduler pairs the CTAs on the same N block.
    constexpr u32 kNumAtomsB = Layout::kBlockNPad / Layout::kAtomMN;
    static_assert(kMulticast == 1 || (kBMnMajor ? kNumAtomsB % 2 == 0 : (kBlockN / 2) % 8 == 0),
                  "multicast needs B to split into two 1024-byte aligned halves");
    constexpr u32 kHalfBBytes = Layout::kSmemB / 2;

    // m: rows of A/D (dense, contiguous: sum of M) or rows per group (masked).
    const u32 m = kCompiledM != 0 ? kCompiledM : m_runtime;
    const u32 n = kCompiledN != 0 ? kCompiledN : n_runtime;
    const u32 k = kCompiledK != 0 ? kCompiledK : k_runtime;

    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_d = smem;
    u8* smem_a = smem + Layout::kOffA;
    u8* smem_b = smem + Layout::kOffB;
    auto pipe = PipelineBarriers<kNumStages>::at(smem + Layout::kOffBarriers);

    const u32 warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const u32 thread_in_wg = threadIdx.x % 128;

    // Multicast: this CTA's rank in the 2-CTA cluster and its peer.
    const u32 cta_rank = kMulticast > 1 ? ptx::cluster_cta_rank() : 0u;
    const u32 peer_rank = cta_rank ^ 1u;

    // Empty barriers: every math thread arrives (one CTA), or each math warp of both CTAs (multicast). The PDL
    // wait covers the group layout as well (the previous kernel may write it).
    if (threadIdx.x == 0)
        sm90_gemm_prefetch_and_init<Epilogue::kUsesTensorMap>(
            pipe, kMulticast > 1 ? 2 * (Layout::kNumMathThreads / 32) : Layout::kNumMathThreads, tmap_d, tmap_a,
            tmap_b);
    sm90_gemm_wait_setup<kMulticast>();

    if (warpgroup == 0) {
        // ---------------- producer ----------------
        sm90_gemm_producer<Scheduler, kNumStages, kBlockN, Layout::kNumMathWarpgroups>(
            m, n, grouped, num_groups,
            [&](const Scheduler& scheduler, PipelineState<kNumStages>& st, i32 a_row0, i32 n0, i32 ga, i32 gb) {
                const u32 tile_k0 = scheduler.k_offset();
                const u32 num_k_blocks = ceil_div(scheduler.k_size(k), kBlockK);
                for (u32 kb = 0; kb < num_k_blocks; ++kb) {
                    pipe.producer_acquire(st);
                    u64* full = &pipe.full[st.stage];
                    ptx::mbarrier_arrive_expect_tx(full, Layout::kTxBytes);
                    const i32 k0 = static_cast<i32>(tile_k0 + kb * kBlockK);
                    // From smem itself: through the captured smem_a / smem_b, NVVM orders the address arithmetic
                    // of the multicast MN-major B loads differently (other SASS).
                    u8* a_slot = smem + Layout::kOffA + st.stage * Layout::kSmemA;
                    u8* b_slot = smem + Layout::kOffB + st.stage * Layout::kSmemB;
                    if constexpr (Scheduler::kKWalksGroups) {
                        // Batch-reduced: K block kb is K block kb % (blocks per batch) of the unit's batch kb / (blocks
                        // per batch).
                        static_assert(!kAMnMajor && !kBMnMajor && kMulticast == 1, "batch-reduced: K-major A and B");
                        const u32 blocks_per_batch = ceil_div(k, kBlockK);
                        const u32 in_unit = kb / blocks_per_batch;
                        const i32 k_in = static_cast<i32>((kb - in_unit * blocks_per_batch) * kBlockK);
                        const i32 batch = static_cast<i32>(scheduler.first_batch() + in_unit);
                        ptx::tma_load_3d(a_slot, tmap_a, full, k_in, a_row0, batch);
                        ptx::tma_load_3d(b_slot, tmap_b, full, k_in, n0, batch);
                        st.advance();
                        continue;
                    }
                    if constexpr (Scheduler::kAGroupMiddle) {
                        static_assert(!kAMnMajor && kMulticast == 1, "a {K, group, rows} map is K-major, no multicast");
                        ptx::tma_load_3d(a_slot, tmap_a, full, k0, ga, a_row0);
                    } else if constexpr (kAMnMajor) {
#pragma unroll
                        for (u32 i = 0; i < kBlockM / Layout::kAtomMN; ++i)
                            ptx::tma_load_3d(a_slot + i * Layout::kAtomBytes, tmap_a, full,
                                             a_row0 + static_cast<i32>(i * Layout::kAtomMN), k0, ga);
                    } else {
                        ptx::tma_load_3d(a_slot, tmap_a, full, k0, a_row0, ga);
                    }
                    if constexpr (kMulticast > 1) {
                        // This CTA's half of B, into the same offset of both CTAs' slot (the peer does the other).
                        if constexpr (kBMnMajor) {
#pragma unroll
                            for (u32 i = 0; i < kNumAtomsB / 2; ++i) {
                                const u32 atom = cta_rank * (kNumAtomsB / 2) + i;
                                ptx::tma_load_3d_multicast(b_slot + atom * Layout::kAtomBytes, tmap_b, full,
                                                           n0 + static_cast<i32>(atom * Layout::kAtomMN), k0, gb, 0x3);
                            }
                        } else {
                            ptx::tma_load_3d_multicast(b_slot + cta_rank * kHalfBBytes, tmap_b, full, k0,
                                                       n0 + static_cast<i32>(cta_rank * (kBlockN / 2)), gb, 0x3);
                        }
                    } else if constexpr (kBMnMajor) {
#pragma unroll
                        for (u32 i = 0; i < kNumAtomsB; ++i)
                            ptx::tma_load_3d(b_slot + i * Layout::kAtomBytes, tmap_b, full,
                                             n0 + static_cast<i32>(i * Layout::kAtomMN), k0, gb);
                    } else {
                        ptx::tma_load_3d(b_slot, tmap_b, full, k0, n0, gb);
                    }
                    st.advance();
                }
            });
    } else {
        // ---------------- math ----------------
        if constexpr (Layout::kNumMathWarpgroups > 1) ptx::setmaxnreg_inc<kSm90MathRegs>();
        const u32 math_wg = warpgroup - 1;
        const u32 lane = thread_in_wg % 32;
        auto release = [&](const PipelineState<kNumStages>& s) {
            if constexpr (kMulticast > 1) {
                pipe.consumer_release_pair(s, peer_rank, lane);
            } else {
                pipe.consumer_release(s);
            }
        };

        Scheduler scheduler(m, n, grouped, num_groups);
        Epilogue epilogue(smem_d, math_wg, thread_in_wg, tmap_d, d, ldd, c, ldc);
        PipelineState<kNumStages> st;

        // Descriptor steps per k16 (in units of 16 bytes): K-major +32 B, MN-major +16 rows * 128 B.
        constexpr u32 kStepA = kAMnMajor ? (16 * 128) >> 4 : 32 >> 4;
        constexpr u32 kStepB = kBMnMajor ? (16 * 128) >> 4 : 32 >> 4;
        // MN-atom stride (LBO) for MN-major operands; unused (and set to 1024) when one atom covers the
        // instruction's M (A: always 64) or N extent.
        constexpr u32 kLboB = kBlockN > Layout::kAtomMN ? Layout::kAtomBytes : 1024u;

        float acc[kNumAccum];
#pragma unroll
        for (u32 i = 0; i < kNumAccum; ++i) acc[i] = 0.0f;

        u32 m_block, n_block;
        while (scheduler.next(m_block, n_block)) {
            const u32 num_k_blocks = ceil_div(scheduler.k_size(k), kBlockK);
            if (Scheduler::kMayHaveEmptyK && num_k_blocks == 0) {
                // No K blocks (a K-grouped group with K == 0, an all-padding contiguous block): no stage is
                // loaded; D = C or zeros, up to d_row_end() (none for padding but with kZero). Stored from
                // a zero array rather than by zeroing acc: merging constants into the wgmma accumulators made
                // ptxas spill (BLOCK 128x256).
                float zeros[kNumAccum];
#pragma unroll
                for (u32 i = 0; i < kNumAccum; ++i) zeros[i] = 0.0f;
                epilogue.store(zeros, scheduler.d_row0(), n_block * kBlockN, scheduler.d_row_end(), n);
                continue;
            }
            PipelineState<kNumStages> prev = st;
            for (u32 kb = 0; kb < num_k_blocks; ++kb) {
                pipe.consumer_wait(st);
                const u32 a_addr = smem_addr(smem_a + st.stage * Layout::kSmemA + math_wg * 64 * kBlockK * 2);
                const u32 b_addr = smem_addr(smem_b + st.stage * Layout::kSmemB);
                const u64 desc_a = kAMnMajor ? ptx::make_smem_desc_mnmajor_sw128(a_addr, 1024u)
                                             : ptx::make_smem_desc_kmajor_sw128(a_addr);
                const u64 desc_b = kBMnMajor ? ptx::make_smem_desc_mnmajor_sw128(b_addr, kLboB)
                                             : ptx::make_smem_desc_kmajor_sw128(b_addr);
#pragma unroll
                for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(acc[i]);
                ptx::wgmma_fence();
#pragma unroll
                for (u32 kk = 0; kk < kBlockK / 16; ++kk) {
                    Wgmma::template mma<kAMnMajor, kBMnMajor>(desc_a + kStepA * kk, desc_b + kStepB * kk, acc,
                                                              kb != 0 || kk != 0);
                }
                ptx::wgmma_commit_group();
                // The previous stage's wgmmas are complete once at most this stage's group is pending.
                ptx::wgmma_wait_group<1>();
                if (kb != 0) {
                    release(prev);
                    prev.advance();
                }
                st.advance();
            }
            ptx::wgmma_wait_group<0>();
#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(acc[i]);
            release(prev);

            if constexpr (Scheduler::kPaddingRows == PaddingRows::kZero) {
                // Padding rows of a contiguous layout stored as zeros.
                const u32 row_lo = scheduler.d_row0() + math_wg * 64 + (thread_in_wg / 32) * 16 + lane / 4;
                const bool lo_ok = scheduler.row_valid(row_lo), hi_ok = scheduler.row_valid(row_lo + 8);
#pragma unroll
                for (u32 j = 0; j < kBlockN / 8; ++j) {
                    if (!lo_ok) acc[4 * j + 0] = acc[4 * j + 1] = 0.0f;
                    if (!hi_ok) acc[4 * j + 2] = acc[4 * j + 3] = 0.0f;
                }
            }
            if constexpr (Scheduler::kDColumnGroups) {
                epilogue.store(acc, scheduler.d_row0(), scheduler.d_col0() + n_block * kBlockN, scheduler.d_row_end(),
                               scheduler.d_col_end(n));
            } else {
                epilogue.store(acc, scheduler.d_row0(), n_block * kBlockN, scheduler.d_row_end(), n);
            }
        }
        ptx::grid_dependency_launch_dependents();
        epilogue.finish();
    }
    // The peer may still arrive on this CTA's empty barriers: neither CTA leaves before both are done.
    if constexpr (kMulticast > 1) ptx::cluster_sync();
}

}  // namespace deep_gemm
