#include "layout.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include "../jit_kernels/impls/layout_transpose_sf.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

int64_t get_tma_aligned_size(int64_t x, int64_t element_size) {
    if (element_size <= 0 or 16 % element_size != 0)
        throw_value_error(fmt::format("get_tma_aligned_size: element_size must divide 16 (1, 2, 4, 8 or 16 bytes); got {}", element_size));
    if (x < 0) throw_value_error(fmt::format("get_tma_aligned_size: x must be non-negative; got {}", x));
    return align_up(x, 16 / element_size);
}

bool is_mn_major_tma_aligned(const View& v, CheckMode mode) {
    if (v.dim != 2 and v.dim != 3) return false;
    const int im = v.dim - 2, ik = v.dim - 1;
    const int64_t m = v.size[im], k = v.size[ik];
    if (not known(m, k)) return false;
    const int64_t aligned_m = align_up(m, 4);
    if (v.stride[im] != 1) return false;
    if (v.stride[ik] != aligned_m) return false;
    if (v.dim == 3 and v.size[0] > 1 and v.stride[0] != aligned_m * k) return false;
    if (mode == CheckMode::kReal and v.tensor->numel() > 0 and reinterpret_cast<uintptr_t>(v.tensor->const_data_ptr()) % 16 != 0)
        return false;
    return true;
}

namespace {

struct SfShape {
    int64_t groups, m, k;
    bool batched;
};

SfShape check_sf_tensor(const Checker& check, const View& v) {
    check.strided(*v.tensor, v.name);
    check.dtype(*v.tensor, v.name, at::kFloat);
    if (v.dim != 2 and v.dim != 3)
        check.value_error(fmt::format("{} must be a 2-D [M, K'] or 3-D [G, M, K'] tensor; got {}-D with shape {}", v.name, v.dim,
                                      v.shape_str()));
    return v.dim == 2 ? SfShape{1, v.size[0], v.size[1], false} : SfShape{v.size[0], v.size[1], v.size[2], true};
}

at::Tensor empty_kernel_layout(const at::Tensor& like, int64_t groups, int64_t m, int64_t k, bool batched) {
    const int64_t aligned_m = align_up(m, 4);
    auto out = at::empty_strided({groups, aligned_m, k}, {aligned_m * k, 1, aligned_m}, like.options());
    return out;
}

at::Tensor finish(at::Tensor padded, int64_t m, bool batched) {
    auto out = padded.narrow(1, 0, m);
    return batched ? out : out.squeeze(0);
}

}  // namespace

at::Tensor get_mn_major_tma_aligned_tensor(const at::Tensor& sf, bool allow_passthrough, const char* op, const char* name) {
    const Checker check(op, CheckMode::kReal);
    const View v = make_view(sf, name);
    const auto [groups, m, k, batched] = check_sf_tensor(check, v);
    if (allow_passthrough and is_mn_major_tma_aligned(v, CheckMode::kReal)) return sf;

    if (sf.is_meta()) return get_mn_major_tma_aligned_tensor_meta(sf);
    if (m > std::numeric_limits<int>::max() or k > std::numeric_limits<int>::max() or groups > 65535)
        check.value_error(fmt::format("{} is too large for the layout kernel; got shape {}", name, v.shape_str()));

    at::Tensor padded = empty_kernel_layout(sf, groups, m, k, batched);
    const at::Tensor src = batched ? sf : sf.unsqueeze(0);
    if (padded.numel() == 0) return finish(padded, m, batched);

    if (sf.is_cuda()) {
        const int device = sf.device().index();
        c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
        kernels::TransposeSfArgs args;
        args.in = src.const_data_ptr<float>();
        args.out = padded.mutable_data_ptr<float>();
        args.num_groups = static_cast<int>(groups);
        args.m = static_cast<int>(m);
        args.k = static_cast<int>(k);
        args.aligned_m = static_cast<int>(padded.size(1));
        args.stride_g = src.stride(0);
        args.stride_m = src.stride(1);
        args.stride_k = src.stride(2);
        args.device = device;
        args.stream = current_stream(device);
        kernels::layout_transpose_sf(args);
    } else if (sf.is_cpu()) {
        padded.zero_();
        padded.narrow(1, 0, m).copy_(src);
    } else {
        check.runtime_error(fmt::format("{} must be a CUDA or CPU tensor; got one on {}", name, device_name(sf)));
    }
    return finish(padded, m, batched);
}

at::Tensor get_mn_major_tma_aligned_tensor_meta(const at::Tensor& sf) {
    const Checker check("get_mn_major_tma_aligned_tensor", CheckMode::kFake);
    const View v = make_view(sf, "sf");
    check_sf_tensor(check, v);
    const bool batched = sf.dim() == 3;
    const auto sizes = sf.sym_sizes();
    const c10::SymInt groups = batched ? sizes[0] : c10::SymInt(1);
    const c10::SymInt m = sizes[batched ? 1 : 0];
    const c10::SymInt k = sizes[batched ? 2 : 1];
    const c10::SymInt aligned_m = ((m + 3) / 4) * 4;
    auto padded = at::empty_strided_symint({groups, aligned_m, k}, {aligned_m * k, 1, aligned_m}, sf.options());
    auto out = padded.narrow_symint(1, 0, m);
    return batched ? out : out.squeeze(0);
}

