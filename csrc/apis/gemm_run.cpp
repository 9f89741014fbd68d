// GEMM execution: run_gemm (validate, device and empty-problem handling, kernel dispatch) and the
// per-kernel runners that turn a validated Problem into the one description of a kernel call
// (kernels::GemmDesc; FP8 1D2D; FP8 1D1D dense and K-grouped; BF16 dense, M-grouped and K-grouped), which
// the SM90 GEMM launch path runs (kernels::run_gemm).
#include "gemm_internal.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <span>
#include <tuple>

#include "../jit_kernels/heuristics/sm90_fp8_config.hpp"
#include "../jit_kernels/impls/sm90_gemm_desc.hpp"
#include "layout.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

// d = c (or zeros): the whole result when K == 0.
void fill_without_product(const Problem& p, const GemmCall& call) {
    if (not call.head_splits.empty()) {  // fp8_gemm_nt_skip_head_mid: zeros in each head's left and right columns only
        const int64_t left = call.head_splits[0], mid = call.head_splits[1], right = call.head_splits[2];
        const at::Tensor heads = call.d->unflatten(1, {p.n / (left + right), left + mid + right});
        heads.narrow(2, 0, left).zero_();
        heads.narrow(2, left + mid, right).zero_();
        return;
    }
    if (p.has_c) {
        if (not p.c_is_d) call.d->copy_(*call.c);
    } else {
        call.d->zero_();
    }
}

// m == 0 or n == 0: nothing to do; k == 0: d = c or zeros. True when handled.
bool handle_empty(const Problem& p, const GemmCall& call) {
    if (p.m == 0 or p.n == 0 or p.groups == 0) return true;
    if (p.k == 0) {
        fill_without_product(p, call);
        return true;
    }
    return false;
}

// Whether a view's elements are laid out row-major and packed (size-1 dims may carry any stride).
bool packed_row_major(const View& v) {
    int64_t expected = 1;
    for (int i = v.dim - 1; i >= 0; --i) {
        if (v.size[i] > 1 and v.stride[i] != expected) return false;
        expected *= v.size[i];
    }
    return true;
}

int clamp_to_int(int64_t v) { return static_cast<int>(std::min<int64_t>(v, std::numeric_limits<int>::max())); }

// The description of a kernel call: the problem as the planner builds it (gemm_problem.hpp) from what
// validation learned, plus the device settings; the caller adds the tensors (and BF16 the majors of their memory).
kernels::GemmDesc call_desc(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, int device) {
    GemmCallScalars s;
    s.kernel = p.kernel;
    s.m = static_cast<int>(p.m), s.n = static_cast<int>(p.n), s.k = static_cast<int>(p.k);
    s.num_groups = static_cast<int>(p.groups);
    if (spec.grouping == G::kMMasked) {
        s.expected_m = clamp_to_int(call.expected_m);
    } else if (spec.grouping == G::kMContiguous) {
        s.use_psum_layout = call.use_psum_layout;
        s.ensure_zero_padding = call.ensure_zero_padding;
        s.mk_alignment = get_mk_alignment_for_contiguous_layout();
        if (call.use_psum_layout and call.expected_m_for_psum_layout) s.expected_m = clamp_to_int(*call.expected_m_for_psum_layout);
    } else if (spec.grouping == G::kKContiguous and call.use_padded_sf_layout) {
        s.sf_group_align = get_mk_alignment_for_contiguous_layout();  // validate() checked it is positive
    }
    s.d_fp32 = call.d->scalar_type() == at::kFloat;
    s.with_c = p.has_c;
    s.c_fp32 = p.has_c and call.c->scalar_type() == at::kFloat;
    s.sf_gran_k = recipe_sf_gran_k(p.recipe);
    std::tie(s.block_m_multiple, s.block_n_multiple) = get_block_size_multiple_of();
    s.compiled_dims = get_ignore_compile_dims() ? std::string_view() : call.compiled_dims;

    kernels::GemmDesc desc;
    desc.problem = gemm_problem(spec, s);
    desc.problem.num_sms = num_sms_for_device(device);
    desc.problem.pdl = get_pdl();
    desc.problem.device = device;
    desc.operands.stream = current_stream(device);
    return desc;
}

