// Hand-written helpers around the warpgroup MMA (wgmma, sm_90a): shared-memory matrix descriptors and the
// wgmma fence / commit / wait instructions. The instruction wrappers themselves (WgmmaFp8, WgmmaBf16, one per
// N) are generated into wgmma_atoms.cuh by gen_wgmma.py.
#pragma once

#include "../common/types.cuh"

namespace deep_gemm::ptx {

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"):
//   bits  0-13  start address >> 4
//   bits 16-29  leading-dimension byte offset >> 4 (unused for K-major operands with a swizzle whose span
//               covers the instruction's K extent: here 32 bytes of K inside a 128-byte swizzle row)
//   bits 32-45  stride-dimension byte offset >> 4: distance between 8-row groups = 8 rows x 128 B = 1024
//   bits 49-51  matrix base offset (0: every tile is 1024-byte aligned)
//   bits 62-63  swizzle mode: 1 = 128-byte swizzle
// The operand is a K-major tile written by TMA with 128-byte swizzle: row r (of M or N) at r * 128
// bytes, 16-byte chunks XOR-ed with (r % 8). The k-th 32-byte K slice is addressed by adding 32*k bytes
// to the start address (the swizzle is applied by the hardware on the final address bits).
__device__ __forceinline__ u64 make_smem_desc_kmajor_sw128(u32 smem_address) {
    u64 desc = 0;
    desc |= static_cast<u64>((smem_address & 0x3FFFFu) >> 4);
    desc |= static_cast<u64>(1u) << 16;           // LBO = 16 bytes (ignored for this layout)
    desc |= static_cast<u64>(1024u >> 4) << 32;   // SBO = 1024 bytes
    desc |= static_cast<u64>(1u) << 62;           // 128-byte swizzle
    return desc;
}

// General form: LBO / SBO in bytes (multiples of 16), swizzle mode 0 none, 1 = 128 B, 2 = 64 B, 3 = 32 B.
__device__ __forceinline__ u64 make_smem_desc(u32 smem_address, u32 lbo_bytes, u32 sbo_bytes, u32 swizzle_mode) {
    u64 desc = 0;
    desc |= static_cast<u64>((smem_address & 0x3FFFFu) >> 4);
    desc |= static_cast<u64>((lbo_bytes >> 4) & 0x3FFFu) << 16;
    desc |= static_cast<u64>((sbo_bytes >> 4) & 0x3FFFu) << 32;
    desc |= static_cast<u64>(swizzle_mode & 3u) << 62;
    return desc;
}

// MN-major operand (wgmma imm-trans = 1) written by TMA with 128-byte swizzle from an MN-contiguous global
// tensor: the tile is cut into "atoms" of 64 MN elements (128 bytes, 16-bit types) x kBlockK rows of K;
// inside an atom, K row r sits at r * 128 bytes with 16-byte chunks XOR-ed with (r % 8), exactly the
// K-major picture with the roles of the two dimensions exchanged. For MN-major layouts the PTX ISA
// ("Shared Memory Matrix Layout", "Matrix Descriptor Format") reads:
//   SBO = byte distance between consecutive groups of 8 K rows       = 8 x 128 = 1024
//   LBO = byte distance between consecutive 64-element MN atoms      = kBlockK x 128 (atom size)
// The k-th 16-element K slice starts 16 rows = 2048 bytes further (a whole number of 1024-byte swizzle
// repeats, so no base-offset bits are needed). When the instruction spans a single MN atom (A: M = 64;
// B with N <= 64) the MN-atom stride is never used, and the caller may pass lbo = 1024 as well.
__device__ __forceinline__ u64 make_smem_desc_mnmajor_sw128(u32 smem_address, u32 atom_stride_bytes) {
    return make_smem_desc(smem_address, atom_stride_bytes, 1024u, 1u);
}

// Makes register (accumulator) writes by ordinary instructions visible to the following wgmma.
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit_group() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Compiler-only fence on an accumulator register: keeps reads of wgmma results after wgmma_wait_group
// and writes before the next wgmma.
__device__ __forceinline__ void fence_operand(float& reg) {
    asm volatile("" : "+f"(reg)::"memory");
}

// One 128-K block of the FP8 GEMMs: four k32 wgmmas (Wgmma: a WgmmaFp8 of wgmma_atoms.cuh) from K-major
// 128-byte-swizzled tiles at shared-memory addresses a_tile / b_tile into `acc` (the first overwrites it),
// committed as one group.
template <typename Wgmma, u32 kNumAccum>
__device__ __forceinline__ void wgmma_fp8_kmajor_k128(u32 a_tile, u32 b_tile, float (&acc)[kNumAccum]) {
    const u64 desc_a = make_smem_desc_kmajor_sw128(a_tile);
    const u64 desc_b = make_smem_desc_kmajor_sw128(b_tile);
#pragma unroll
    for (u32 i = 0; i < kNumAccum; ++i) fence_operand(acc[i]);
    wgmma_fence();
#pragma unroll
    for (u32 kk = 0; kk < 128 / 32; ++kk) {
        // +32 bytes of K per step = +2 in the (address >> 4) field.
        Wgmma::mma(desc_a + 2 * kk, desc_b + 2 * kk, acc, kk != 0);
    }
    wgmma_commit_group();
}

// One 32-K step of the FP8 GEMMs with block-32 scales: the kk-th k32 wgmma (kk < 4) of a 128-K block from the
// tiles of wgmma_fp8_kmajor_k128 into `acc`, which it overwrites (each step is promoted with its own scales),
// committed as its own group.
template <typename Wgmma, u32 kNumAccum>
__device__ __forceinline__ void wgmma_fp8_kmajor_k32_step(u32 a_tile, u32 b_tile, u32 kk, float (&acc)[kNumAccum]) {
    const u64 desc_a = make_smem_desc_kmajor_sw128(a_tile);
    const u64 desc_b = make_smem_desc_kmajor_sw128(b_tile);
#pragma unroll
    for (u32 i = 0; i < kNumAccum; ++i) fence_operand(acc[i]);
    wgmma_fence();
    Wgmma::mma(desc_a + 2 * kk, desc_b + 2 * kk, acc, false);
    wgmma_commit_group();
}

}  // namespace deep_gemm::ptx
