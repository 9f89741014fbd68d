// DG_BF16_GEMM_CONFIG parsing and application (see the header for the syntax).
#include "sm90_bf16_config_override.hpp"

#include <algorithm>
#include <string>

#include "../../jit/errors.hpp"

namespace deep_gemm::kernels {

namespace {

using heuristics::kSm90Bf16MinStages;
using heuristics::Sm90GemmEpilogue;

const char* epilogue_name(Sm90GemmEpilogue epilogue) {
    switch (epilogue) {
        case Sm90GemmEpilogue::kBf16Tma: return "the bf16 TMA-store epilogue (BLOCK_M x BLOCK_N staging)";
        case Sm90GemmEpilogue::kBf16Direct: return "the bf16 direct-store epilogue (no staging)";
        default: return "the FP32 / with-C epilogue (no staging)";
    }
}

}  // namespace

heuristics::Sm90GemmConfig apply_sm90_bf16_config_override(heuristics::Sm90GemmConfig forced, bool b_mn_major,
                                                           Sm90GemmEpilogue epilogue, int smem_limit) {
    heuristics::Sm90GemmConfig config = forced;
    const heuristics::Sm90GemmConfig ov = forced;  // (the error below names the forced values)
    if (config.num_stages == 0)
        config.num_stages = heuristics::sm90_bf16_max_stages(ov.block_m, ov.block_n, b_mn_major, epilogue, smem_limit);
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
