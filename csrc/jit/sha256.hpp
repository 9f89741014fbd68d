// SHA-256 (FIPS 180-4), used for cache keys and cubin checksums. Internal to the JIT core.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace deep_gemm::jit::detail {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t size);
    void update(std::string_view text) { update(text.data(), text.size()); }
    // Adds the length first, so that ("ab","c") and ("a","bc") hash differently.
    void update_field(std::string_view text);
    std::array<std::uint8_t, 32> digest();  // finalizes; the object must not be updated afterwards
    std::string hex_digest();

private:
    void compress(const std::uint8_t* block);
    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t total_bytes_ = 0;
};

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace deep_gemm::jit::detail
