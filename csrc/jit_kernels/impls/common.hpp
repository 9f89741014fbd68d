// Host pieces shared by the SM90 GEMM launch path (sm90_gemm_launch.*) and its kernels (sm90_fp8_gemm_1d2d/_1d1d,
// sm90_bf16_gemm): the generated source of one kernel instance, hashing of the memo keys, operand alignment,
// `compiled_dims` parsing, the device check, tensor maps and config logging. Torch-free.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"
#include "../../jit/log.hpp"
#include "../../jit/settings.hpp"

namespace deep_gemm::kernels {

// Grouped (MoE) mode of a GEMM call, shared by the FP8 and BF16 hosts (part of their kernel keys; the
// values name the kernels' schedulers, see scheduler/grouped_scheduler.cuh).
enum class GemmGroupedMode : int {
    kNone = 0,
    kMGroupedContiguous = 1,
    kMGroupedMasked = 2,
    kKGroupedContiguous = 3,
    kMGroupedContiguousPsum = 4,
    // The einsum layouts (scheduler/einsum_scheduler.cuh): D = sum over the G batches of A_g @ B_g^T
    // ('bmk,bnk->mn', BF16 kernel), and G per-head GEMMs on [b, h, *] activations ('bhr,hdr->bhd', ...;
    // BF16 kernel, and FP8 1D2D for fp8_einsum).
    kBatchReduced = 5,
    kHeadBatched = 6,
};

// The public name of the int32 array (GemmOperands::grouped) a mode's scheduler reads; nullptr for the
// modes that read none: dense, and the einsum layouts, whose groups are all full (their schedulers take
// no array). The kernels' checks demand the pointer exactly where this names one.
constexpr const char* grouped_array_name(GemmGroupedMode mode) {
    switch (mode) {
        case GemmGroupedMode::kMGroupedContiguous:
        case GemmGroupedMode::kMGroupedContiguousPsum: return "grouped_layout";
        case GemmGroupedMode::kMGroupedMasked: return "masked_m";
        case GemmGroupedMode::kKGroupedContiguous: return "ks";
        default: return nullptr;
    }
}

// Generated translation unit for one kernel instance (used by the ops and by the compile-only tests):
// {name, symbol, code} as in jit::KernelSource, plus the block size and dynamic shared memory it needs.
struct GemmKernelSource {
    std::string name, symbol, code;
    int num_threads = 0;
    int smem_bytes = 0;

    jit::KernelSource kernel_source() const { return jit::KernelSource{name, symbol, code}; }
};

// Hash of a key compared bytewise (a POD without padding, or one zeroed before it was filled).
inline size_t hash_bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return size_t(h ^ (h >> 29));
}

// Hash functor of such keys (for std::unordered_map).
template <typename Key>
struct BytewiseHash {
    size_t operator()(const Key& key) const noexcept { return hash_bytes(&key, sizeof(Key)); }
};

inline bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }

