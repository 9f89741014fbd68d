// einsum: expression parsing, validation and the launch of each form (einsum.hpp). The kernel is the SM90
// BF16 GEMM with the batch-reduced or head-batched scheduler (GemmGroupedMode::kBatchReduced / kHeadBatched
// in csrc/jit_kernels/impls/sm90_bf16_gemm.cpp); use_cublaslt loops over cublaslt_gemm_* calls instead.
#include "einsum.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "../jit_kernels/impls/sm90_gemm_desc.hpp"
#include "common.hpp"
#include "cublaslt.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

constexpr const char* kOp = "einsum";
constexpr const char* kExprs = "'bmk,bnk->mn', 'bhr,hdr->bhd', 'bhd,hdr->bhr'";
constexpr int64_t kMaxInt = (int64_t(1) << 31) - 1;

// A stride of a dim that may have size 1 (then any stride is legal and unused): the stride, or `fallback`.
int64_t stride_or(const View& v, int i, int64_t fallback) { return v.size[i] > 1 ? v.stride[i] : fallback; }

int64_t align8(int64_t x) { return (x + 7) / 8 * 8; }

void check_sizes_in_range(const Checker& check, std::initializer_list<int64_t> sizes) {
    for (int64_t s : sizes)
        if (known(s) and s > kMaxInt) check.value_error(fmt::format("every dimension must be below 2^31; got {}", s));
}

// Meta/fake tensors: no device to check beyond "not CPU next to CUDA" (the real call checks devices).
void check_fake_devices(const Checker& check, std::initializer_list<const View*> views) {
    const View* first = nullptr;
    for (const View* v : views) {
        if (v == nullptr or not v->tensor->defined()) continue;
        const auto type = v->tensor->device().type();
        if (type == c10::DeviceType::Meta) continue;
        if (first != nullptr and first->tensor->device() != v->tensor->device())
            check.runtime_error(fmt::format("all tensors must be on the same device; {} is on {} but {} is on {}", first->name,
                                            device_name(*first->tensor), v->name, device_name(*v->tensor)));
        if (first == nullptr) first = v;
    }
}

kernels::GemmDesc base_desc(int device) {
    kernels::GemmDesc desc;
    desc.problem.kernel = kernels::GemmKernel::kBf16;
    desc.problem.compiled_dims = get_ignore_compile_dims() ? std::string_view() : std::string_view("nk");
    desc.problem.num_sms = num_sms_for_device(device);
    desc.problem.pdl = get_pdl();
    std::tie(desc.problem.block_m_multiple, desc.problem.block_n_multiple) = get_block_size_multiple_of();
    desc.problem.device = device;
    desc.operands.stream = current_stream(device);
    return desc;
}

// ---- 'bmk,bnk->mn' --------------------------------------------------------------------------------

struct BatchReduced {
    View a, b, d, c;
    bool has_c = false, c_is_d = false;
    int64_t s = 0, m = 0, n = 0, k = 0;
};

