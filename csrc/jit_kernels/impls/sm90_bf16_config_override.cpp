// DG_BF16_GEMM_CONFIG parsing and application (see the header for the syntax).
#include "sm90_bf16_config_override.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../../jit/errors.hpp"
#include "config_fields.hpp"

namespace deep_gemm::kernels {

namespace {

using heuristics::kSm90Bf16MaxBlockN;
using heuristics::kSm90Bf16MaxStages;
using heuristics::kSm90Bf16MinStages;
using heuristics::Sm90GemmEpilogue;
using config_fields::parse_unsigned;
using config_fields::split_commas;
using config_fields::trim_blanks;

constexpr const char* kFieldNames[] = {"block_m", "block_n", "stages", "multicast"};

// Every error repeats the accepted form, so one message is enough to fix the value.
std::string accepted_form() {
    return "expected \"block_m,block_n,stages[,multicast]\": block_m 64 or 128; block_n a multiple of 16 in [16, " +
           std::to_string(kSm90Bf16MaxBlockN) + "]; stages 0 (as many as fit) or " +
           std::to_string(kSm90Bf16MinStages) + ".." + std::to_string(kSm90Bf16MaxStages) +
           "; multicast 0 (off) or 1 (B multicast when legal), absent = heuristic; unset or empty = no override";
}

[[noreturn]] void reject(std::string_view text, const std::string& problem) {
    throw jit::ConfigError(std::string(kBf16ConfigEnv) + "='" + std::string(text) + "': " + problem + "; " +
                           accepted_form());
}

void check_ranges(std::string_view text, int block_m, int block_n, int stages, std::optional<int> multicast) {
    if (block_m != 64 && block_m != 128) reject(text, "block_m " + std::to_string(block_m) + " is not 64 or 128");
    if (block_n < 16 || block_n > kSm90Bf16MaxBlockN || block_n % 16 != 0)
        reject(text, "block_n " + std::to_string(block_n) + " is not a multiple of 16 in [16, " +
                         std::to_string(kSm90Bf16MaxBlockN) + "]");
    if (stages != 0 && (stages < kSm90Bf16MinStages || stages > kSm90Bf16MaxStages))
        reject(text, "stages " + std::to_string(stages) + " is neither 0 nor in [" +
                         std::to_string(kSm90Bf16MinStages) + ", " + std::to_string(kSm90Bf16MaxStages) + "]");
    if (multicast && *multicast > 1) reject(text, "multicast " + std::to_string(*multicast) + " is not 0 or 1");
}

const char* epilogue_name(Sm90GemmEpilogue epilogue) {
    switch (epilogue) {
        case Sm90GemmEpilogue::kBf16Tma: return "the bf16 TMA-store epilogue (BLOCK_M x BLOCK_N staging)";
        case Sm90GemmEpilogue::kBf16Direct: return "the bf16 direct-store epilogue (no staging)";
        default: return "the FP32 / with-C epilogue (no staging)";
    }
}

}  // namespace

Sm90Bf16ConfigOverride parse_sm90_bf16_config_override(std::string_view text) {
    const std::string_view body = trim_blanks(text);
    if (body.empty()) return {};
    const std::vector<std::string_view> fields = split_commas(body);
    if (fields.size() < 3 || fields.size() > 4)
        reject(text, std::to_string(fields.size()) + " comma-separated field" + (fields.size() == 1 ? "" : "s") +
                         " instead of 3 or 4");
    int values[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < fields.size(); ++i) {
        const std::optional<int> value = parse_unsigned(fields[i]);
        if (!value)
            reject(text, std::string(kFieldNames[i]) + " '" + std::string(fields[i]) +
                             "' is not a non-negative integer");
        values[i] = *value;
    }
    const std::optional<int> multicast = fields.size() == 4 ? std::optional<int>(values[3]) : std::nullopt;
    check_ranges(text, values[0], values[1], values[2], multicast);

    Sm90Bf16ConfigOverride ov;
    ov.block_m = values[0];
    ov.block_n = values[1];
    ov.num_stages = values[2];
    ov.multicast_request = multicast ? (*multicast == 1 ? 2 : 1) : 0;
    return ov;
}

heuristics::Sm90GemmConfig apply_sm90_bf16_config_override(const Sm90Bf16ConfigOverride& ov, bool b_mn_major,
                                                           Sm90GemmEpilogue epilogue, int smem_limit) {
    heuristics::Sm90GemmConfig config;  // group_n as the heuristics set it
    config.block_m = ov.block_m;
    config.block_n = ov.block_n;
    config.num_stages =
        ov.num_stages != 0
            ? ov.num_stages
            : heuristics::sm90_bf16_max_stages(ov.block_m, ov.block_n, b_mn_major, epilogue, smem_limit);
    // max_stages returns kSm90Bf16MinStages - 1 when nothing fits: report the fewest legal stages then.
    const int stages = std::max(config.num_stages, kSm90Bf16MinStages);
    const int bytes = heuristics::sm90_bf16_smem_bytes(ov.block_m, ov.block_n, stages, b_mn_major, epilogue);
    if (config.num_stages >= kSm90Bf16MinStages && bytes <= smem_limit) return config;
    throw jit::ConfigError(
        std::string(kBf16ConfigEnv) + " (block_m=" + std::to_string(ov.block_m) + ", block_n=" +
        std::to_string(ov.block_n) + ", stages=" + std::to_string(ov.num_stages) + "): " + std::to_string(stages) +
        " stages need " + std::to_string(bytes) + " bytes of shared memory with " + epilogue_name(epilogue) + " and " +
        (b_mn_major ? "MN-major B (BLOCK_N padded to 64-column atoms)" : "K-major B") + ", but the device allows " +
        std::to_string(smem_limit) + " per block; " +
        (ov.num_stages != 0 ? "use fewer stages, 0 (as many as fit) or a smaller tile" : "use a smaller tile"));
}

}  // namespace deep_gemm::kernels
