// Where the host time of one cached fp8_gemm_nt call goes, below Python and torch (needs a Hopper GPU):
// times the torch-free kernel entry (kernels::run_gemm, the SM90 GEMM launch path) and its pieces on their own —
// device info lookup, the four tensor-map encodings (memo hits), a bare launch of the same kernel with
// the same arguments, and bare launches of an empty kernel without and with 512 bytes of tensor maps
// (the driver's floor). Median over batches of back-to-back calls; the GPU work queues behind.
//
//   ./build/dg_host_breakdown [M N K]        (default 128 7168 2048; DG_JIT_* settings apply)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <vector>

#include "jit/driver_api.hpp"
#include "jit/jit.hpp"
#include "jit_kernels/impls/sm90_gemm_desc.hpp"

using namespace deep_gemm;

namespace {

void sync_device() { jit::check_driver(jit::detail::driver_entry_points().cuCtxSynchronize(), "cuCtxSynchronize"); }

// Median over `batches` of the mean time per call of `calls` back-to-back calls, in microseconds.
double per_call_us(const std::function<void()>& fn, int calls = 200, int batches = 15) {
    std::vector<double> samples;
    for (int b = 0; b < batches; ++b) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) fn();
        const auto t1 = std::chrono::steady_clock::now();
        samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
        sync_device();
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    jit::check_driver(jit::detail::driver_entry_points().cuMemAlloc(&p, std::max<size_t>(bytes, 256)), "cuMemAlloc");
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const int m = argc > 3 ? std::atoi(argv[1]) : 128, n = argc > 3 ? std::atoi(argv[2]) : 7168,
                  k = argc > 3 ? std::atoi(argv[3]) : 2048;
        jit::set_include_dir(std::filesystem::path(DG_SOURCE_INCLUDE_DIR));
        jit::detail::ContextGuard ctx(0);
        const jit::DeviceInfo& info = jit::device_info(0);
        const int kb = (k + 127) / 128, m4 = (m + 3) / 4 * 4;

        kernels::GemmDesc desc;
        desc.problem.kernel = kernels::GemmKernel::kFp8_1d2d;
        desc.problem.m = m, desc.problem.n = n, desc.problem.k = k;
        desc.problem.device = 0;
        kernels::GemmOperands& args = desc.operands;
        args.a = reinterpret_cast<void*>(alloc(size_t(m) * k));
        args.b = reinterpret_cast<void*>(alloc(size_t(n) * k));
        args.sfa = reinterpret_cast<const float*>(alloc(size_t(m4) * kb * 4));
        args.sfb = reinterpret_cast<const float*>(alloc(size_t((n + 127) / 128) * kb * 4));
        args.d = reinterpret_cast<void*>(alloc(size_t(m) * n * 2));
        args.lda = k, args.ldb = k, args.ldd = n, args.sfa_stride = m4;

        kernels::run_gemm(desc);  // compile (or load) + first launch
        sync_device();

        std::printf("host time per call, fp8 1d2d M=%d N=%d K=%d on sm_%d%d (%d SMs); median of 15 x 200 calls\n", m, n,
                    k, info.cc_major, info.cc_minor, info.sm_count);
        auto row = [](const char* what, double us) { std::printf("  %8.3f us  %s\n", us, what); };
        row("kernels::run_gemm (whole torch-free entry)", per_call_us([&] { kernels::run_gemm(desc); }));
        row("jit::device_info", per_call_us([&] { (void)jit::device_info(0); }));