// The C an epilogue reads (D = C + acc): rows of at least N elements with unit column stride (row stride below
// 2^32), of `dtype`; c itself when it is d or already so, else a converted copy kept alive in `holder`. Sets
// o.c and o.ldc (o.d / o.ldd set already). Each element of C is read, then D's written, by the same thread,
// so c may be d.
void set_epilogue_c(const Problem& p, const GemmCall& call, at::ScalarType dtype, at::Tensor& holder,
                    kernels::GemmOperands& o) {
    if (p.c_is_d) {
        o.c = o.d, o.ldc = o.ldd;
        return;
    }
    const bool usable = call.c->scalar_type() == dtype and (p.c.stride[1] == 1 or p.n <= 1) and
                        (p.m <= 1 or (p.c.stride[0] >= p.n and p.c.stride[0] < (int64_t(1) << 32)));
    const at::Tensor& c = usable ? *call.c : (holder = call.c->to(dtype).contiguous());
    o.c = c.const_data_ptr();
    o.ldc = p.m > 1 ? c.stride(0) : o.ldd;
}

// Block-32 B scales ([ceil(N/32), ceil(K/32)] in the kernel's orientation) as the kernel reads them: rows of
// 4 * ceil(K/128) scales, 16-byte aligned, zeros past ceil(K/32) (a 128-K block's four scales of a column slice
// are one 16-byte load). The caller's tensor when it already is so (packed row-major, K a multiple of 128),
// else a padded copy kept alive in `holder`.
const float* block32_sfb(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, at::Tensor& holder) {
    const int64_t cols = p.sfb.size[1];
    if (cols % 4 == 0 and packed_row_major(p.sfb) and reinterpret_cast<uintptr_t>(call.sfb->const_data_ptr()) % 16 == 0)
        return call.sfb->const_data_ptr<float>();
    holder = at::zeros({p.sfb.size[0], align_up(cols, 4)}, call.sfb->options());
    holder.narrow(1, 0, cols).copy_(spec.trans_b ? call.sfb->transpose(0, 1) : *call.sfb);
    return holder.const_data_ptr<float>();
}