BatchReduced validate_batch_reduced(const Checker& check, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                                    const at::Tensor* c) {
    BatchReduced p;
    p.a = check.view(a, "a"), p.b = check.view(b, "b"), p.d = check.view(d, "d");
    check.dtype(a, "a", at::kBFloat16);
    check.dtype(b, "b", at::kBFloat16);
    check.dtype_in(d, "d", {at::kFloat, at::kBFloat16});
    check.rank(p.a, 3, "[S, M, K]");
    check.rank(p.b, 3, "[S, N, K]");
    check.rank(p.d, 2, "[M, N]");
    p.s = p.a.size[0], p.m = p.a.size[1], p.k = p.a.size[2];
    p.n = p.b.size[1];
    check.size_eq(p.b, 0, p.s, "S", "a.shape[0]");
    check.size_eq(p.b, 2, p.k, "K", "a.shape[2]");
    check.size_eq(p.d, 0, p.m, "M", "a.shape[1]");
    check.size_eq(p.d, 1, p.n, "N", "b.shape[1]");
    if (c != nullptr) {
        p.has_c = true;
        p.c = check.view(*c, "c");
        if (d.scalar_type() != at::kFloat)
            check.value_error(fmt::format("c is only supported with a float32 d (D = C + sum A B^T in FP32); got d {}",
                                          dtype_name(d.scalar_type())));
        check.dtype(*c, "c", at::kFloat);
        check.rank(p.c, 2, "[M, N]");
        check.size_eq(p.c, 0, p.m, "M", "a.shape[1]");
        check.size_eq(p.c, 1, p.n, "N", "b.shape[1]");
        if (not check.has_unit_stride(p.c, 1)) check.value_error(fmt::format("c must have unit stride along N; got strides {}", p.c.stride_str()));
        p.c_is_d = c->is_same(d) or (c->data_ptr() == d.data_ptr() and c->strides() == d.strides() and c->sizes() == d.sizes());
    }
    check_sizes_in_range(check, {p.s, p.m, p.n, p.k});
    // K-major operands through 3-D tensor maps {K, rows, batch}.
    for (View* v : {&p.a, &p.b}) {
        if (not check.has_unit_stride(*v, 2))
            check.value_error(fmt::format("{} must be K-major (unit stride along K); got strides {} (shape {})", v->name,
                                          v->stride_str(), v->shape_str()));
        check.tma_outer_stride(*v, 1, v->size[2]);
        check.tma_outer_stride(*v, 0, known(v->size[1]) and known(v->stride[1]) ? v->size[1] * v->stride[1] : kUnknown);
        check.tma_base(*v);
    }
    if (not check.has_unit_stride(p.d, 1)) check.value_error(fmt::format("d must have unit stride along N; got strides {}", p.d.stride_str()));
    if (known(p.d.stride[0], p.n) and p.d.size[0] > 1 and p.d.stride[0] < p.n)
        check.value_error(fmt::format("d rows must not overlap (stride(0) >= N = {}); got strides {}", p.n, p.d.stride_str()));
    check_no_overlap(check, p.d, {&p.a, &p.b});
    if (p.has_c and not p.c_is_d) check_no_overlap(check, p.d, {&p.c});
    return p;
}

// Batch splits: when the M x N tiles (counted at 128 x 128) cannot fill the GPU, each tile's batches are split over
// enough CTAs to fill it (at most 64, at least 2 batches per split), each writing an FP32 partial tile.
int batch_splits(const BatchReduced& p, int num_sms) {
    const int64_t tiles = ((p.m + 127) / 128) * ((p.n + 127) / 128);
    const int64_t splits = std::min<int64_t>({num_sms / std::max<int64_t>(tiles, 1), 64, p.s / 2});
    return int(std::max<int64_t>(splits, 1));
}

void run_batch_reduced(const BatchReduced& p, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                       const at::Tensor* c, int device) {
    if (p.m == 0 or p.n == 0) return;
    if (p.s == 0 or p.k == 0) {  // no product: d = c or zeros
        if (p.has_c) {
            if (not p.c_is_d) d.copy_(*c);
        } else {
            d.zero_();
        }
        return;
    }
    kernels::GemmDesc desc = base_desc(device);
    kernels::GemmProblem& q = desc.problem;
    kernels::GemmOperands& o = desc.operands;
    q.mode = kernels::GemmGroupedMode::kBatchReduced;
    q.m = int(p.m), q.n = int(p.n), q.k = int(p.k), q.num_groups = int(p.s);
    q.batch_splits = batch_splits(p, q.num_sms);
    o.a = a.const_data_ptr(), o.b = b.const_data_ptr();
    o.lda = stride_or(p.a, 1, align8(p.k)), o.ldb = stride_or(p.b, 1, align8(p.k));
    o.a_group_stride = stride_or(p.a, 0, p.m * o.lda), o.b_group_stride = stride_or(p.b, 0, p.n * o.ldb);
    if (q.batch_splits > 1) {
        // FP32 partial tiles [splits, M, N], added up (with C) in a fixed order afterwards: deterministic.
        const at::Tensor partials = at::empty({q.batch_splits, p.m, p.n}, d.options().dtype(at::kFloat));
        q.d_fp32 = true, q.d_tma_ok = false;
        o.d = partials.data_ptr(), o.ldd = p.n;
        kernels::run_gemm(desc);
        const at::Tensor sum = partials.sum(0);
        if (p.has_c) {
            at::add_out(const_cast<at::Tensor&>(d), *c, sum);
        } else {
            d.copy_(sum);
        }
        return;
    }
    q.d_fp32 = d.scalar_type() == at::kFloat;
    q.with_c = p.has_c;
    o.d = d.data_ptr();
    o.ldd = stride_or(p.d, 0, p.n);
    q.d_tma_ok = kernels::aligned(o.d, 16) and o.ldd % 8 == 0;
    if (p.has_c) o.c = c->const_data_ptr(), o.ldc = stride_or(p.c, 0, p.n);
    kernels::run_gemm(desc);
}

