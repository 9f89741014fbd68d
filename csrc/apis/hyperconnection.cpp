#include "hyperconnection.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include "../jit_kernels/impls/sm90_tf32_hc_prenorm_gemm.hpp"
#include "common.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

// Unit stride along `inner` and a 16-byte aligned start and rows (TMA reads the operand row by row).
void check_tma_rows(const Checker& check, const View& v, const char* dims) {
    if (not check.has_unit_stride(v, 1))
        check.value_error(fmt::format("{} {} must be K-major (unit stride along K); got strides {}", v.name, dims, v.stride_str()));
    check.tma_outer_stride(v, 0, v.size[1]);
    check.tma_base(v);
}

// The row stride TMA gets: a single row's stride is never followed, so any valid value serves.
int64_t tma_row_stride(const at::Tensor& t) { return t.size(0) > 1 ? t.stride(0) : (t.size(1) + 7) / 8 * 8; }

}  // namespace

void tf32_hc_prenorm_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor& sqr_sum,
                          std::optional<int64_t> num_splits, bool fake) {
    const Checker check("tf32_hc_prenorm_gemm", fake ? CheckMode::kFake : CheckMode::kReal);
    check.dtype(a, "a", at::kBFloat16);
    check.dtype(b, "b", at::kFloat);
    check.dtype(d, "d", at::kFloat);
    check.dtype(sqr_sum, "sqr_sum", at::kFloat);
    const View av = check.view(a, "a"), bv = check.view(b, "b"), dv = check.view(d, "d"), sv = check.view(sqr_sum, "sqr_sum");
    check.rank(av, 2, "[m, k]");
    check.rank(bv, 2, "[n, k]");
    const int64_t m = av.size[0], k = av.size[1], n = bv.size[0];
    check.size_eq(bv, 1, k, "K", "a.shape[1]");
    if (known(n) and (n < 1 or n > kernels::kHcMaxN))
        check.value_error(fmt::format("b.shape[0] = n must be in [1, {}] (all of b's rows are one tile); got b shape {}",
                                      kernels::kHcMaxN, bv.shape_str()));
    if (known(k) and k < 1) check.value_error(fmt::format("K = a.shape[1] must be positive; got a shape {}", av.shape_str()));
    if ((known(m) and m >= (int64_t{1} << 31)) or (known(k) and k >= (int64_t{1} << 31)))
        check.value_error(fmt::format("m and k must be below 2^31; got a shape {}", av.shape_str()));

    const bool split = num_splits.has_value();
    const int64_t s = split ? *num_splits : 1;
    if (split and (s < 1 or s > kHcMaxSplits))
        check.value_error(fmt::format("num_splits must be None or in [1, {}]; got {}", kHcMaxSplits, s));
    // d [(S,) m, n] and sqr_sum [(S,) m]; `o` is the offset of the m dim.
    const int o = split ? 1 : 0;
    if (split) {
        check.rank(dv, 3, "[num_splits, m, n]");
        check.rank(sv, 2, "[num_splits, m]");
        check.size_eq(dv, 0, s, "num_splits", "num_splits");
        check.size_eq(sv, 0, s, "num_splits", "num_splits");
    } else {
        check.rank(dv, 2, "[m, n]");
        check.rank(sv, 1, "[m]");
    }
    check.size_eq(dv, o, m, "M", "a.shape[0]");
    check.size_eq(dv, o + 1, n, "N", "b.shape[0]");
    check.size_eq(sv, o, m, "M", "a.shape[0]");

    check_tma_rows(check, av, "[m, k]");
    check_tma_rows(check, bv, "[n, k]");
    // The kernel writes d[s, i, j] at s * stride(0) + i * stride(-2) + j and sqr_sum[s, i] at s * stride(0) + i:
    // unit inner strides, rows and splits that do not overlap.
    if (not check.has_unit_stride(dv, o + 1))
        check.value_error(fmt::format("d must have unit stride along n; got strides {} (shape {})", dv.stride_str(), dv.shape_str()));
    if (not check.has_unit_stride(sv, o))
        check.value_error(fmt::format("sqr_sum must have unit stride along m; got strides {} (shape {})", sv.stride_str(), sv.shape_str()));
    if (known(dv.stride[o], n) and dv.size[o] > 1 and dv.stride[o] < n)
        check.value_error(fmt::format("d rows must not overlap (stride along m >= n = {}); got strides {}", n, dv.stride_str()));
    if (split and s > 1 and known(m) and m > 0) {
        const int64_t row = m > 1 ? dv.stride[1] : n;
        if (known(dv.stride[0], row) and dv.stride[0] < m * row)
            check.value_error(fmt::format("d splits must not overlap (stride along num_splits >= m * row stride = {}); got strides {}",
                                          m * row, dv.stride_str()));
        if (known(sv.stride[0]) and sv.stride[0] < m)
            check.value_error(fmt::format("sqr_sum splits must not overlap (stride along num_splits >= m = {}); got strides {}", m,
                                          sv.stride_str()));
    }
    check_no_overlap(check, dv, {&av, &bv, &sv});
    check_no_overlap(check, sv, {&av, &bv});
    if (fake) return;

    const int device = check.same_cuda_device({&av, &bv, &dv, &sv});
    if (m == 0) return;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    kernels::HcPrenormArgs args;
    args.a = a.const_data_ptr();
    args.a_row_stride = tma_row_stride(a);
    args.b = b.const_data_ptr<float>();
    args.b_row_stride = tma_row_stride(b);
    args.d = d.mutable_data_ptr<float>();
    args.d_row_stride = d.stride(o);
    args.d_split_stride = split ? d.stride(0) : 0;
    args.sqr_sum = sqr_sum.mutable_data_ptr<float>();
    args.s_split_stride = split ? sqr_sum.stride(0) : 0;
    args.m = static_cast<int>(m);
    args.n = static_cast<int>(n);
    args.k = static_cast<int>(k);
    args.num_splits = static_cast<int>(s);
    args.num_sms = num_sms_for_device(device);
    args.pdl = get_pdl();
    args.device = device;
    args.stream = current_stream(device);
    kernels::tf32_hc_prenorm_gemm(args);
}


HcPrenormKernelPlan hc_prenorm_kernel_plan(int m, int n, int k, int num_splits, int num_sms) {
    const kernels::HcPrenormPlan plan = kernels::plan_hc_prenorm(m, n, k, num_splits, num_sms);
    return {kernels::hc_prenorm_source(plan.config).kernel_source(), plan.config.block_n, plan.config.stages, plan.reduce,
            plan.num_units, plan.smem_bytes};
}

}  // namespace deep_gemm::api