void run_fp8_1d2d(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, int device) {
    const bool masked = spec.grouping == G::kMMasked;
    const int im = p.sfa.dim - 2, ik = p.sfa.dim - 1;  // sfa's M and K-block dims ([G, M, K'] when masked)
    // A scales: the kernel reads them M-major with the M stride aligned to 4 (masked: per group, the groups
    // packed); convert unless they already are.
    at::Tensor sfa_converted;
    const float* sfa_ptr = nullptr;
    int64_t sfa_stride = 0, sfa_group_stride = 0;
    if (is_mn_major_tma_aligned(p.sfa, CheckMode::kReal)) {
        sfa_ptr = call.sfa->const_data_ptr<float>();
        sfa_stride = p.sfa.stride[ik];
        sfa_group_stride = masked ? align_up(p.sfa.size[im], 4) * p.sfa.size[ik] : 0;
    } else {
        sfa_converted = get_mn_major_tma_aligned_tensor(spec.trans_a ? call.sfa->transpose(0, 1) : *call.sfa, false, spec.name, "sfa");
        sfa_ptr = sfa_converted.const_data_ptr<float>();
        sfa_stride = sfa_converted.stride(ik);
        sfa_group_stride = masked ? align_up(p.sfa.size[im], 4) * p.sfa.size[ik] : 0;
    }
    // B scales: row-major [(G,) ceil(N/128), ceil(K/128)], packed; block-32 scales: block32_sfb().
    at::Tensor sfb_converted;
    const float* sfb_ptr = nullptr;
    if (p.recipe == kRecipeBlock32) {
        sfb_ptr = block32_sfb(spec, p, call, sfb_converted);
    } else if (packed_row_major(p.sfb)) {
        sfb_ptr = call.sfb->const_data_ptr<float>();
    } else {
        sfb_converted = (spec.trans_b ? call.sfb->transpose(0, 1) : *call.sfb).contiguous();
        sfb_ptr = sfb_converted.const_data_ptr<float>();
    }

    kernels::GemmDesc desc = call_desc(spec, p, call, device);
    kernels::GemmProblem& q = desc.problem;
    kernels::GemmOperands& o = desc.operands;
    o.a = call.a->const_data_ptr();
    o.b = call.b->const_data_ptr();
    o.sfa = sfa_ptr;
    o.sfb = sfb_ptr;
    o.d = call.d->mutable_data_ptr();
    // A size-1 dim may carry any stride; give TMA an aligned one (only row 0 is read).
    const int ia = p.a.dim - 2, ib = p.b.dim - 2, id = p.d.dim - 2;
    o.lda = p.m > 1 ? p.a.stride[ia] : align_up(p.k, 16);
    o.ldb = p.n > 1 ? p.b.stride[ib] : align_up(p.k, 16);
    // Masked D rows are g * max_m + m: with max_m == 1 the row stride is the group stride.
    o.ldd = p.m > 1 ? p.d.stride[id] : masked and p.groups > 1 ? p.d.stride[0] : align_up(p.n, 8);
    o.sfa_stride = sfa_stride;
    if (spec.op == GemmOp::kFp8NtSkipHeadMid) {  // validated: (left, mid, right), d [M, num_heads * (left + mid + right)]
        q.head_left = static_cast<int>(call.head_splits[0]);
        q.head_mid = static_cast<int>(call.head_splits[1]);
        q.head_right = static_cast<int>(call.head_splits[2]);
        if (p.m <= 1) o.ldd = align_up(p.d.size[1], 8);
    }
    // c (dense only): the epilogue reads it and stores d = c + A @ B; a bfloat16 or float32 c is read as is
    // (q.c_fp32 says which).
    at::Tensor c_converted;
    if (p.has_c) set_epilogue_c(p, call, call.c->scalar_type(), c_converted, o);
    if (spec.grouping != G::kNone) {
        o.grouped = call.layout->const_data_ptr<int>();
        o.b_group_stride = p.groups > 1 ? p.b.stride[0] : p.n * o.ldb;
        if (masked) {
            o.a_group_stride = p.groups > 1 ? p.a.stride[0] : p.m * o.lda;
            o.sfa_group_stride = sfa_group_stride;
            // max_block_n (256 and above: no cap) and enable_overlap (validated: a signal long enough).
            if (call.max_block_n < heuristics::kSm90Fp8MaxBlockN) q.max_block_n = static_cast<int>(call.max_block_n);
            if (call.enable_overlap) {
                q.tile_signal = true;
                o.signal = call.signal->mutable_data_ptr<int>();
            }
        }
    }
    const kernels::GemmTile tile = kernels::run_gemm(desc);
    if (call.enable_overlap and call.overlap_out != nullptr)
        *call.overlap_out = {tile.block_m, tile.block_n > 0 ? (p.n + tile.block_n - 1) / tile.block_n : 0};
}

// 1x128 scales as the FP8 kernels read them: MN-major with a TMA-aligned stride (element (mn, kb) at
// ptr[kb * stride + mn]); `holder` keeps a converted copy alive for the call.
struct MnMajorScales {
    at::Tensor holder;
    const float* ptr = nullptr;
    int64_t stride = 0;
};

// `v` is the [MN, ceil(K/128)] view of `sf` in the kernel's orientation (`trans`: sf is its transpose).
MnMajorScales mn_major_scales(const GemmOpSpec& spec, const View& v, const at::Tensor& sf, bool trans, const char* name) {
    MnMajorScales s;
    if (is_mn_major_tma_aligned(v, CheckMode::kReal)) {
        s.ptr = sf.const_data_ptr<float>();
        s.stride = v.stride[1];
    } else {
        s.holder = get_mn_major_tma_aligned_tensor(trans ? sf.transpose(0, 1) : sf, false, spec.name, name);
        s.ptr = s.holder.const_data_ptr<float>();
        s.stride = s.holder.stride(1);
    }
    return s;
}