// cuBLASLt: one cublaslt_gemm_nt per batch, accumulating into an FP32 d (a BF16 d gets an FP32 scratch,
// rounded once at the end).
void run_batch_reduced_cublaslt(const BatchReduced& p, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                                const at::Tensor* c) {
    if (p.m == 0 or p.n == 0) return;
    const bool fp32 = d.scalar_type() == at::kFloat;
    at::Tensor acc = fp32 ? d : at::empty({p.m, p.n}, d.options().dtype(at::kFloat));
    if (p.has_c) {
        if (not p.c_is_d) acc.copy_(*c);
    } else {
        acc.zero_();
    }
    for (int64_t s = 0; s < p.s and p.k > 0; ++s)
        cublaslt_gemm(CublasLtLayout::kNt, a.select(0, s), b.select(0, s), acc, acc, false);
    if (not fp32) d.copy_(acc);
}

// ---- 'bhr,hdr->bhd' and 'bhd,hdr->bhr' ---------------------------------------------------------------

struct Heads {
    View x, y, z;
    bool y_k_major = true;
    int64_t bsz = 0, h = 0, m = 0, n = 0, k = 0;  // m = B; per head N x K
};

Heads validate_heads(const Checker& check, EinsumForm form, const at::Tensor& x, const at::Tensor& y, const at::Tensor& z,
                     const at::Tensor* c) {
    Heads p;
    const bool nt = form == EinsumForm::kHeadsNt;
    p.y_k_major = nt;
    p.x = check.view(x, "x"), p.y = check.view(y, "y"), p.z = check.view(z, "z");
    if (c != nullptr) check.value_error(fmt::format("c is only supported by 'bmk,bnk->mn'; got a c with '{}'",
                                                    nt ? "bhr,hdr->bhd" : "bhd,hdr->bhr"));
    check.dtype(x, "x", at::kBFloat16);
    check.dtype(y, "y", at::kBFloat16);
    check.dtype(z, "z", at::kBFloat16);
    check.rank(p.x, 3, nt ? "[B, H, R]" : "[B, H, D]");
    check.rank(p.y, 3, "[H, D, R]");
    check.rank(p.z, 3, nt ? "[B, H, D]" : "[B, H, R]");
    p.m = p.x.size[0], p.h = p.x.size[1], p.k = p.x.size[2];
    // y [H, D, R]: 'bhr,hdr->bhd' contracts R (y K-major, N = D); 'bhd,hdr->bhr' contracts D (y N-major, N = R).
    p.n = nt ? p.y.size[1] : p.y.size[2];
    check.size_eq(p.y, 0, p.h, "H", "x.shape[1]");
    check.size_eq(p.y, nt ? 2 : 1, p.k, nt ? "R" : "D", "x.shape[2]");
    check.size_eq(p.z, 0, p.m, "B", "x.shape[0]");
    check.size_eq(p.z, 1, p.h, "H", "x.shape[1]");
    check.size_eq(p.z, 2, p.n, nt ? "D" : "R", nt ? "y.shape[1]" : "y.shape[2]");
    check_sizes_in_range(check, {p.m, p.h, p.n, p.k});
    // x through a 3-D map {K, H, B}: unit stride along K, 16-byte head and row strides.
    if (not check.has_unit_stride(p.x, 2))
        check.value_error(fmt::format("x must have unit stride along its last dim; got strides {} (shape {})", p.x.stride_str(), p.x.shape_str()));
    check.tma_outer_stride(p.x, 1, p.k);
    check.tma_outer_stride(p.x, 0, known(p.h) and known(p.x.stride[1]) and p.h > 1 ? p.h * p.x.stride[1] : align8(p.k) * p.h);
    check.tma_base(p.x);
    // y (a strided slice such as fy[:, :, :r] is fine): unit stride along R, 16-byte strides.
    if (not check.has_unit_stride(p.y, 2))
        check.value_error(fmt::format("y must have unit stride along R (its last dim); got strides {} (shape {})", p.y.stride_str(),
                                      p.y.shape_str()));
    check.tma_outer_stride(p.y, 1, p.y.size[2]);
    check.tma_outer_stride(p.y, 0, known(p.y.size[1]) and known(p.y.stride[1]) ? p.y.size[1] * p.y.stride[1] : kUnknown);
    check.tma_base(p.y);
    // z: heads side by side in each row (z[b] is a packed [H, N] block), rows 2-byte aligned pairs.
    if (not check.has_unit_stride(p.z, 2) or (p.h > 1 and known(p.z.stride[1]) and p.z.stride[1] != p.n))
        check.value_error(fmt::format("z must have strides (*, N, 1) with N = {} (each z[b] a packed [H, N] block); got strides {}",
                                      p.n, p.z.stride_str()));
    if (p.m > 1 and known(p.z.stride[0]) and known(p.h) and p.z.stride[0] < p.h * p.n)
        check.value_error(fmt::format("z rows must not overlap (stride(0) >= H * N = {}); got strides {}", p.h * p.n, p.z.stride_str()));
    if (known(p.n) and p.n % 2 != 0)
        check.value_error(fmt::format("{} (the output's last dim) must be even; got {}", nt ? "D" : "R", p.n));
    check_no_overlap(check, p.z, {&p.x, &p.y});
    return p;
}

