// The field syntax shared by the forced-config variables (DG_FP8_GEMM_CONFIG, DG_BF16_GEMM_CONFIG):
// comma-separated non-negative decimal integers, blanks (spaces, tabs) around the whole value and around
// each field ignored. One tokenizer for both, so they accept the same spellings. Torch-free.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace deep_gemm::kernels::config_fields {

inline std::string_view trim_blanks(std::string_view s) {
    const size_t begin = s.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// The blank-trimmed fields between commas ("" for an empty field).
inline std::vector<std::string_view> split_commas(std::string_view s) {
    std::vector<std::string_view> fields;
    while (true) {
        const size_t comma = s.find(',');
        fields.push_back(trim_blanks(s.substr(0, comma)));
        if (comma == std::string_view::npos) return fields;
        s.remove_prefix(comma + 1);
    }
}

// Decimal digits only (no sign, no hex, no exponent); at most 6 of them, so the value cannot overflow.
inline std::optional<int> parse_unsigned(std::string_view field) {
    if (field.empty() || field.size() > 6) return std::nullopt;
    int value = 0;
    for (char c : field) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    return value;
}

}  // namespace deep_gemm::kernels::config_fields
