// The Python views of the JIT core and the runtime that PYBIND11_MODULE binds: compile_only (build a shipped
// kernel without a GPU), the parsed DG_* settings and their registry, and the cached device info.
#include "python/jit_tools.hpp"

#include <fmt/format.h>

#include "apis/common.hpp"
#include "apis/layout.hpp"
#include "apis/runtime.hpp"
#include "jit/cache_settings.hpp"
#include "jit/jit.hpp"
#include "jit/settings.hpp"

namespace deep_gemm::python {

namespace py = pybind11;

py::dict build_entry(const jit::KernelSource& src, const std::string& arch) {
    jit::CachedKernel entry;
    {
        py::gil_scoped_release no_gil;
        entry = jit::build(src, arch);
    }
    py::dict result;
    result["name"] = src.name;
    result["symbol"] = src.symbol;
    result["dir"] = entry.dir.string();
    result["compiled"] = entry.compiled;
    result["cubin_size"] = entry.cubin.size();
    return result;
}

py::dict compile_only(const std::string& kernel, const std::string& arch) {
    return build_entry(api::compile_only_kernel_source(kernel), arch);
}

py::tuple compile_only_kernel_source(const std::string& kernel) {
    const jit::KernelSource src = api::compile_only_kernel_source(kernel);
    return py::make_tuple(src.name, src.symbol, src.code);
}

py::dict settings_dict() {
    const jit::Settings& s = jit::settings();
    py::dict d;
    d["cache_dir"] = s.cache_dir.string();
    const jit::CacheSettings::CompileMode mode = jit::cache_settings().compile_mode;
    d["compile_mode"] = mode == jit::CacheSettings::CompileMode::kError  ? "error"
                        : mode == jit::CacheSettings::CompileMode::kWarn ? "warn"
                                                                          : "compile";
    d["use_nvrtc"] = s.use_nvrtc;
    d["nvcc_compiler"] = s.nvcc_compiler;
    d["cpp_standard"] = s.cpp_standard;
    d["debug"] = s.debug;
    d["print_compiler_command"] = s.print_compiler_command;
    d["print_load_time"] = s.print_load_time;
    d["ptxas_verbose"] = s.ptxas_verbose;
    d["ptxas_check"] = s.ptxas_check;
    d["with_lineinfo"] = s.with_lineinfo;
    d["dump_ptx"] = s.dump_ptx;
    d["dump_sass"] = s.dump_sass;
    d["print_configs"] = s.print_configs;
    return d;
}

py::list setting_registry() {
    py::list out;
    for (const auto& info : jit::setting_registry()) {
        py::dict d;
        d["name"] = info.name;
        d["type"] = info.type;
        d["default"] = info.default_value;
        d["doc"] = info.doc;
        out.append(d);
    }
    return out;
}

py::dict device_info(int device) {
    const auto& info = jit::device_info(device);
    py::dict d;
    d["ordinal"] = info.ordinal;
    d["cc_major"] = info.cc_major;
    d["cc_minor"] = info.cc_minor;
    d["sm_count"] = info.sm_count;
    d["max_smem_per_block_optin"] = info.max_smem_per_block_optin;
    d["clock_mhz"] = info.clock_mhz;
    d["arch"] = info.arch;
    return d;
}

}  // namespace deep_gemm::python
