#include "swiglu_fp8_quant.hpp"

#include <algorithm>
#include <string>

#include "kernel_source.hpp"
#include "../../../deep_gemm/include/deep_gemm/impls/swiglu_fp8_quant_params.hpp"

namespace deep_gemm::kernels {

namespace {

const char* input_type(QuantInput in) {
    switch (in) {
        case QuantInput::kFp16: return "__half";
        case QuantInput::kFp32: return "float";
        default: return "__nv_bfloat16";
    }
}

const char* input_tag(QuantInput in) {
    switch (in) {
        case QuantInput::kFp16: return "f16";
        case QuantInput::kFp32: return "f32";
        default: return "bf16";
    }
}

const char* b(bool v) { return v ? "true" : "false"; }

// The input's element type is the instance's (swiglu_fp8_quant_params.hpp).
constexpr char kPreludeTemplate[] =
    "#define DG_SWIGLU_INPUT_T {}\n"
    "#include <deep_gemm/impls/swiglu_fp8_quant.cuh>\n";
constexpr char kBodyTemplate[] =
    "    deep_gemm::quant::fp8_quant<DG_SWIGLU_INPUT_T, {swiglu}, {group}, {sf_layout}, {round_scale}, {weights}, "
    "{clamp}, {output_bf16}, {fast_math}, {threads}>(\n"
    "        {args});\n";

jit::KernelTable<QuantConfig, QuantConfigHash>& table() {
    static jit::KernelTable<QuantConfig, QuantConfigHash> instance;
    return instance;
}

}  // namespace

uint32_t QuantConfig::key() const {
    uint32_t k = static_cast<uint32_t>(input);
    k = k * 4 + static_cast<uint32_t>(sf_layout);
    k = k * 1024 + static_cast<uint32_t>(group);
    for (bool flag : {swiglu, round_scale, has_weights, has_clamp, output_bf16, fast_math}) k = k * 2 + (flag ? 1 : 0);
    return k;
}

jit::KernelSource swiglu_fp8_quant_source(const QuantConfig& c) {
    // The symbol spells the config, so every config is its own cache entry and its own SASS.
    static const char* kSf[] = {"colsf", "rowsf", "ue8m0"};
    const std::string symbol = fmt::format("deep_gemm_{}_fp8_{}_g{}_{}{}{}{}{}{}", c.swiglu ? "swiglu" : "apply_weight",
                                           input_tag(c.input), c.group, kSf[static_cast<int>(c.sf_layout)],
                                           c.round_scale ? "_pow2" : "", c.has_weights ? "_w" : "", c.has_clamp ? "_clamp" : "",
                                           c.output_bf16 ? "_bf16out" : "", c.fast_math ? "_fast" : "");
    const std::string prelude = fmt::format(kPreludeTemplate, input_type(c.input));
    const std::string body =
        fmt::format(kBodyTemplate, fmt::arg("swiglu", b(c.swiglu)), fmt::arg("group", c.group),
                    fmt::arg("sf_layout", static_cast<int>(c.sf_layout)), fmt::arg("round_scale", b(c.round_scale)),
                    fmt::arg("weights", b(c.has_weights)), fmt::arg("clamp", b(c.has_clamp)),
                    fmt::arg("output_bf16", b(c.output_bf16)), fmt::arg("fast_math", b(c.fast_math)),
                    fmt::arg("threads", kQuantThreads), fmt::arg("args", param_names<SwigluFp8QuantParams>()));
    KernelEntry entry{prelude, symbol, kQuantThreads, body, ""};
    entry.min_blocks = quant_blocks_per_sm(c);
    std::string code = render_kernel_source<SwigluFp8QuantParams>(entry);
    return jit::KernelSource{"swiglu_fp8_quant", symbol, std::move(code)};
}

unsigned swiglu_fp8_quant_grid(const QuantArgs& args) {
    const int64_t items_per_block = kQuantThreads / (args.config.group / 16);
    const int64_t items = static_cast<int64_t>(args.num_tokens) * args.num_groups;
    const int64_t needed = (items + items_per_block - 1) / items_per_block;
    const int64_t cap = static_cast<int64_t>(std::max(args.num_sms, 1)) * quant_blocks_per_sm(args.config);
    return static_cast<unsigned>(std::max<int64_t>(1, std::min(needed, cap)));
}

void swiglu_fp8_quant(const QuantArgs& args) {
    if (args.num_tokens <= 0 or args.num_groups <= 0) return;
    const QuantConfig& c = args.config;
    if (c.group < 16 or c.group > 512 or (c.group & (c.group - 1)) != 0)
        throw jit::Error("swiglu_fp8_quant: the group must be a power of two in [16, 512]; got " + std::to_string(c.group));
    if (c.sf_layout == QuantSfLayout::kUe8m0 and not c.round_scale)
        throw jit::Error("swiglu_fp8_quant: UE8M0 scales need round_scale");

    const jit::LoadedKernel& kernel = table().get(args.device, c, [&c] { return swiglu_fp8_quant_source(c); });

    jit::LaunchConfig config;
    config.grid[0] = swiglu_fp8_quant_grid(args);
    config.block[0] = kQuantThreads;
    config.stream = args.stream;

    SwigluFp8QuantParams params{args.x,       args.x_stride,       args.y,         args.y_stride,
                                args.sf,      args.sf_stride,      args.y_bf16,    args.y_bf16_stride,
                                args.weights, args.avail_tokens,   args.num_tokens, args.hidden,
                                args.num_groups, args.clamp};
    launch_with_params(kernel, config, params);
}

}  // namespace deep_gemm::kernels
