// Memoized TMA descriptor encoding (see encode_tensor_map in jit.hpp).
#include <cstring>

#include "direct_mapped_cache.hpp"
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

// Per thread, so no lock on the launch path; a collision just re-encodes.
thread_local DirectMappedCache<TensorMapKey, CUtensorMap, 64> t_maps;

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

    if (const CUtensorMap* cached = t_maps.find(key)) return *cached;

    CUtensorMap map;
    std::memset(&map, 0, sizeof(map));
    const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
    check_driver(driver().tensor_map_encode_tiled(&map, dtype, rank, const_cast<void*>(base), global_dims, global_strides,
                                                  box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                  l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 what);
    return t_maps.insert(key, map);
}

}  // namespace deep_gemm::jit