void run_heads(const Heads& p, const at::Tensor& x, const at::Tensor& y, const at::Tensor& z, int device) {
    if (p.m == 0 or p.h == 0 or p.n == 0) return;
    if (p.k == 0) {
        z.zero_();
        return;
    }
    kernels::GemmDesc desc = base_desc(device);
    kernels::GemmProblem& q = desc.problem;
    kernels::GemmOperands& o = desc.operands;
    q.mode = kernels::GemmGroupedMode::kHeadBatched;
    q.m = int(p.m), q.n = int(p.n), q.k = int(p.k), q.num_groups = int(p.h);
    q.b_k_major = p.y_k_major;
    o.a = x.const_data_ptr(), o.b = y.const_data_ptr(), o.d = z.data_ptr();
    o.a_group_stride = stride_or(p.x, 1, align8(p.k));
    o.lda = stride_or(p.x, 0, p.h * o.a_group_stride);
    const int64_t y_rows = p.y.size[1], y_inner = p.y.size[2];
    o.ldb = stride_or(p.y, 1, align8(y_inner));
    o.b_group_stride = stride_or(p.y, 0, y_rows * o.ldb);
    o.d_group_stride = p.n;
    o.ldd = stride_or(p.z, 0, p.h * p.n);
    q.d_tma_ok = kernels::aligned(o.d, 16) and o.ldd % 8 == 0;
    kernels::run_gemm(desc);
}

// cuBLASLt: one strided-batched call over the heads, each on its [B, *] slices (nt: y[h] is [D, R] K-major;
// nn: y[h] is [D, R] = [K, N]); one call per head cost ~4 µs of host time each (h = 128: 0.5 ms).
void run_heads_cublaslt(const Heads& p, const at::Tensor& x, const at::Tensor& y, const at::Tensor& z) {
    if (p.m == 0 or p.h == 0 or p.n == 0) return;
    if (p.k == 0) {
        z.zero_();
        return;
    }
    const CublasLtLayout layout = p.y_k_major ? CublasLtLayout::kNt : CublasLtLayout::kNn;
    cublaslt_gemm_batched(layout, x.transpose(0, 1), y, z.transpose(0, 1));
}

// ---- fp8_einsum('bhr,hdr->bhd') -------------------------------------------------------------------------

struct Fp8Heads {
    View x, sx, y, sy, z;
    int64_t m = 0, h = 0, n = 0, k = 0, kb = 0;
};

