// Tensor-memory-accelerator (cp.async.bulk.tensor) wrappers. The tensor map is passed by reference to a
// `const __grid_constant__` kernel parameter, so its generic address points into parameter space.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

__device__ __forceinline__ u64 tmap_addr(const TmaDescriptor& desc) {
    return reinterpret_cast<u64>(&desc);
}

__device__ __forceinline__ void tma_prefetch_descriptor(const TmaDescriptor& desc) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(tmap_addr(desc)) : "memory");
}

// 2-D tile load global -> shared, completing `bytes` of transactions on `bar`. c0 is the innermost
// (contiguous) coordinate. Out-of-bounds elements are filled with zeros (and still count as bytes).
__device__ __forceinline__ void tma_load_2d(void* dst, const TmaDescriptor& desc, u64* bar, i32 c0, i32 c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
        "[%2];" ::"r"(smem_addr(dst)),
        "l"(tmap_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
        : "memory");
}

// 3-D tile load (c0 innermost, c2 outermost, e.g. the group index of a [G, rows, cols] tensor); same
// completion and out-of-bounds rules as tma_load_2d.
__device__ __forceinline__ void tma_load_3d(void* dst, const TmaDescriptor& desc, u64* bar, i32 c0, i32 c1, i32 c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
        "[%2];" ::"r"(smem_addr(dst)),
        "l"(tmap_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// 3-D tile load multicast to the CTAs of this cluster named in `cta_mask`: the box lands at the same
// shared-memory offset in each of them and completes `bytes` on the mbarrier at the same offset in each.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TmaDescriptor& desc, u64* bar, i32 c0, i32 c1,
                                                      i32 c2, u16 cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
        "l"(tmap_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
        : "memory");
}

// 2-D tile load multicast to the CTAs of this cluster named in `cta_mask` (same landing/completion rules
// as tma_load_3d_multicast).
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TmaDescriptor& desc, u64* bar, i32 c0, i32 c1,
                                                      u16 cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_addr(dst)),
        "l"(tmap_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
        : "memory");
}

// 2-D tile store shared -> global in the current bulk group; out-of-bounds elements are not written.
__device__ __forceinline__ void tma_store_2d(const TmaDescriptor& desc, const void* src, i32 c0, i32 c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                     tmap_addr(desc)),
                 "r"(smem_addr(src)), "r"(c0), "r"(c1)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit_group() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N bulk groups are pending *reading* their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N bulk groups are pending completion (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace deep_gemm::ptx
