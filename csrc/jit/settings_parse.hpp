// Value parsers of the DG_* registry, exposed for tests. Internal to the JIT core.
#pragma once

#include <string_view>

namespace deep_gemm::jit::detail {

// 0/1/true/false/yes/no/on/off, case-insensitive, surrounding blanks ignored; else ConfigError.
bool parse_bool(std::string_view name, std::string_view value);

// 17 or 20 (a "c++" prefix is accepted); else ConfigError.
int parse_cpp_standard(std::string_view name, std::string_view value);

}  // namespace deep_gemm::jit::detail