        // The four encodings the entry does (same arguments, so memo hits).
        const uint64_t dims_a[2] = {uint64_t(k), uint64_t(m)}, str_a[1] = {uint64_t(k)};
        const uint64_t dims_b[2] = {uint64_t(k), uint64_t(n)}, str_b[1] = {uint64_t(k)};
        const uint64_t dims_s[2] = {uint64_t(m), uint64_t(kb)}, str_s[1] = {uint64_t(m4) * 4};
        const uint64_t dims_d[2] = {uint64_t(n), uint64_t(m)}, str_d[1] = {uint64_t(n) * 2};
        const uint32_t box_ab[2] = {128, 128}, box_s[2] = {128, 1}, box_d[2] = {64, 64};
        CUtensorMap maps[4];
        auto encode4 = [&] {
            maps[0] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, args.a, dims_a, str_a, box_ab,
                                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "a");
            maps[1] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, args.b, dims_b, str_b, box_ab,
                                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "b");
            maps[2] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, args.sfa, dims_s, str_s, box_s,
                                             CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "sfa");
            maps[3] = jit::encode_tensor_map(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, args.d, dims_d, str_d, box_d,
                                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "d");
        };
        row("4 x jit::encode_tensor_map (memo hits)", per_call_us(encode4));

        // Bare launches: an empty kernel with no parameters, and one taking four tensor maps by value.
        const jit::KernelSource empty{"dg_bench_empty", "dg_bench_empty",
                                      "extern \"C\" __global__ void dg_bench_empty() {}\n"};
        const jit::KernelSource empty_maps{
            "dg_bench_empty_maps", "dg_bench_empty_maps",
            "#include <deep_gemm/common/types.cuh>\n"
            "using deep_gemm::TmaDescriptor;\n"
            "extern \"C\" __global__ void dg_bench_empty_maps(const __grid_constant__ TmaDescriptor a, const __grid_constant__ "
            "TmaDescriptor b, const __grid_constant__ TmaDescriptor c, const __grid_constant__ TmaDescriptor d, const float* p, "
            "void* q, unsigned x, unsigned y, unsigned z, unsigned w) {}\n"};
        const jit::LoadedKernel& k_empty = jit::get_kernel(empty, 0);
        const jit::LoadedKernel& k_maps = jit::get_kernel(empty_maps, 0);
        jit::LaunchConfig cfg;
        cfg.grid[0] = unsigned(info.sm_count);
        cfg.block[0] = 384;
        row("bare launch: empty kernel, no parameters", per_call_us([&] { k_empty.launch(cfg, nullptr); }));
        const float* p = nullptr;
        void* q = nullptr;
        unsigned x = 1, y = 2, z = 3, w = 4;
        void* map_args[] = {&maps[0], &maps[1], &maps[2], &maps[3], &p, &q, &x, &y, &z, &w};
        row("bare launch: empty kernel, 4 tensor maps + 6 scalars", per_call_us([&] { k_maps.launch(cfg, map_args); }));
        {
            // The same empty kernel through cuLaunchKernel (no launch attributes) on its own module.
            const jit::detail::DriverEntryPoints& d = jit::detail::driver_entry_points();
            const jit::CachedKernel entry = jit::build(empty, info.arch);
            CUmodule module = nullptr;
            CUfunction fn = nullptr;
            jit::check_driver(d.cuModuleLoadData(&module, entry.cubin.data()), "cuModuleLoadData");
            jit::check_driver(d.cuModuleGetFunction(&fn, module, "dg_bench_empty"), "cuModuleGetFunction");
            row("bare cuLaunchKernel: empty kernel, no parameters", per_call_us([&] {
                    jit::check_driver(d.cuLaunchKernel(fn, cfg.grid[0], 1, 1, cfg.block[0], 1, 1, 0, nullptr, nullptr, nullptr),
                                      "cuLaunchKernel");
                }));
            CUlaunchConfig config = {};
            config.gridDimX = cfg.grid[0], config.gridDimY = 1, config.gridDimZ = 1;
            config.blockDimX = cfg.block[0], config.blockDimY = 1, config.blockDimZ = 1;
            row("bare cuLaunchKernelEx: empty kernel, no parameters, no attributes", per_call_us([&] {
                    jit::check_driver(d.cuLaunchKernelEx(&config, fn, nullptr, nullptr), "cuLaunchKernelEx");
                }));
        }
        cfg.smem_bytes = 200 * 1024;
        cfg.cluster_x = 2;
        row("bare launch: same, 200 KiB smem + 2-CTA cluster attribute", per_call_us([&] { k_maps.launch(cfg, map_args); }));
        return 0;
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
}
