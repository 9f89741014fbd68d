// Generated kernel sources and launches from one parameter list per kernel (internal to csrc/jit_kernels/impls).
// A kernel's parameters are written once, as a list macro in its device header directory
// (deep_gemm/include/deep_gemm/impls/<kernel>_params.hpp; deep_gemm/include/deep_gemm/common/abi.hpp explains
// the lists). The generated `extern "C"` entry point declares its parameters from the list, and the host fills
// the struct DG_DEFINE_KERNEL_PARAMS made of the same list and launches with its fields' addresses in the
// list's order: the argument array cannot disagree with the kernel's parameters in number, order or type.
//
//   render_kernel_source<Params>(entry)   the .cu text, from the fmt template of the entry point
//   param_names<Params>()                 the entry point's parameters as the kernel body passes them on
//   tma_descriptor(map)                   a CUtensorMap as a struct's tensor-map field (its address)
//   launch_with_params(kernel, cfg, p)    the launch, one argument per field of p
#pragma once

#include <cuda.h>
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <string_view>

#include "../../../deep_gemm/include/deep_gemm/common/abi.hpp"
#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

// A tensor-map field points at the caller's CUtensorMap (e.g. the prepared launch's cached one) and the launch
// passes that address, so no descriptor is copied per call; the driver copies the 128 bytes into the kernel's
// parameter space (TmaDescriptor has CUtensorMap's size).
static_assert(sizeof(CUtensorMap) == sizeof(TmaDescriptor), "TmaDescriptor must hold a CUtensorMap");

inline const TmaDescriptor* tma_descriptor(const CUtensorMap& map) {
    return reinterpret_cast<const TmaDescriptor*>(&map);
}

// A CUtensorMap as a TmaDescriptor value, for maps held inside a parameter struct (the K-grouped FP8 kernel's).
inline TmaDescriptor tma_descriptor_value(const CUtensorMap& map) {
    TmaDescriptor value;
    std::memcpy(&value, &map, sizeof(value));
    return value;
}

// The parts of one generated source around the entry point's fixed shape.
struct KernelEntry {
    std::string_view prelude;  // defines and #include lines, each ending in a newline
    std::string_view symbol;   // the extern "C" name the loader looks up
    int num_threads = 0;       // the block size (launch bounds)
    std::string_view body;     // the entry point's statements
    std::string_view trailer;  // after the function: the host/device static_asserts
    int min_blocks = 1;        // the launch bounds' blocks per SM (0: not given)
};

// Every kernel's entry point.
inline constexpr char kKernelEntryTemplate[] =
    "{prelude}\n"
    "extern \"C\" __global__ void __launch_bounds__({bounds})\n"
    "{symbol}(DG_PARAM_DECLS({list})) {{\n"
    "{body}"
    "}}\n"
    "{trailer}";

template <typename Params>
std::string render_kernel_source(const KernelEntry& e) {
    const std::string bounds = e.min_blocks > 0 ? fmt::format("{}, {}", e.num_threads, e.min_blocks)
                                                : fmt::format("{}", e.num_threads);
    return fmt::format(kKernelEntryTemplate, fmt::arg("prelude", e.prelude), fmt::arg("bounds", bounds),
                       fmt::arg("symbol", e.symbol), fmt::arg("list", Params::kList), fmt::arg("body", e.body),
                       fmt::arg("trailer", e.trailer));
}

template <typename Params>
std::string param_names() {
    return fmt::format("DG_PARAM_NAMES({})", Params::kList);
}

template <typename Params>
void launch_with_params(const jit::LoadedKernel& kernel, const jit::LaunchConfig& config, Params& params) {
    void* args[Params::kNumParams];
    int i = 0;
    params.visit_fields([&](auto& field) {
        if (i < Params::kNumParams) args[i] = const_cast<void*>(static_cast<const void*>(&field));
        ++i;
    });
    // Both come from the same list (DG_DEFINE_KERNEL_PARAMS); tests/cpp/test_kernel_params.cpp checks them.
    if (i != Params::kNumParams) throw jit::Error(std::string(Params::kList) + ": parameter count mismatch");
    kernel.launch(config, args);
}

}  // namespace deep_gemm::kernels