// fp8_gemm_{nt,nn,tn,tt} with recipe (1, 1, 128): d (float32) = c + A @ B^T, C added in the kernel's epilogue
// (c may be d). Validation has mapped every variant onto K-major A and B views.
void run_fp8_1d1d(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, int device) {
    const MnMajorScales sfa = mn_major_scales(spec, p.sfa, *call.sfa, spec.trans_a, "sfa");
    const MnMajorScales sfb = mn_major_scales(spec, p.sfb, *call.sfb, spec.trans_b, "sfb");

    kernels::GemmDesc desc = call_desc(spec, p, call, device);
    kernels::GemmOperands& o = desc.operands;
    o.a = call.a->const_data_ptr();
    o.b = call.b->const_data_ptr();
    o.sfa = sfa.ptr, o.sfa_stride = sfa.stride;
    o.sfb = sfb.ptr, o.sfb_stride = sfb.stride;
    o.d = call.d->mutable_data_ptr<float>();
    // A size-1 dim may carry any stride; give TMA an aligned one (only row 0 is read).
    o.lda = p.m > 1 ? p.a.stride[0] : align_up(p.k, 16);
    o.ldb = p.n > 1 ? p.b.stride[0] : align_up(p.k, 16);
    o.ldd = p.m > 1 ? p.d.stride[0] : align_up(p.n, 4);
    at::Tensor c_converted;
    if (p.has_c) set_epilogue_c(p, call, at::kFloat, c_converted, o);
    kernels::run_gemm(desc);
}

// k_grouped_fp8_gemm_nt_contiguous: for each group g, d[g] = c[g] + A_g @ B_g^T with A_g [M, K_g] and B_g
// [N, K_g] K-major, stored back to back in a and b; sfa [M, S] and sfb [N, S] (DeepGEMM's form) or their
// transposes, S = p.sf_k the groups' scale blocks (compact or padded: kernels::GemmProblem::sf_group_align). The kernel runs the groups, empty ones included (d[g] = c[g] or zeros;
// kernels::run_k_grouped_fp8_gemm); this makes the scales TMA-readable. (Every group empty, sum K == 0, is
// handle_empty's: nothing launches.)
void run_fp8_k_grouped(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, int device) {
    const int64_t m = p.m, n = p.n;
    // Scales: S rows of M (N) values; TMA needs 16-byte rows, so pad M and N to 4.
    const auto scales = [&](const at::Tensor& sf, int64_t mn, at::Tensor& holder) -> std::pair<const float*, int64_t> {
        const int64_t padded = align_up(mn, 4);
        const bool usable = sf.stride(1) == 1 and (sf.size(0) <= 1 or sf.stride(0) == padded) and
                            reinterpret_cast<uintptr_t>(sf.const_data_ptr()) % 16 == 0;
        if (usable) return {sf.const_data_ptr<float>(), padded};
        holder = at::empty({sf.size(0), padded}, sf.options());
        holder.narrow(1, 0, mn).copy_(sf);  // the padding columns are never read (TMA bounds are M / N)
        return {holder.const_data_ptr<float>(), padded};
    };
    // validate() made p.sfa / p.sfb [S, MN] views; a transposed one was given in DeepGEMM's [MN, S] form.
    at::Tensor sfa_holder, sfb_holder;
    const auto [sfa, sfa_stride] = scales(p.sfa.transposed ? call.sfa->transpose(0, 1) : *call.sfa, m, sfa_holder);
    const auto [sfb, sfb_stride] = scales(p.sfb.transposed ? call.sfb->transpose(0, 1) : *call.sfb, n, sfb_holder);

    kernels::GemmDesc desc = call_desc(spec, p, call, device);  // K-grouped, num_groups G
    kernels::GemmOperands& o = desc.operands;
    o.a = call.a->const_data_ptr();
    o.b = call.b->const_data_ptr();
    o.sfa = sfa, o.sfa_stride = sfa_stride;
    o.sfb = sfb, o.sfb_stride = sfb_stride;
    o.d = call.d->mutable_data_ptr<float>();
    o.c = p.has_c ? (p.c_is_d ? o.d : call.c->const_data_ptr<float>()) : nullptr;
    o.ldd = n, o.ldc = n;
    o.d_group_stride = o.c_group_stride = m * n;
    kernels::run_k_grouped_fp8_gemm(desc, std::span<const int64_t>(call.ks.data(), call.ks.size()));
}

// Memory order and leading dimension of an operand view [.., MN, K] as the BF16 kernel wants them.
struct OperandMemory {
    bool k_major;
    int64_t ld;  // elements between consecutive rows of the stored 2-D matrix
};

OperandMemory operand_memory(const View& v, int64_t elems_per_16b) {
    const int ik = v.dim - 1, imn = v.dim - 2;
    const bool k_major = v.stride[ik] == 1 or v.size[ik] <= 1;
    if (k_major) return {true, v.size[imn] > 1 ? v.stride[imn] : align_up(v.size[ik], elems_per_16b)};
    return {false, v.size[ik] > 1 ? v.stride[ik] : align_up(v.size[imn], elems_per_16b)};
}