Fp8Heads validate_fp8_heads(const Checker& check, const at::Tensor& x, const at::Tensor& sx, const at::Tensor& y,
                            const at::Tensor& sy, const at::Tensor& z) {
    Fp8Heads p;
    p.x = check.view(x, "a"), p.sx = check.view(sx, "sfa"), p.y = check.view(y, "b"), p.sy = check.view(sy, "sfb");
    p.z = check.view(z, "d");
    check.dtype(x, "a", at::kFloat8_e4m3fn);
    check.dtype(sx, "sfa", at::kFloat);
    check.dtype(y, "b", at::kFloat8_e4m3fn);
    check.dtype(sy, "sfb", at::kFloat);
    check.dtype(z, "d", at::kBFloat16);
    check.rank(p.x, 3, "[B, H, R]");
    check.rank(p.sx, 3, "[B, H, ceil(R / 128)]");
    check.rank(p.y, 3, "[H, D, R]");
    check.rank(p.sy, 3, "[H, ceil(D / 128), ceil(R / 128)]");
    check.rank(p.z, 3, "[B, H, D]");
    p.m = p.x.size[0], p.h = p.x.size[1], p.k = p.x.size[2], p.n = p.y.size[1];
    p.kb = ceil_div(p.k, 128);
    check.size_eq(p.sx, 0, p.m, "B", "a.shape[0]");
    check.size_eq(p.sx, 1, p.h, "H", "a.shape[1]");
    check.size_eq(p.sx, 2, p.kb, "ceil(R / 128)", "a.shape[2]");
    check.size_eq(p.y, 0, p.h, "H", "a.shape[1]");
    check.size_eq(p.y, 2, p.k, "R", "a.shape[2]");
    check.size_eq(p.sy, 0, p.h, "H", "a.shape[1]");
    check.size_eq(p.sy, 1, ceil_div(p.n, 128), "ceil(D / 128)", "b.shape[1]");
    check.size_eq(p.sy, 2, p.kb, "ceil(R / 128)", "a.shape[2]");
    check.size_eq(p.z, 0, p.m, "B", "a.shape[0]");
    check.size_eq(p.z, 1, p.h, "H", "a.shape[1]");
    check.size_eq(p.z, 2, p.n, "D", "b.shape[1]");
    check_sizes_in_range(check, {p.m, p.h, p.n, p.k});
    if (known(p.k) and p.k % 16 != 0) check.value_error(fmt::format("R must be a multiple of 16 (16-byte FP8 rows); got {}", p.k));
    for (View* v : {&p.x, &p.y}) {
        if (not check.has_unit_stride(*v, 2))
            check.value_error(fmt::format("{} must have unit stride along R (its last dim); got strides {} (shape {})", v->name,
                                          v->stride_str(), v->shape_str()));
        check.tma_outer_stride(*v, 1, p.k);
        check.tma_base(*v);
    }
    check.tma_outer_stride(p.x, 0, known(p.h) and known(p.x.stride[1]) and p.h > 1 ? p.h * p.x.stride[1] : p.h * p.k);
    check.tma_outer_stride(p.y, 0, known(p.y.size[1]) and known(p.y.stride[1]) ? p.y.size[1] * p.y.stride[1] : kUnknown);
    if (not p.sy.empty()) check.contiguous(p.sy, "the kernel reads sfb as a packed [H, ceil(D / 128), ceil(R / 128)] array");
    if (not check.has_unit_stride(p.z, 2) or (p.h > 1 and known(p.z.stride[1]) and p.z.stride[1] != p.n))
        check.value_error(fmt::format("d must have strides (*, D, 1) with D = {} (each d[b] a packed [H, D] block); got strides {}",
                                      p.n, p.z.stride_str()));
    if (p.m > 1 and known(p.z.stride[0]) and known(p.h) and p.z.stride[0] < p.h * p.n)
        check.value_error(fmt::format("d rows must not overlap (stride(0) >= H * D = {}); got strides {}", p.h * p.n, p.z.stride_str()));
    if (known(p.n) and p.n % 2 != 0) check.value_error(fmt::format("D must be even; got {}", p.n));
    check_no_overlap(check, p.z, {&p.x, &p.sx, &p.y, &p.sy});
    return p;
}

void run_fp8_heads(const Fp8Heads& p, const at::Tensor& x, const at::Tensor& sx, const at::Tensor& y, const at::Tensor& sy,
                   const at::Tensor& z, int device) {
    if (p.m == 0 or p.h == 0 or p.n == 0) return;
    if (p.k == 0) {
        z.zero_();
        return;
    }
    // The kernel reads A's scales M-major per head, [H, ceil(R / 128), align(B, 4)] (the masked layout), through
    // TMA: one transposing copy of the [B, H, ceil(R / 128)] scales (stream-ordered, freed after the launch).
    const int64_t b_pad = (p.m + 3) / 4 * 4;
    at::Tensor sfa = at::empty({p.h, p.kb, b_pad}, sx.options());
    sfa.narrow(2, 0, p.m).copy_(sx.permute({1, 2, 0}));
    kernels::GemmDesc desc = base_desc(device);
    desc.problem.kernel = kernels::GemmKernel::kFp8_1d2d;
    kernels::GemmProblem& q = desc.problem;
    kernels::GemmOperands& o = desc.operands;
    q.mode = kernels::GemmGroupedMode::kHeadBatched;
    q.m = int(p.m), q.n = int(p.n), q.k = int(p.k), q.num_groups = int(p.h);
    o.a = x.const_data_ptr(), o.b = y.const_data_ptr(), o.d = z.data_ptr();
    o.sfa = sfa.const_data_ptr<float>(), o.sfb = sy.const_data_ptr<float>();
    o.a_group_stride = stride_or(p.x, 1, (p.k + 15) / 16 * 16);
    o.lda = stride_or(p.x, 0, p.h * o.a_group_stride);
    o.ldb = stride_or(p.y, 1, (p.k + 15) / 16 * 16);
    o.b_group_stride = stride_or(p.y, 0, p.n * o.ldb);
    o.sfa_stride = b_pad, o.sfa_group_stride = p.kb * b_pad;
    o.d_group_stride = p.n;
    o.ldd = stride_or(p.z, 0, p.h * p.n);
    q.d_tma_ok = kernels::aligned(o.d, 16) and o.ldd % 8 == 0;
    kernels::run_gemm(desc);
}

}  // namespace

