// The launch path's per-thread memo: hits return what was stored, misses and collisions return nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "jit/direct_mapped_cache.hpp"

namespace {

struct Key {
    const void* p;
    int a;
    char b;  // followed by padding, which must take part in the compare
};

Key make_key(const void* p, int a, char b) {
    Key k;
    std::memset(&k, 0, sizeof(k));
    k.p = p, k.a = a, k.b = b;
    return k;
}

}  // namespace

TEST(DirectMappedCache, StoresAndFinds) {
    deep_gemm::jit::DirectMappedCache<Key, int, 4> cache;
    const Key k1 = make_key(&cache, 1, 'x');
    EXPECT_EQ(cache.find(k1), nullptr);
    EXPECT_EQ(cache.insert(k1, 42), 42);
    ASSERT_NE(cache.find(k1), nullptr);
    EXPECT_EQ(*cache.find(k1), 42);
    EXPECT_EQ(cache.find(make_key(&cache, 1, 'y')), nullptr);
    EXPECT_EQ(cache.find(make_key(&cache, 2, 'x')), nullptr);
}

TEST(DirectMappedCache, CollisionsReplaceNeverConfuse) {
    // One slot: every key collides; the last insert wins and other keys miss.
    deep_gemm::jit::DirectMappedCache<Key, int, 1> cache;
    const Key k1 = make_key(nullptr, 1, 'a'), k2 = make_key(nullptr, 2, 'a');
    cache.insert(k1, 1);
    cache.insert(k2, 2);
    EXPECT_EQ(cache.find(k1), nullptr);
    ASSERT_NE(cache.find(k2), nullptr);
    EXPECT_EQ(*cache.find(k2), 2);
}