// k_grouped_bf16_gemm_tn_contiguous: a [sum_K, M] and b [sum_K, N] contiguous (MN-major for the kernel);
// d and c float32 [G, M, N] contiguous. Groups with K == 0 are handled by the kernel (d[g] = c[g] or zeros).
// The problem (call_desc) has the K-grouped mode, MN-major operands and FP32 D.
void run_bf16_k_grouped(const GemmOpSpec& spec, const Problem& p, const GemmCall& call, int device) {
    kernels::GemmDesc desc = call_desc(spec, p, call, device);
    kernels::GemmOperands& o = desc.operands;
    o.a = call.a->const_data_ptr();
    o.b = call.b->const_data_ptr();
    o.lda = p.m, o.ldb = p.n;
    o.d = call.d->mutable_data_ptr();
    o.ldd = p.n;
    if (p.has_c) {
        o.c = p.c_is_d ? o.d : call.c->const_data_ptr();
        o.ldc = p.n;
    }
    o.grouped = call.layout->const_data_ptr<int>();
    o.d_group_stride = o.c_group_stride = p.m * p.n;
    kernels::run_gemm(desc);
}

void run_bf16(const GemmOpSpec& spec, const Checker& check, const Problem& p, const GemmCall& call, int device) {
    if (spec.grouping == G::kKContiguous) return run_bf16_k_grouped(spec, p, call, device);
    const bool d_fp32 = call.d->scalar_type() == at::kFloat;
    const OperandMemory ma = operand_memory(p.a, 8), mb = operand_memory(p.b, 8);
    const int id = p.d.dim - 2;

    kernels::GemmDesc desc = call_desc(spec, p, call, device);
    kernels::GemmProblem& q = desc.problem;
    kernels::GemmOperands& o = desc.operands;
    q.a_k_major = ma.k_major, q.b_k_major = mb.k_major;  // the memory's, which may differ from the op's letters
    o.a = call.a->const_data_ptr();
    o.b = call.b->const_data_ptr();
    o.lda = ma.ld, o.ldb = mb.ld;
    o.d = call.d->mutable_data_ptr();
    o.ldd = p.m > 1 ? p.d.stride[id] : align_up(p.n, d_fp32 ? 4 : 8);

    // C: the kernel adds a C of d's dtype.
    at::Tensor c_converted;
    if (p.has_c) set_epilogue_c(p, call, call.d->scalar_type(), c_converted, o);

    if (spec.grouping != G::kNone) {
        o.grouped = call.layout->const_data_ptr<int>();
        o.b_group_stride = p.b.stride[0];
        if (spec.grouping == G::kMMasked) {
            o.a_group_stride = p.a.stride[0];
            o.d_group_stride = p.groups > 1 ? p.d.stride[0] : p.m * o.ldd;
        }
    }
    kernels::run_gemm(desc);
}

}  // namespace

void run_gemm(GemmOp op, const GemmCall& call) {
    const GemmOpSpec& spec = op_spec(op);
    const Checker check(spec.name, CheckMode::kReal);
    const Problem p = validate(spec, call, check);
    const int device = check.same_cuda_device({&p.a, p.has_sf ? &p.sfa : nullptr, &p.b, p.has_sf ? &p.sfb : nullptr, &p.d,
                                               p.has_c ? &p.c : nullptr, p.has_layout ? &p.layout : nullptr,
                                               p.has_signal ? &p.signal : nullptr});
    if (handle_empty(p, call)) return;
    require_sm90(check, device);

    // validate() chose the kernel from the op's family and recipe (it rejects the FP8 1D2D recipe for the
    // K-grouped op), so every case runs.
    switch (p.kernel) {
        case kernels::GemmKernel::kFp8_1d2d: return run_fp8_1d2d(spec, p, call, device);
        case kernels::GemmKernel::kFp8_1d1d:
            return spec.grouping == G::kKContiguous ? run_fp8_k_grouped(spec, p, call, device) : run_fp8_1d1d(spec, p, call, device);
        case kernels::GemmKernel::kBf16: return run_bf16(spec, check, p, call, device);
    }
}

}  // namespace deep_gemm::api