Recipe parse_recipe(const char* op, c10::IntArrayRef recipe) {
    if (recipe.size() != 3)
        throw_value_error(fmt::format("{}: recipe must be 3 ints (gran_m, gran_n, gran_k); got {} values", op, recipe.size()));
    for (auto r : recipe)
        if (r <= 0) throw_value_error(fmt::format("{}: recipe values must be positive; got ({}, {}, {})", op, recipe[0], recipe[1], recipe[2]));
    return {recipe[0], recipe[1], recipe[2]};
}

namespace {

// Shared by the real and the meta transform: checks and returns the MN granularity.
int64_t check_sf_for_transform(const Checker& check, const View& v, int64_t mn, int64_t k, const Recipe& recipe,
                               std::optional<int64_t> num_groups, bool is_sfa) {
    const int64_t gran_mn = is_sfa ? recipe[0] : recipe[1];
    const int64_t gran_k = recipe[2];
    check.strided(*v.tensor, v.name);
    check.dtype(*v.tensor, v.name, at::kFloat);
    const int expected_dim = num_groups ? 3 : 2;
    if (v.dim != expected_dim)
        check.value_error(fmt::format("{} must be {}-D {}; got {}-D with shape {}", v.name, expected_dim,
                                      num_groups ? "[G, ceil(MN/gran_mn), ceil(K/gran_k)]" : "[ceil(MN/gran_mn), ceil(K/gran_k)]",
                                      v.dim, v.shape_str()));
    if (num_groups and known(v.size[0]) and v.size[0] != *num_groups)
        check.value_error(fmt::format("{}.shape[0] (G) must equal num_groups = {}; got shape {}", v.name, *num_groups, v.shape_str()));
    const int64_t want_mn = ceil_div(mn, gran_mn), want_k = ceil_div(k, gran_k);
    const int i = expected_dim - 2;
    if ((known(v.size[i], want_mn) and v.size[i] != want_mn) or (known(v.size[i + 1], want_k) and v.size[i + 1] != want_k))
        check.value_error(fmt::format("{} must have shape [{}ceil({}/{}), ceil({}/{})] = [{}{}, {}] for recipe ({}, {}, {}); got {}",
                                      v.name, num_groups ? "G, " : "", mn, gran_mn, k, gran_k,
                                      num_groups ? std::to_string(*num_groups) + ", " : "", want_mn, want_k, recipe[0],
                                      recipe[1], recipe[2], v.shape_str()));
    // (1, 128) / (128, 128): the 1D2D kernel's A / B scales (A also the 1D1D kernel's); (1, 32) / (32, 32): its
    // block-32 scales (recipe (1, 32, 32)).
    if (not((gran_mn == 1 or gran_mn == gran_k) and (gran_k == 128 or gran_k == 32)))
        check.not_implemented(fmt::format("scale granularity ({}, {}) for {} is not supported on SM90; use (1, 128) or (128, 128), "
                                          "or (1, 32) or (32, 32) for block-32 scales",
                                          gran_mn, gran_k, v.name));
    return gran_mn;
}

}  // namespace

at::Tensor transform_sf_into_required_layout(const at::Tensor& sf, int64_t mn, int64_t k, const Recipe& recipe,
                                             std::optional<int64_t> num_groups, bool is_sfa, bool /*disable_ue8m0_cast*/,
                                             bool allow_passthrough) {
    const char* op = "transform_sf_into_required_layout";
    const Checker check(op, CheckMode::kReal);
    const View v = make_view(sf, "sf");
    const int64_t gran_mn = check_sf_for_transform(check, v, mn, k, recipe, num_groups, is_sfa);
    if (gran_mn == 1) return get_mn_major_tma_aligned_tensor(sf, allow_passthrough, op, "sf");
    if (not sf.is_contiguous()) return sf.contiguous();
    return allow_passthrough ? sf : sf.clone();  // the op form always returns a fresh tensor
}

at::Tensor transform_sf_into_required_layout_meta(const at::Tensor& sf, int64_t mn, int64_t k, const Recipe& recipe,
                                                  std::optional<int64_t> num_groups, bool is_sfa) {
    const Checker check("transform_sf_into_required_layout", CheckMode::kFake);
    const View v = make_view(sf, "sf");
    const int64_t gran_mn = check_sf_for_transform(check, v, mn, k, recipe, num_groups, is_sfa);
    if (gran_mn == 1) return get_mn_major_tma_aligned_tensor_meta(sf);
    return at::empty_symint(sf.sym_sizes(), sf.options());
}


jit::KernelSource compile_only_kernel_source(std::string_view kernel) {
    if (kernel == "layout_transpose_sf") return kernels::layout_transpose_sf_source();
    throw_value_error(fmt::format("compile_only: unknown kernel \"{}\"; known: layout_transpose_sf", kernel));
}

}  // namespace deep_gemm::api
