// A small direct-mapped cache for the launch path's per-thread memos (tensor maps, prepared launches):
// no lock (each thread owns one), no allocation, and a collision just means the caller computes again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace deep_gemm::jit {

// Keys are compared and hashed bytewise, so callers zero a key (padding included) before filling it.
template <typename Key, typename Value, std::size_t kSlots>
class DirectMappedCache {
    static_assert(std::is_trivially_copyable_v<Key> && sizeof(Key) % 8 == 0, "keys hash as 64-bit words");

public:
    // The value stored for `key`, or nullptr.
    const Value* find(const Key& key) const {
        const Slot& slot = slots_[slot_of(key)];
        return slot.used && std::memcmp(&slot.key, &key, sizeof(Key)) == 0 ? &slot.value : nullptr;
    }

    // Stores `value` for `key` in its slot (replacing what was there) and returns the stored value.
    const Value& insert(const Key& key, const Value& value) {
        Slot& slot = slots_[slot_of(key)];
        std::memcpy(&slot.key, &key, sizeof(Key));  // bytes, padding included: find() compares them
        slot.value = value;
        slot.used = true;
        return slot.value;
    }

private:
    struct Slot {
        bool used = false;
        Key key;
        Value value;
    };

    static std::size_t slot_of(const Key& key) {
        std::uint64_t words[sizeof(Key) / 8];
        std::memcpy(words, &key, sizeof(Key));
        std::uint64_t h = 0;
        for (std::uint64_t w : words) h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        return std::size_t(h ^ (h >> 32)) % kSlots;
    }

    std::array<Slot, kSlots> slots_{};
};

}  // namespace deep_gemm::jit
