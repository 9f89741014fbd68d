// SM90 FP8 block-scaled GEMM, "1D2D" recipe, BF16 output:
//     D[M, N] = sum_kb (A[:, kb] @ B[:, kb]^T) * sfa[m, kb] * sfb[n / 128, kb]
// A [M, K] e4m3 K-major with per-row-per-128-K scales (sfa, stored M-major: sfa[kb * stride + m]);
// B [N, K] e4m3 K-major with 128x128 block scales (sfb [ceil(N/128), ceil(K/128)] row-major).
//
// Persistent and warp-specialised. Block = warpgroup 0 (producer: one thread issues the TMA loads of
// the A tile, B tile and A scales of each 128-K block into a pipeline slot) + BLOCK_M/64 math
// warpgroups (each owns 64 rows of the tile). Per 128-K block each math warpgroup issues four
// m64nNk32 wgmmas into a scratch FP32 accumulator, waits, releases the slot, then promotes the scratch
// into the final accumulator scaled by sfa[row] * sfb[column block] (two-level accumulation). After the
// last K block the epilogue converts to BF16 and TMA-stores while the producer already loads the next
// tile.
//
// Shared memory (dynamic, 1024-byte aligned; the host computes the same size in
// csrc/jit_kernels/heuristics/sm90_fp8.hpp):
//   [D staging BLOCK_M*BLOCK_N*2][A slots S*BLOCK_M*128][B slots S*BLOCK_N*128][sfa slots S*BLOCK_M*4]
//   [full barriers S*8][empty barriers S*8]
#pragma once

#include "../common/pipeline.cuh"
#include "../common/types.cuh"
#include "../epilogue/bf16_direct_store.cuh"
#include "../epilogue/bf16_tma_store.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma.cuh"
#include "../scheduler/gemm_scheduler.cuh"

namespace deep_gemm {

template <u32 kBlockM, u32 kBlockN, u32 kNumStages>
struct Sm90Fp8Gemm1d2dLayout {
    static constexpr u32 kBlockK = 128;
    static constexpr u32 kNumMathWarpgroups = kBlockM / 64;
    static constexpr u32 kNumMathThreads = 128 * kNumMathWarpgroups;
    static constexpr u32 kNumThreads = 128 + kNumMathThreads;

    static constexpr u32 kSmemD = kBlockM * kBlockN * 2;
    static constexpr u32 kSmemA = kBlockM * kBlockK;
    static constexpr u32 kSmemB = kBlockN * kBlockK;
    static constexpr u32 kSmemSfa = kBlockM * 4;
    static constexpr u32 kOffA = kSmemD;
    static constexpr u32 kOffB = kOffA + kNumStages * kSmemA;
    static constexpr u32 kOffSfa = kOffB + kNumStages * kSmemB;
    static constexpr u32 kOffBarriers = kOffSfa + kNumStages * kSmemSfa;
    static constexpr u32 kSmemBytes = kOffBarriers + kNumStages * 2 * 8;
    // Bytes TMA delivers per slot (out-of-bounds parts are zero-filled and still counted).
    static constexpr u32 kTxBytes = kSmemA + kSmemB + kSmemSfa;

    static_assert(kBlockM == 64 || kBlockM == 128, "BLOCK_M must be 64 or 128");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 256, "BLOCK_N: multiple of 16 in [16, 256]");
    static_assert(kSmemD % 1024 == 0 && kSmemA % 1024 == 0 && kSmemB % 1024 == 0,
                  "128B-swizzled tiles must stay 1024-byte aligned");
    static_assert(kSmemSfa % 128 == 0, "TMA destinations are 128-byte aligned");
};

// Register split: the producer warpgroup gives registers back, the math warpgroups take them.
constexpr u32 kSm90ProducerRegs = 40;
constexpr u32 kSm90MathRegs = 232;

template <u32 kBlockM, u32 kBlockN, u32 kNumStages, u32 kGroupN, u32 kCompiledM, u32 kCompiledN,
          u32 kCompiledK, typename Scheduler = GroupedOrderScheduler<kBlockM, kBlockN, kGroupN>,
          typename Epilogue = Bf16TmaStoreEpilogue<kBlockM, kBlockN>>