void fp8_einsum(std::string_view expr, const at::Tensor& a, const at::Tensor& sfa, const at::Tensor& b, const at::Tensor& sfb,
                const at::Tensor& d, const std::optional<at::Tensor>& c, c10::IntArrayRef recipe, bool fake) {
    constexpr const char* kFp8Op = "fp8_einsum";
    const Checker check(kFp8Op, fake ? CheckMode::kFake : CheckMode::kReal);
    if (parse_einsum_expr(kFp8Op, expr) != EinsumForm::kHeadsNt)
        check.value_error(fmt::format("on SM90 expr must be 'bhr,hdr->bhd' (DeepGEMM runs the other forms on SM100 only); got '{}'",
                                      std::string(expr)));
    if (recipe.size() != 3 or recipe[0] != 1 or recipe[1] != 128 or recipe[2] != 128) {
        std::string got;
        for (int64_t v : recipe) got += (got.empty() ? "" : ", ") + std::to_string(v);
        check.value_error(fmt::format("recipe must be (1, 128, 128) (per-token x scales, 128x128 y blocks); got ({})", got));
    }
    if (c.has_value() and c->defined()) check.value_error("c is not supported by 'bhr,hdr->bhd'; pass c=None");
    const Fp8Heads p = validate_fp8_heads(check, a, sfa, b, sfb, d);
    if (fake) return check_fake_devices(check, {&p.x, &p.sx, &p.y, &p.sy, &p.z});
    const int device = check.same_cuda_device({&p.x, &p.sx, &p.y, &p.sy, &p.z});
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    require_sm90(check, device);
    run_fp8_heads(p, a, sfa, b, sfb, d, device);
}

EinsumForm parse_einsum_expr(const char* op, std::string_view expr) {
    std::string s;
    for (char ch : expr)
        if (ch != ' ' and ch != '\t') s.push_back(ch);
    if (s == "bmk,bnk->mn") return EinsumForm::kBatchReduced;
    if (s == "bhr,hdr->bhd") return EinsumForm::kHeadsNt;
    if (s == "bhd,hdr->bhr") return EinsumForm::kHeadsNn;
    throw_value_error(fmt::format("{}: expr must be one of {} (the SM90 forms); got '{}'", op, kExprs, std::string(expr)));
}

void einsum(std::string_view expr, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
            const std::optional<at::Tensor>& c, bool use_cublaslt, bool fake) {
    const Checker check(kOp, fake ? CheckMode::kFake : CheckMode::kReal);
    const EinsumForm form = parse_einsum_expr(kOp, expr);
    const at::Tensor* c_ptr = c.has_value() and c->defined() ? &*c : nullptr;
    if (form == EinsumForm::kBatchReduced) {
        const BatchReduced p = validate_batch_reduced(check, a, b, d, c_ptr);
        const View* cv = p.has_c ? &p.c : nullptr;
        if (fake) return check_fake_devices(check, {&p.a, &p.b, &p.d, cv});
        const int device = check.same_cuda_device({&p.a, &p.b, &p.d, cv});
        const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
        if (use_cublaslt) return run_batch_reduced_cublaslt(p, a, b, d, c_ptr);
        require_sm90(check, device);
        return run_batch_reduced(p, a, b, d, c_ptr, device);
    }
    const Heads p = validate_heads(check, form, a, b, d, c_ptr);
    if (fake) return check_fake_devices(check, {&p.x, &p.y, &p.z});
    const int device = check.same_cuda_device({&p.x, &p.y, &p.z});
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    if (use_cublaslt) return run_heads_cublaslt(p, a, b, d);
    require_sm90(check, device);
    run_heads(p, a, b, d, device);
}

}  // namespace deep_gemm::api
