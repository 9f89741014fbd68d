// The SM90 GEMM launch path's public face: one description of a GEMM call (GemmDesc), the one kernel key
// every SM90 GEMM kernel is compiled and looked up by (GemmKernelKey), and the entries: run_gemm (launch a
// described call), plan_gemm (the kernel a call would compile, without a GPU) and gemm_kernel_source (the
// generated translation unit of a key). Torch-free: the torch layer (csrc/apis) validates tensors and fills
// the description. How the launch path runs a call: sm90_gemm_launch.hpp.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../../../deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d_params.hpp"  // k_grouped_scale_blocks
#include "../heuristics/common.hpp"
#include "common.hpp"

namespace deep_gemm::kernels {

// The SM90 GEMM kernels (the dtypes and scale recipe are the kernel's):
//   kFp8_1d2d  D bf16 = A @ B^T, FP8 operands, 1x128 A scales and 128x128 B scales; dense, M-grouped and
//              head-batched (fp8_einsum); dense also 1x32 and 32x32 (block-32 scales, GemmProblem::sf_gran_k)
//   kFp8_1d1d  D fp32 = C + A @ B^T, FP8 operands, 1x128 scales on both (recipe (1, 1, 128)); dense
//   kBf16      D bf16 or fp32 = C + A @ B^T, BF16 operands of either major; dense, M-grouped, K-grouped
enum class GemmKernel : uint8_t { kFp8_1d2d = 0, kFp8_1d1d = 1, kBf16 = 2 };

// Everything about a call that picks the kernel and its config, without pointers: what plan_gemm takes.
struct GemmProblem {
    GemmKernel kernel = GemmKernel::kFp8_1d2d;
    GemmGroupedMode mode = GemmGroupedMode::kNone;
    // The calling op, for errors and logs (a string literal). Only the FP8 1D1D kernel, which serves several
    // ops, uses it; the others name the op from the mode (and BF16 from the majors).
    const char* op = "fp8_gemm_nt";
    int m = 0, n = 0, k = 0;  // grouped: contiguous m = sum of M, masked m = max_m, K-grouped k = sum of K
    int num_groups = 0;       // grouped modes
    int expected_m = 0;       // masked: rows per group the config is chosen for (0: max_m)
    int alignment = 128;      // contiguous: row alignment of each group (a multiple of 128)
    // Contiguous padding rows (rows of no group): true writes them as zeros; false (DeepGEMM's SM90 behaviour)
    // computes those of an alignment block that starts in a group with that group's B and stores them, and
    // leaves alignment blocks that start in padding unwritten.
    bool ensure_zero_padding = true;
    bool a_k_major = true, b_k_major = true;  // BF16 (the FP8 kernels take K-major operands only)
    bool d_fp32 = false;                      // BF16: float32 D (else bfloat16)
    // Set by run_gemm from the operands (plan_gemm: the caller's): a C is added in the epilogue (FP8 1D1D,
    // BF16), and D can be stored through TMA (16-byte aligned base, row stride a multiple of 8 elements).
    bool with_c = false;
    bool d_tma_ok = true;
    bool c_fp32 = false;  // FP8 1D2D with C: C is float32 (else bfloat16, D's dtype)
    // BF16 dense: TMA multicast of B over 2-CTA clusters, 0 = heuristic, 1 = off, 2 = on when legal.
    int multicast = 0;
    // BF16 batch-reduced (einsum 'bmk,bnk->mn'): the batches are split over this many CTAs per tile, each
    // storing an FP32 partial tile at rows [split * M, split * M + M) of D (the caller adds them up).
    int batch_splits = 1;
    // set_block_size_multiple_of: the config's BLOCK_M and BLOCK_N must be multiples of these (else
    // jit::Error when no config is).
    int block_m_multiple = 1, block_n_multiple = 1;
    // Which of m/n/k are baked into the kernel as constants (letters m/n/k); the others are runtime.
    std::string_view compiled_dims = "nk";  // must outlive the call
    int num_sms = 0;                        // SMs the persistent grid may use (<= 0 or more than the device: all)
    bool pdl = false;                       // programmatic dependent launch
    int device = 0;
    // FP8 1D2D dense, fp8_gemm_nt_skip_head_mid: D is head-split (left, mid, right); n counts the computed
    // columns, num_heads * (left + right); D has num_heads * (left + mid + right). All 0: a plain D.
    int head_left = 0, head_mid = 0, head_right = 0;
    // FP8 K-grouped: group g owns k_grouped_scale_blocks(K_g, sf_group_align) scale blocks after the previous
    // groups' (128: the compact layout, ceil(K_g / 128); use_padded_sf_layout: the caller's K alignment).
    // run_k_grouped_fp8_gemm / plan_k_grouped_fp8_gemm derive from it and the groups' K the kernel variant
    // sf_k_align and the scale tensors' blocks sf_k_blocks; both stay 0 (the kernel finds each group's scales
    // at its K prefix / 128; ceil(k / 128) blocks) when that is where they are.
    int sf_group_align = 128;
    int sf_k_align = 0;
    int sf_k_blocks = 0;
    // FP8 1D2D masked (m_grouped_fp8_gemm_nt_masked's max_block_n / enable_overlap): the config's BLOCK_N at most
    // max_block_n (0: no cap), and with tile_signal each stored tile is counted in operands.signal
    // (epilogue/tile_signal.cuh).
    int max_block_n = 0;
    bool tile_signal = false;
    // FP8 1D2D dense: the scales' K granularity, 128 (recipe (1, 128, 128)) or 32 (recipe (1, 32, 32): sfa per row
    // per 32 K, sfb per 32x32 block).
    int sf_gran_k = 128;
};

// The grouped modes a kernel host asks about (one definition for the FP8 and BF16 hosts), of a mode or a problem
// (and of a kernel key, below).
inline bool is_masked(GemmGroupedMode mode) { return mode == GemmGroupedMode::kMGroupedMasked; }
inline bool is_k_grouped(GemmGroupedMode mode) { return mode == GemmGroupedMode::kKGroupedContiguous; }
inline bool is_contiguous(GemmGroupedMode mode) {
    return mode == GemmGroupedMode::kMGroupedContiguous || mode == GemmGroupedMode::kMGroupedContiguousPsum;
}
inline bool is_masked(const GemmProblem& p) { return is_masked(p.mode); }
inline bool is_k_grouped(const GemmProblem& p) { return is_k_grouped(p.mode); }
inline bool is_contiguous(const GemmProblem& p) { return is_contiguous(p.mode); }

// The tensors of a call (unused ones null / 0). Strides are in elements.
//   a    FP8: [M, K] (masked [G, max_m, K], a_group_stride); BF16 K-major [M, K] or MN-major stored [K, M]
//   b    [N, K] (M-grouped [G, N, K], b_group_stride); BF16 MN-major: stored [K, N] ([G, K, N])
//   sfa  FP8, float32 M-major: element (m, kb) at sfa[kb * sfa_stride + m] (masked: + g * sfa_group_stride)
//   sfb  FP8 1D2D: float32 [(G,) ceil(N/128), ceil(K/128)] packed; block-32 (sfa's K index per 32 K):
//        [ceil(N/32), 4 * ceil(K/128)], 16-byte aligned, zeros past ceil(K/32); 1D1D: N-major like sfa, sfb_stride
//   d    [M, N] (masked [G, max_m, N] contiguous across groups: d_group_stride == max_m * ldd)
//   c    optional, as d (may be d); K-grouped and masked BF16: c_group_stride == M * ldc
//   host_ks  K-grouped FP8 (1D1D): K_g of each group on the host; the kernel reads no K from the GPU
//   grouped  int32 on the GPU: contiguous grouped_layout [sum_M] (psum layout: group ends [G]), masked
//            masked_m [G], K-grouped ks [G]; the einsum modes read none (grouped_array_name)
struct GemmOperands {
    const void* a = nullptr;
    const void* b = nullptr;
    const float* sfa = nullptr;
    const float* sfb = nullptr;
    void* d = nullptr;
    const void* c = nullptr;
    const int* grouped = nullptr;
    const int64_t* host_ks = nullptr;  // K-grouped FP8: the G values of K_g on the host (its per-group tensor maps)
    int* signal = nullptr;  // tile_signal: int32 [>= G * ceil(max_m / 64)], one counter per (group, M block)
    int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0, sfa_stride = 0, sfb_stride = 0;
    int64_t a_group_stride = 0, b_group_stride = 0, sfa_group_stride = 0, d_group_stride = 0, c_group_stride = 0;
    CUstream stream = nullptr;
};

struct GemmDesc {
    GemmProblem problem;
    GemmOperands operands;
};

// The tile a call ran with (0 x 0 when nothing launched: M or N is 0).
struct GemmTile {
    int block_m = 0, block_n = 0;
};

// Chooses a config (memoized per shape), builds/loads the kernel (memoized per key) and launches it; a call
// with the same arguments as a recent one on this thread only launches. Violated preconditions raise
// jit::Error naming the op, never crash. K == 0 is the caller's (D = C or zeros).
GemmTile run_gemm(const GemmDesc& desc);

// K-grouped FP8 (kernel kFp8_1d1d, mode kKGroupedContiguous, num_groups G, k = sum of K): for each group g,
// d[g] = c[g] + A_g @ B_g^T, with A_g [M, K_g] and B_g [N, K_g] K-major and stored back to back from a and b
// (lda, ldb unused; K_g a multiple of 16), sfa / sfb MN-major with group g's
// k_grouped_scale_blocks(K_g, problem.sf_group_align) rows after the previous groups' (sfa_stride, sfb_stride), d
// and c [G, M, N] (ldd = ldc = N, d_group_stride = c_group_stride = M * N). `ks` holds the G values of K_g on
// the host. One persistent launch of the 1D1D kernel's K-grouped entry per 32 groups
// (Sm90Fp8KGroupedMaps::kMaxGroups), with every group's A / B tensor maps in the kernel parameters; a group
// with K_g == 0 stores c[g] or zeros. When sum(ks) == 0 nothing launches (the caller's: d = c or zeros, as
// K == 0 is for run_gemm).
void run_k_grouped_fp8_gemm(const GemmDesc& desc, std::span<const int64_t> ks);

// The compile-time part of one kernel instance, for every SM90 GEMM kernel: compared and hashed bytewise
// (no padding). Fields a kernel does not have stay at their defaults.
struct GemmKernelKey {
    GemmKernel kernel = GemmKernel::kFp8_1d2d;
    uint8_t mode = 0;      // GemmGroupedMode
    uint8_t epilogue = 0;  // heuristics::Sm90GemmEpilogue: 0 bf16 TMA store, 1 bf16 direct, 2 FP32 / with C
    uint8_t padding = 0;   // contiguous modes (FP8 1D2D, BF16): PaddingRows (0 unspecified, 1 zero)
    uint8_t pipelined = 0;  // FP8 1D2D promotion overlap: 0 none, 1 two scratch accumulators
    uint8_t multicast = 0;  // 0 no cluster; 1 2-CTA cluster sharing B (M-block pairs); 2 sharing A (FP8 1D2D)
    bool a_mn_major = false, b_mn_major = false;  // BF16
    bool d_fp32 = false, with_c = false;          // BF16 (with_c also FP8 1D1D)
    bool c_fp32 = false;                          // FP8 1D2D with C: C float32 (else bfloat16)
    uint8_t split_k = 0;  // FP8 1D2D dense: K split over this many units per tile (0 = off)
    uint8_t prefetch_c = 0;  // FP8 1D1D with C: C's tile pulled into L2 a few K blocks before the epilogue
    uint8_t batch_splits = 0;  // BF16 batch-reduced: the batches split over this many CTAs per tile (0 = off)
    uint8_t tile_signal = 0;  // FP8 1D2D masked: each stored tile counted in a signal (GemmProblem::tile_signal)
    uint8_t sf_gran_k = 0;  // FP8 1D2D: the scales' K granularity when not 128 (32: block-32 scales), else 0
    int32_t block_m = 128, block_n = 128, num_stages = 4, group_n = 8;
    int32_t group_align = 0;  // contiguous modes: the group alignment (rows) where the scheduler uses it (the psum
                              // layout, or unspecified padding rows); else 0
    uint32_t m = 0, n = 0, k = 0;  // compiled-in dims, 0 = runtime
    uint32_t head_left = 0, head_mid = 0, head_right = 0;  // FP8 1D2D head-split epilogue (GemmProblem); 0 = none
    uint32_t sf_k_align = 0;  // FP8 1D1D K-grouped: GemmProblem::sf_k_align (0 = scales at the K prefix / 128)
    bool operator==(const GemmKernelKey&) const = default;
};
static_assert(std::has_unique_object_representations_v<GemmKernelKey>, "GemmKernelKey is compared bytewise");
inline bool is_k_grouped(const GemmKernelKey& key) { return is_k_grouped(GemmGroupedMode(key.mode)); }

// The kernel key of a kernel's config: tile, stages, scheduler group and the FP8 1D2D knobs set, the FP8 1D1D
// kernel's one epilogue, every other field at its default (the kernels' kernel_key fills them in for a call).
GemmKernelKey gemm_kernel_key(GemmKernel kernel, const heuristics::Sm90GemmConfig& config);

// The generated translation unit of a key (used by the ops, plan_gemm and the compile-only tests).
GemmKernelSource gemm_kernel_source(const GemmKernelKey& key);

// The start of a generated source: the one wgmma specialization per operand type the kernel uses (N, 0 =
// none), so NVRTC / NVCC parse one of ptx/wgmma_atoms.cuh's 64 instead of all of them (~40 ms of a compile).
std::string wgmma_selection(int fp8_n, int bf16_n);

// The grouped layout of a key, shared by the kernels with M-grouped modes (FP8 1D2D, BF16):
//   set_grouped_layout     the mode; for the contiguous modes the padding rule and the group alignment
//                          (padding rows are found through the group alignment, which must be a multiple of
//                          key.block_m, or of 128 for 256-row tiles: jit::Error naming `op` otherwise)
//   scheduler_type         the device scheduler of the key (template arguments included): the grouped
//                          mode's, or for a dense key `dense` (e.g. "GroupedOrderScheduler", the kernel's choice)
//   grouped_symbol_suffix  "_contig" / "_masked" / "_kgrouped" / "_psum"; padding_symbol_suffix the padding
//                          rule and group alignment ("" for the other modes)
void set_grouped_layout(const char* op, const GemmProblem& p, GemmKernelKey& key);
std::string scheduler_type(const GemmKernelKey& key, const char* dense);
std::string grouped_symbol_suffix(const GemmKernelKey& key);
std::string padding_symbol_suffix(const GemmKernelKey& key);

// The kernel symbol: `prefix` + the tile, stages, scheduler group and compiled dims (each kernel appends its
// own variant suffixes).
std::string gemm_symbol(const std::string& prefix, const GemmKernelKey& key);

// What plan_gemm assumes of the device (the H200 by default).
struct DeviceLimits {
    int num_sms = 132;
    int smem_optin = 232448;  // max dynamic shared memory per block (opt-in), bytes
    int cc_major = 9;
    int clock_mhz = 1980;     // peak SM clock: with num_sms, the GPU model of the tuning table
    bool use_tuning = true;   // plan with the tuning table's picks for that model (as run_gemm does)
};

// The kernel run_gemm would build for `problem` on a device with `limits`: the same config choice, key and
// source, with no GPU. Raises jit::Error as run_gemm would for an impossible config.
GemmKernelSource plan_gemm(const GemmProblem& problem, const DeviceLimits& limits);

// The config candidates of `problem` for the tuner (knob_table.hpp): the kernel's forced-config variable, the
// heuristic's kernel, and the configs around its pick (in the variable's syntax) that the kernel's finalize
// accepts for this problem, each with the kernel it plans (distinct kernels, none the heuristic's).
struct GemmConfigCandidate {
    std::string config;
    GemmKernelSource kernel;
};
struct GemmConfigCandidates {
    std::string variable;
    std::string signature;  // the problem's key in the tuning table (jit/tuning_table.hpp)
    GemmKernelSource heuristic;
    std::vector<GemmConfigCandidate> candidates;
};
GemmConfigCandidates gemm_config_candidates(const GemmProblem& problem, const DeviceLimits& limits, int max_changed = 2);

// The kernel run_k_grouped_fp8_gemm would build for a K-grouped FP8 problem whose groups have the values of K
// in `ks`: one (whatever the groups' K), or none when they are all 0.
std::vector<GemmKernelSource> plan_k_grouped_fp8_gemm(const GemmProblem& problem, std::span<const int> ks,
                                                      const DeviceLimits& limits);

}  // namespace deep_gemm::kernels