__device__ __forceinline__ void sm90_fp8_gemm_1d2d_impl(const TmaDescriptor& tmap_a, const TmaDescriptor& tmap_b,
                                                        const TmaDescriptor& tmap_sfa,
                                                        const TmaDescriptor& tmap_d, const float* __restrict__ sfb,
                                                        void* d, u32 ldd, u32 m_runtime, u32 n_runtime,
                                                        u32 k_runtime) {
    using Layout = Sm90Fp8Gemm1d2dLayout<kBlockM, kBlockN, kNumStages>;
    using Wgmma = ptx::WgmmaFp8<kBlockN>;
    constexpr u32 kBlockK = Layout::kBlockK;
    constexpr u32 kNumAccum = kBlockN / 2;
    static_assert(Epilogue::kSmemBytes == Layout::kSmemD, "epilogue staging size");

    const u32 m = kCompiledM != 0 ? kCompiledM : m_runtime;
    const u32 n = kCompiledN != 0 ? kCompiledN : n_runtime;
    const u32 k = kCompiledK != 0 ? kCompiledK : k_runtime;
    const u32 num_k_blocks = ceil_div(k, kBlockK);

    extern __shared__ __align__(1024) u8 smem[];
    u8* smem_d = smem;
    u8* smem_a = smem + Layout::kOffA;
    u8* smem_b = smem + Layout::kOffB;
    float* smem_sfa = reinterpret_cast<float*>(smem + Layout::kOffSfa);
    PipelineBarriers<kNumStages> pipe{reinterpret_cast<u64*>(smem + Layout::kOffBarriers),
                                      reinterpret_cast<u64*>(smem + Layout::kOffBarriers) + kNumStages};

    const u32 warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const u32 thread_in_wg = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        ptx::tma_prefetch_descriptor(tmap_a);
        ptx::tma_prefetch_descriptor(tmap_b);
        ptx::tma_prefetch_descriptor(tmap_sfa);
        if constexpr (Epilogue::kUsesTensorMap) ptx::tma_prefetch_descriptor(tmap_d);
        pipe.init(Layout::kNumMathThreads);
    }
    __syncthreads();
    // PDL: inputs may be written by the previous kernel; nothing global is touched before this.
    ptx::grid_dependency_wait();

    if (warpgroup == 0) {
        // ---------------- producer ----------------
        if constexpr (Layout::kNumMathWarpgroups > 1) ptx::setmaxnreg_dec<kSm90ProducerRegs>();
        if (threadIdx.x == 0) {
            Scheduler scheduler(m, n);
            PipelineState<kNumStages> st;
            u32 m_block, n_block;
            while (scheduler.next(m_block, n_block)) {
                const i32 m0 = static_cast<i32>(m_block * kBlockM);
                const i32 n0 = static_cast<i32>(n_block * kBlockN);
                for (u32 kb = 0; kb < num_k_blocks; ++kb) {
                    pipe.producer_acquire(st);
                    u64* full = &pipe.full[st.stage];
                    ptx::mbarrier_arrive_expect_tx(full, Layout::kTxBytes);
                    const i32 k0 = static_cast<i32>(kb * kBlockK);
                    ptx::tma_load_2d(smem_a + st.stage * Layout::kSmemA, tmap_a, full, k0, m0);
                    ptx::tma_load_2d(smem_b + st.stage * Layout::kSmemB, tmap_b, full, k0, n0);
                    ptx::tma_load_2d(smem_sfa + st.stage * kBlockM, tmap_sfa, full, m0, static_cast<i32>(kb));
                    st.advance();
                }
            }
            ptx::grid_dependency_launch_dependents();
        }
    } else {
        // ---------------- math ----------------
        if constexpr (Layout::kNumMathWarpgroups > 1) ptx::setmaxnreg_inc<kSm90MathRegs>();
        const u32 math_wg = warpgroup - 1;
        const u32 warp = thread_in_wg / 32, lane = thread_in_wg % 32;
        // This thread's two accumulator rows inside the tile: row_lo and row_lo + 8.
        const u32 row_lo = math_wg * 64 + warp * 16 + lane / 4;

        // B scales: a tile of BLOCK_N columns starting at n0 touches scale blocks n0/128, +1, +2.
        constexpr bool kUniformScaleB = (128 % kBlockN) == 0;
        constexpr bool kMayNeedThird = kBlockN > 128 && (256 % kBlockN) != 0;
        const u32 num_scale_rows_b = ceil_div(n, 128u);

        Scheduler scheduler(m, n);
        Epilogue epilogue(smem_d, math_wg, thread_in_wg, tmap_d, d, ldd);
        PipelineState<kNumStages> st;

        float acc[kNumAccum];
        float fin[kNumAccum];
#pragma unroll
        for (u32 i = 0; i < kNumAccum; ++i) acc[i] = 0.0f;

        u32 m_block, n_block;
        while (scheduler.next(m_block, n_block)) {
            const u32 m0 = m_block * kBlockM;
            const u32 n0 = n_block * kBlockN;
            const u32 sb0 = n0 / 128;
            const float* sfb0 = sfb + sb0 * num_k_blocks;
            const float* sfb1 = sfb + min_of(sb0 + 1, num_scale_rows_b - 1) * num_k_blocks;
            const float* sfb2 = sfb + min_of(sb0 + 2, num_scale_rows_b - 1) * num_k_blocks;
            const u32 bound1 = (sb0 + 1) * 128 - n0;  // first local column of scale block sb0 + 1
            const u32 bound2 = bound1 + 128;          // first local column of scale block sb0 + 2

#pragma unroll
            for (u32 i = 0; i < kNumAccum; ++i) fin[i] = 0.0f;

            for (u32 kb = 0; kb < num_k_blocks; ++kb) {
                // Global scale loads first: their latency hides behind the barrier wait and the MMAs.
                const float b0 = __ldg(sfb0 + kb);
                const float b1 = kUniformScaleB ? b0 : __ldg(sfb1 + kb);
                const float b2 = kMayNeedThird ? __ldg(sfb2 + kb) : b1;

                pipe.consumer_wait(st);
                const float* sfa_slot = smem_sfa + st.stage * kBlockM;
                const float a_lo = sfa_slot[row_lo];
                const float a_hi = sfa_slot[row_lo + 8];

                const u64 desc_a = ptx::make_smem_desc_kmajor_sw128(
                    smem_addr(smem_a + st.stage * Layout::kSmemA + math_wg * 64 * kBlockK));
                const u64 desc_b = ptx::make_smem_desc_kmajor_sw128(smem_addr(smem_b + st.stage * Layout::kSmemB));
#pragma unroll
                for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(acc[i]);
                ptx::wgmma_fence();
#pragma unroll
                for (u32 kk = 0; kk < kBlockK / 32; ++kk) {
                    // +32 bytes of K per step = +2 in the (address >> 4) field.
                    Wgmma::mma(desc_a + 2 * kk, desc_b + 2 * kk, acc, kk != 0);
                }
                ptx::wgmma_commit_group();
                ptx::wgmma_wait_group<0>();
#pragma unroll
                for (u32 i = 0; i < kNumAccum; ++i) ptx::fence_operand(acc[i]);

                // The slot's tiles (read by wgmma, now complete) and scales (loaded above) are done.
                pipe.consumer_release(st);
                st.advance();

                // Promote: fin += acc * sfa[row] * sfb[column block].
#pragma unroll
                for (u32 j = 0; j < kBlockN / 8; ++j) {
                    float b;
                    if constexpr (kUniformScaleB) {
                        b = b0;
                    } else {
                        const u32 col = j * 8;  // 8-column groups never straddle a 128 boundary
                        b = col < bound1 ? b0 : ((kMayNeedThird && col >= bound2) ? b2 : b1);
                    }
                    const float s_lo = a_lo * b, s_hi = a_hi * b;
                    fin[4 * j + 0] += acc[4 * j + 0] * s_lo;
                    fin[4 * j + 1] += acc[4 * j + 1] * s_lo;
                    fin[4 * j + 2] += acc[4 * j + 2] * s_hi;
                    fin[4 * j + 3] += acc[4 * j + 3] * s_hi;
                }
            }

            epilogue.store(fin, m0, n0, m, n);
        }
        ptx::grid_dependency_launch_dependents();
        epilogue.finish();
    }
}

}  // namespace deep_gemm