// TMA swizzle mode of a swizzle width in bytes (anything but 128/64/32: none).
inline CUtensorMapSwizzle swizzle_of(int bytes) {
    switch (bytes) {
        case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
        case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
        case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
        default: return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

// 2-D tiled tensor map (L2 promotion 256 B): dims/box given innermost first, `row_stride_bytes` between
// rows; `what` names the operand in errors.
inline CUtensorMap make_tmap_2d(CUtensorMapDataType dtype, const void* base, uint64_t inner, uint64_t outer,
                                uint64_t row_stride_bytes, uint32_t box_inner, uint32_t box_outer,
                                CUtensorMapSwizzle swizzle, const char* what) {
    const uint64_t dims[2] = {inner, outer};
    const uint64_t strides[1] = {row_stride_bytes};
    const uint32_t box[2] = {box_inner, box_outer};
    return jit::encode_tensor_map(dtype, 2, base, dims, strides, box, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, what);
}

// 3-D tiled tensor map {inner, outer, groups}: `row_stride_bytes` between rows, `group_stride_bytes` between
// groups (unused, but must be valid, when there is one group).
inline CUtensorMap make_tmap_3d(CUtensorMapDataType dtype, const void* base, uint64_t inner, uint64_t outer,
                                uint64_t groups, uint64_t row_stride_bytes, uint64_t group_stride_bytes,
                                uint32_t box_inner, uint32_t box_outer, CUtensorMapSwizzle swizzle, const char* what) {
    const uint64_t dims[3] = {inner, outer, groups};
    const uint64_t strides[2] = {row_stride_bytes,
                                 groups > 1 ? group_stride_bytes : row_stride_bytes * std::max<uint64_t>(outer, 1)};
    const uint32_t box[3] = {box_inner, box_outer, 1};
    return jit::encode_tensor_map(dtype, 3, base, dims, strides, box, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, what);
}

// Which of M/N/K are baked into the kernel as constants (`compiled_dims`, e.g. "nk"); the others are runtime.
struct CompiledDims {
    bool m = false, n = false, k = false;

    // Sets key.m/n/k: the compiled-in dims, 0 for the runtime ones.
    template <typename Key>
    void apply(Key& key, int m_, int n_, int k_) const {
        key.m = m ? uint32_t(m_) : 0u;
        key.n = n ? uint32_t(n_) : 0u;
        key.k = k ? uint32_t(k_) : 0u;
    }
};

// Parses `compiled_dims` (letters m/n/k in any case); anything else raises jit::Error prefixed by `op`.
// (`op` is a C string so that the hot path builds no std::string.)
inline CompiledDims parse_compiled_dims(const char* op, std::string_view compiled_dims) {
    CompiledDims dims;
    for (char c : compiled_dims) {
        if (c == 'm' || c == 'M') dims.m = true;
        else if (c == 'n' || c == 'N') dims.n = true;
        else if (c == 'k' || c == 'K') dims.k = true;
        else
            throw jit::Error(std::string(op) + ": compiled_dims may contain only 'm', 'n', 'k'; got '" +
                             std::string(compiled_dims) + "'");
    }
    return dims;
}

// The device's info, which must be a Hopper GPU (else jit::Error prefixed by `op`).
inline const jit::DeviceInfo& sm90_device_info(const char* op, int device) {
    const jit::DeviceInfo& dev = jit::device_info(device);
    if (dev.cc_major != 9)
        throw jit::Error(std::string(op) + ": the SM90 kernel needs a Hopper GPU (compute capability 9.x)");
    return dev;
}

// SMs the persistent grid may use: `requested` capped at the device's count (<= 0: all of them).
inline int usable_sms(const jit::DeviceInfo& dev, int requested) {
    return requested > 0 ? std::min(requested, dev.sm_count) : dev.sm_count;
}

// Persistent grids: one CTA per tile up to `num_sms` CTAs; with 2-CTA clusters, whole pairs over `pair_tiles`
// (tiles of the paired dimension counted in pairs), at most `num_sms` CTAs.
inline unsigned persistent_grid(int num_sms, int64_t tiles) {
    return unsigned(std::max<int64_t>(1, std::min<int64_t>(num_sms, tiles)));
}
inline unsigned persistent_pair_grid(int num_sms, int64_t pair_tiles) {
    return unsigned(2 * std::max<int64_t>(1, std::min<int64_t>(num_sms / 2, pair_tiles)));
}

// With DG_PRINT_CONFIGS: logs the config (`config_text`) chosen for a problem shape.
inline void log_config(const char* op, int m, int n, int k, int num_sms, const std::string& config_text) {
    if (!jit::settings().print_configs) return;
    jit::log(jit::LogLevel::kInfo, std::string(op) + ": M=" + std::to_string(m) + " N=" + std::to_string(n) +
                                       " K=" + std::to_string(k) + " SMs=" + std::to_string(num_sms) + " -> " +
                                       config_text);
}

}  // namespace deep_gemm::kernels
