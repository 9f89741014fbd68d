// Producer/consumer shared-memory pipeline: kNumStages slots, each with a "full" mbarrier (the producer
// arrives once with expect_tx; TMA completes the bytes) and an "empty" mbarrier (every consumer thread
// arrives once when it no longer reads the slot). Both sides walk slots in the same order; the phase
// bit flips every time the slot index wraps.
//
//   producer:  wait(empty[s], phase ^ 1)  -> arrive_expect_tx(full[s]) -> TMA loads on full[s]
//   consumer:  wait(full[s], phase)       -> read slot                 -> arrive(empty[s])
//
// The producer's first pass waits for parity 1 on fresh barriers, which succeeds immediately.
#pragma once

#include "../common/types.cuh"
#include "../ptx/mbarrier.cuh"

namespace deep_gemm {

template <u32 kNumStages>
struct PipelineState {
    u32 stage = 0;
    u32 phase = 0;

    __device__ __forceinline__ void advance() {
        if (++stage == kNumStages) {
            stage = 0;
            phase ^= 1;
        }
    }
};

template <u32 kNumStages>
struct PipelineBarriers {
    u64* full;   // [kNumStages]
    u64* empty;  // [kNumStages]

    // The barriers of a ring laid out at `area`: the kNumStages full barriers, then the empty ones.
    __device__ __forceinline__ static PipelineBarriers at(u8* area) {
        u64* barriers = reinterpret_cast<u64*>(area);
        return {barriers, barriers + kNumStages};
    }

    // One thread initialises; the caller makes the CTA synchronise afterwards.
    __device__ __forceinline__ void init(u32 num_consumer_arrivals) const {
#pragma unroll
        for (u32 s = 0; s < kNumStages; ++s) {
            ptx::mbarrier_init(&full[s], 1);
            ptx::mbarrier_init(&empty[s], num_consumer_arrivals);
        }
        ptx::mbarrier_init_fence();
    }

    __device__ __forceinline__ void producer_acquire(const PipelineState<kNumStages>& st) const {
        ptx::mbarrier_wait(&empty[st.stage], st.phase ^ 1);
    }
    __device__ __forceinline__ void producer_commit(const PipelineState<kNumStages>& st, u32 bytes) const {
        ptx::mbarrier_arrive_expect_tx(&full[st.stage], bytes);
    }
    __device__ __forceinline__ void consumer_wait(const PipelineState<kNumStages>& st) const {
        ptx::mbarrier_wait(&full[st.stage], st.phase);
    }
    __device__ __forceinline__ void consumer_release(const PipelineState<kNumStages>& st) const {
        ptx::mbarrier_arrive(&empty[st.stage]);
    }
    // One arrival per consumer warp (lane 0, after the warp converged); init() count = consumer warps.
    __device__ __forceinline__ void consumer_release_warp(const PipelineState<kNumStages>& st, u32 lane) const {
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&empty[st.stage]);
    }
    // With TMA multicast across a 2-CTA cluster each producer also writes the peer's slot, so a slot is free
    // only when the consumers of both CTAs are done with it: one arrival per consumer warp (lane 0, after
    // the warp converged) on this CTA's and on the peer's empty barrier. init() count = 2 * consumer warps.
    __device__ __forceinline__ void consumer_release_pair(const PipelineState<kNumStages>& st, u32 peer_rank,
                                                          u32 lane) const {
        __syncwarp();
        if (lane == 0) {
            ptx::mbarrier_arrive(&empty[st.stage]);
            ptx::mbarrier_arrive_cluster(&empty[st.stage], peer_rank);
        }
    }
};

}  // namespace deep_gemm
