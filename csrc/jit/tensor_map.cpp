// Memoized TMA descriptor encoding (see encode_tensor_map in jit.hpp).
#include <array>
#include <cstring>

#include "jit.hpp"

namespace deep_gemm::jit {
namespace {

struct TensorMapKey {
    const void* base;
    uint64_t dims[5];
    uint64_t strides[4];
    uint32_t box[5];
    uint32_t dtype, rank, swizzle, l2;
};

struct TensorMapSlot {
    bool used = false;
    TensorMapKey key;
    CUtensorMap map;
};

// Direct-mapped: a collision just re-encodes. Per thread, so no lock on the launch path.
constexpr size_t kSlots = 64;
thread_local std::array<TensorMapSlot, kSlots> t_slots;

static_assert(sizeof(TensorMapKey) % 8 == 0, "the key hashes as 64-bit words");

size_t slot_of(const TensorMapKey& key) {
    uint64_t words[sizeof(TensorMapKey) / 8];
    std::memcpy(words, &key, sizeof(key));
    uint64_t h = 0;
    for (uint64_t w : words) h = (h ^ w) * 0x9E3779B97F4A7C15ull;  // word at a time: this is on every launch
    return size_t(h ^ (h >> 32)) % kSlots;
}

}  // namespace

CUtensorMap encode_tensor_map(CUtensorMapDataType dtype, unsigned rank, const void* base, const uint64_t* global_dims,
                              const uint64_t* global_strides, const uint32_t* box_dims, CUtensorMapSwizzle swizzle,
                              CUtensorMapL2promotion l2_promotion, const char* what) {
    if (rank < 1 || rank > 5) throw Error(std::string(what) + ": tensor map rank must be 1..5");
    TensorMapKey key;
    std::memset(&key, 0, sizeof(key));  // padding and unused dims take part in the hash and compare
    key.base = base;
    for (unsigned i = 0; i < rank; ++i) key.dims[i] = global_dims[i], key.box[i] = box_dims[i];
    for (unsigned i = 0; i + 1 < rank; ++i) key.strides[i] = global_strides[i];
    key.dtype = uint32_t(dtype), key.rank = rank, key.swizzle = uint32_t(swizzle), key.l2 = uint32_t(l2_promotion);

    TensorMapSlot& slot = t_slots[slot_of(key)];
    if (slot.used && std::memcmp(&slot.key, &key, sizeof(key)) == 0) return slot.map;

    CUtensorMap map;
    std::memset(&map, 0, sizeof(map));
    const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
    check_driver(driver().tensor_map_encode_tiled(&map, dtype, rank, const_cast<void*>(base), global_dims, global_strides,
                                                  box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                  l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 what);
    slot.used = true;
    slot.key = key;
    slot.map = map;
    return map;
}

}  // namespace deep_gemm::jit
