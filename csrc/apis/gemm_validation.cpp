// GEMM validation: the per-op rules (dtypes, ranks and shapes, scale factors, memory layouts, overlap)
// that build a Problem from a call's tensors (validate), the public spec accessor, and the
// validation-only entries (check_gemm_fake, check_gemm_real_for_benchmark).
#include "gemm_internal.hpp"

#include <fmt/format.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

// K-grouped FP8: each group's A / B rows are K_g bytes, which TMA reads as 16-byte aligned rows.
constexpr int64_t kKGroupAlignment = 16;

std::string recipe_str(const Recipe& r) { return fmt::format("({}, {}, {})", r[0], r[1], r[2]); }

// The user-facing description of an operand's dims, e.g. "[K, M]" for the A of a "tn" op.
std::string dims_str(const View& v, std::initializer_list<const char*> nt_dims) {
    std::vector<std::string> dims(nt_dims.begin(), nt_dims.end());
    if (v.transposed and dims.size() >= 2) std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
    return s + "]";
}

// The user's index of the view's dim i.
int user_dim(const View& v, int i) {
    if (v.transposed and i >= v.dim - 2) return (i == v.dim - 1) ? v.dim - 2 : v.dim - 1;
    return i;
}

std::string user_shape_str(const View& v) {
    int64_t sizes[4];
    for (int i = 0; i < v.dim; ++i) sizes[user_dim(v, i)] = v.size[i];
    std::string s = "[";
    for (int i = 0; i < v.dim; ++i) s += (i ? ", " : "") + (known(sizes[i]) ? std::to_string(sizes[i]) : std::string("?"));
    return s + "]";
}

std::string user_strides_str(const View& v) {
    int64_t strides[4];
    for (int i = 0; i < v.dim; ++i) strides[user_dim(v, i)] = v.stride[i];
    std::string s = "(";
    for (int i = 0; i < v.dim; ++i) s += (i ? ", " : "") + (known(strides[i]) ? std::to_string(strides[i]) : std::string("?"));
    return s + (v.dim == 1 ? ",)" : ")");
}

void check_rank(const Checker& check, const View& v, int rank, std::initializer_list<const char*> nt_dims) {
    if (v.dim != rank)
        check.value_error(fmt::format("{} must be a {}-D tensor {}; got {}-D with shape {}", v.name, rank, dims_str(v, nt_dims),
                                      v.dim, user_shape_str(v)));
}

// v.size[i] (named `what`) must equal ref.size[j].
void check_same(const Checker& check, const View& v, int i, const View& ref, int j, const char* what) {
    if (known(v.size[i], ref.size[j]) and v.size[i] != ref.size[j])
        check.value_error(fmt::format("{}.shape[{}] ({}) must equal {}.shape[{}] = {}; got {} ({} has shape {}, {} has shape {})",
                                      v.name, user_dim(v, i), what, ref.name, user_dim(ref, j), ref.size[j], v.size[i], v.name,
                                      user_shape_str(v), ref.name, user_shape_str(ref)));
}

// A scale tensor's shape against its expected dims; `rule` spells the expectation ("[ceil(M/1), ceil(K/128)]").
void check_sf_shape(const Checker& check, const View& v, std::initializer_list<int64_t> expected,
                    std::initializer_list<const char*> nt_rule) {
    check_rank(check, v, static_cast<int>(expected.size()), nt_rule);
    int i = 0;
    bool ok = true;
    for (int64_t e : expected) {
        if (known(v.size[i], e) and v.size[i] != e) ok = false;
        ++i;
    }
    if (ok) return;
    int64_t user_expected[4];
    i = 0;
    for (int64_t e : expected) user_expected[user_dim(v, i++)] = e;
    std::string want = "[";
    for (int j = 0; j < v.dim; ++j) want += (j ? ", " : "") + (known(user_expected[j]) ? std::to_string(user_expected[j]) : std::string("?"));
    want += "]";
    check.value_error(fmt::format("{} must have shape {} = {}; got {}", v.name, dims_str(v, nt_rule), want, user_shape_str(v)));
}

// The operand (a or b, as the kernel sees it: [..., MN, K]) must be K-major with TMA-compatible strides.
// BF16 operands may also be MN-major; FP8 ones (the FP8 ops', and cublaslt_gemm_*'s float8_e4m3fn ones) may not,
// `k_major_why` says why (null: MN-major allowed).
void check_operand_layout(const Checker& check, const View& v, const char* k_major_why) {
    const int ik = v.dim - 1, imn = v.dim - 2;
    const char* mn = v.name[0] == 'a' ? "M" : "N";
    if (check.has_unit_stride(v, ik)) {
        check.tma_outer_stride(v, imn, v.size[ik]);
        if (v.dim == 3) check.tma_outer_stride(v, 0, known(v.size[imn], v.stride[imn]) ? v.size[imn] * v.stride[imn] : kUnknown);
    } else if (k_major_why == nullptr and check.has_unit_stride(v, imn)) {
        check.tma_outer_stride(v, ik, v.size[imn]);
        if (v.dim == 3) check.tma_outer_stride(v, 0, known(v.size[ik], v.stride[ik]) ? v.size[ik] * v.stride[ik] : kUnknown);
    } else if (k_major_why != nullptr) {
        check.value_error(fmt::format(
            "{} must be K-major in memory (stride 1 along K, i.e. {}.stride({}) == 1): {}; got shape {} with strides {}{}",
            v.name, v.name, user_dim(v, ik), k_major_why, user_shape_str(v), user_strides_str(v),
            v.transposed ? fmt::format(" (pass {} as the transpose of a row-major [{}, K] tensor)", v.name, mn) : std::string()));
    } else {
        check.value_error(fmt::format("{} must be K-major or {}-major in memory (stride 1 along one of its last two dims); got shape {} "
                                      "with strides {}",
                                      v.name, mn, user_shape_str(v), user_strides_str(v)));
    }
    check.tma_base(v);
}

// The output (and its groups) must be N-major with non-overlapping rows. Rows need not be 16-byte
// aligned: the kernels fall back from the TMA store to direct stores for such outputs.
void check_output_layout(const Checker& check, const View& v) {
    const int in = v.dim - 1, im = v.dim - 2;
    if (not check.has_unit_stride(v, in))
        check.value_error(fmt::format("{} must be N-major (row-major rows: {}.stride(-1) == 1); got shape {} with strides {}", v.name,
                                      v.name, v.shape_str(), v.stride_str()));
    const auto min_stride = [&](int i, int64_t extent) {
        if (v.empty() or v.size[i] <= 1 or not known(v.stride[i], extent) or v.stride[i] >= extent) return;
        check.value_error(fmt::format("{} stride along dim {} must be at least {} (rows must not overlap); got strides {} (shape {})",
                                      v.name, i, extent, v.stride_str(), v.shape_str()));
    };
    min_stride(im, v.size[in]);
    if (v.dim == 3) min_stride(0, known(v.size[im], v.stride[im]) ? v.size[im] * v.stride[im] : kUnknown);
}

void check_compiled_dims(const Checker& check, std::string_view dims) {
    bool seen[3] = {false, false, false};
    for (char ch : dims) {
        const int i = ch == 'm' ? 0 : ch == 'n' ? 1 : ch == 'k' ? 2 : -1;
        if (i < 0 or seen[i])
            check.value_error(fmt::format("compiled_dims must be a subset of \"mnk\" without repeats (e.g. \"nk\"); got \"{}\"", dims));
        seen[i] = true;
    }
}

// fp8_gemm_nt_skip_head_mid: head_splits = (left, mid, right), N = num_heads * (left + right) computed
// columns, d [M, num_heads * (left + mid + right)].
void check_head_splits(const Checker& check, const Problem& p, c10::ArrayRef<int64_t> hs) {
    if (hs.size() != 3)
        check.value_error(fmt::format("head_splits must be 3 ints (left, mid, right); got {} values", hs.size()));
    const int64_t left = hs[0], mid = hs[1], right = hs[2];
    if (left < 0 or mid < 0 or right < 0 or left + right == 0 or left + mid + right > (int64_t(1) << 20))
        check.value_error(fmt::format("head_splits (left, mid, right) must be non-negative with left + right > 0 (and each head at most "
                                      "2^20 columns); got ({}, {}, {})", left, mid, right));
    if (not known(p.n)) return;
    if (p.n % (left + right) != 0)
        check.value_error(fmt::format("N (b.shape[0] = {}) must be a multiple of left + right = {} (num_heads * (left + right) "
                                      "computed columns); got head_splits ({}, {}, {})", p.n, left + right, left, mid, right));
    const int64_t width = p.n / (left + right) * (left + mid + right);
    if (known(p.d.size[1]) and p.d.size[1] != width)
        check.value_error(fmt::format("d.shape[1] must be num_heads * (left + mid + right) = {} * {} = {} for head_splits ({}, {}, {}) "
                                      "and N = {}; got {} (d has shape {})", p.n / (left + right), left + mid + right, width, left, mid,
                                      right, p.n, p.d.size[1], p.d.shape_str()));
}

bool same_memory(const View& x, const View& y, CheckMode mode) {
    if (mode != CheckMode::kReal) return x.tensor->is_same(*y.tensor);
    if (x.tensor->const_data_ptr() != y.tensor->const_data_ptr() or x.dim != y.dim) return false;
    for (int i = 0; i < x.dim; ++i)
        if (x.size[i] != y.size[i] or (x.size[i] > 1 and x.stride[i] != y.stride[i])) return false;
    return true;
}

// The masked FP8 op's max_block_n, enable_overlap and signal (GemmCall; the op's defaults pass unchecked).
void check_overlap_args(const Checker& check, const GemmCall& call, Problem& p) {
    if (call.max_block_n < 16)
        check.value_error(fmt::format("max_block_n is the largest BLOCK_N (a multiple of 16) the config may pick, so at least 16; "
                                      "got {}", call.max_block_n));
    if (call.signal != nullptr and not call.enable_overlap)
        check.value_error("signal is only written with enable_overlap=True; got a signal with enable_overlap=False");
    if (not call.enable_overlap) return;
    if (call.signal == nullptr)
        check.value_error("enable_overlap=True needs signal, an int32 tensor of at least G * ceil(M / 64) zeros; got None");
    check.strided(*call.signal, "signal");
    p.signal = make_view(*call.signal, "signal");
    p.has_signal = true;
    check.dtype(*call.signal, "signal", at::kInt);
    check.rank(p.signal, 1, "[G * ceil(M / 64)] or longer");
    check.contiguous(p.signal, " (the kernel indexes it as a flat int32 array)");
    // The kernel counts at signal[g * ceil(M / BLOCK_M) + M block] with BLOCK_M >= 64, all below G * ceil(M / 64).
    const int64_t need = known(p.groups, p.m) ? p.groups * ceil_div(p.m, 64) : kUnknown;
    if (known(need, p.signal.size[0]) and p.signal.size[0] < need)
        check.value_error(fmt::format("signal must have at least G * ceil(M / 64) = {} * {} = {} elements; got shape {}", p.groups,
                                      ceil_div(p.m, 64), need, p.signal.shape_str()));
    // No launch means no signal: a consumer waiting for one would wait forever.
    if ((known(p.m) and p.m == 0) or (known(p.n) and p.n == 0) or (known(p.k) and p.k == 0) or (known(p.groups) and p.groups == 0))
        check.value_error(fmt::format("enable_overlap=True needs M, N, K and G > 0 (an empty problem launches no kernel and signals "
                                      "nothing); got G={}, M={}, N={}, K={}", p.groups, p.m, p.n, p.k));
    check_no_overlap(check, p.signal, {&p.a, &p.b, &p.d, &p.sfa, &p.sfb, &p.layout});
}

}  // namespace

Problem validate(const GemmOpSpec& spec, const GemmCall& call, const Checker& check) {
    Problem p;
    const bool fp8 = spec.family == Family::kFp8;
    const at::ScalarType ab_dtype = call.ab_dtype.value_or(fp8 ? at::kFloat8_e4m3fn : at::kBFloat16);
    const CheckMode mode = check.mode();

    // ---- tensor kinds: every tensor argument strided, before anything reads its strides ----
    check.strided(*call.a, "a");
    check.strided(*call.b, "b");
    check.strided(*call.d, "d");
    if (fp8) {
        check.strided(*call.sfa, "sfa");
        check.strided(*call.sfb, "sfb");
    }
    if (call.c != nullptr) check.strided(*call.c, "c");
    // The grouping tensor's name in messages: masked_m for the masked ops, grouped_layout for the others
    // (the K-grouped ops' ks_tensor included).
    const char* layout_name = spec.grouping == G::kMMasked ? "masked_m" : "grouped_layout";
    if (call.layout != nullptr) check.strided(*call.layout, layout_name);

    // ---- views (in the kernel's "nt" orientation) ----
    p.a = make_view(*call.a, "a", spec.trans_a);
    p.b = make_view(*call.b, "b", spec.trans_b);
    p.d = make_view(*call.d, "d");
    p.has_sf = fp8;
    if (fp8) {
        p.sfa = make_view(*call.sfa, "sfa", spec.trans_a);
        p.sfb = make_view(*call.sfb, "sfb", spec.trans_b);
    }
    p.has_c = call.c != nullptr and call.c->defined();
    if (p.has_c) p.c = make_view(*call.c, "c");
    p.has_layout = call.layout != nullptr;
    if (p.has_layout) {
        p.layout = make_view(*call.layout, layout_name);
    }

    // ---- recipe and kernel choice ----
    if (fp8) {
        p.recipe = call.recipe.value_or(default_fp8_recipe(spec));
        if (p.recipe == kRecipeBlock32 and not block32_supported(spec)) check.not_implemented(block32_unsupported(spec));
        const std::optional<kernels::GemmKernel> kernel = recipe_kernel(spec, p.recipe);
        if (not kernel)
            check.value_error(fmt::format("recipe must be {}; got {}", fp8_recipes_allowed(spec), recipe_str(p.recipe)));
        p.kernel = *kernel;
        if (spec.op == GemmOp::kFp8NtSkipHeadMid and p.kernel == kernels::GemmKernel::kFp8_1d1d)
            check.value_error(fmt::format("recipe must be (1, 128, 128) on SM90 (the 1D2D kernel's head-split epilogue); got {}",
                                          recipe_str(p.recipe)));
    } else {
        p.kernel = kernels::GemmKernel::kBf16;
    }

    // ---- dtypes (TypeError) ----
    check.dtype(*call.a, "a", ab_dtype);
    check.dtype(*call.b, "b", ab_dtype);
    if (fp8) {
        check.dtype(*call.sfa, "sfa", at::kFloat);
        check.dtype(*call.sfb, "sfb", at::kFloat);
    }
    at::ScalarType d_dtype;
    if (p.kernel == kernels::GemmKernel::kFp8_1d1d) {
        d_dtype = at::kFloat;
        if (call.d->scalar_type() != at::kFloat)
            check.type_error(fmt::format("d must have dtype float32 with recipe {} (the 1D1D kernel accumulates in FP32); got {}",
                                         recipe_str(p.recipe), dtype_name(call.d->scalar_type())));
    } else if (p.kernel == kernels::GemmKernel::kFp8_1d2d) {
        d_dtype = at::kBFloat16;
        if (call.d->scalar_type() != at::kBFloat16)
            check.type_error(fmt::format("d must have dtype bfloat16 with recipe {} (the 1D2D kernel writes BF16); got {}{}",
                                         recipe_str(p.recipe), dtype_name(call.d->scalar_type()),
                                         spec.grouping == G::kNone and spec.op != GemmOp::kFp8NtSkipHeadMid
                                             ? "; use recipe (1, 1, 128) for an FP32 output"
                                             : ""));
    } else if (spec.grouping == G::kNone) {
        check.dtype_in(*call.d, "d", {at::kBFloat16, at::kFloat});
        d_dtype = call.d->scalar_type();
    } else if (spec.grouping == G::kKContiguous) {
        check.dtype(*call.d, "d", at::kFloat);  // weight gradients accumulate in FP32
        d_dtype = at::kFloat;
    } else {
        check.dtype(*call.d, "d", at::kBFloat16);
        d_dtype = at::kBFloat16;
    }
    if (p.has_c) {
        if (d_dtype == at::kFloat)
            check.dtype(*call.c, "c", at::kFloat);
        else
            check.dtype_in(*call.c, "c", {at::kBFloat16, at::kFloat});
    }
    if (p.has_layout) check.dtype(*call.layout, p.layout.name, at::kInt);

    // ---- ranks and sizes (ValueError) ----
    switch (spec.grouping) {
        case G::kNone:
            check_rank(check, p.a, 2, {"M", "K"});
            check_rank(check, p.b, 2, {"N", "K"});
            check_rank(check, p.d, 2, {"M", "N"});
            p.m = p.a.size[0], p.k = p.a.size[1], p.n = p.b.size[0];
            check_same(check, p.b, 1, p.a, 1, "K");
            check_same(check, p.d, 0, p.a, 0, "M");
            if (spec.op == GemmOp::kFp8NtSkipHeadMid)
                check_head_splits(check, p, call.head_splits);
            else
                check_same(check, p.d, 1, p.b, 0, "N");
            break;
        case G::kMContiguous:
            if (call.expected_m_for_psum_layout and *call.expected_m_for_psum_layout <= 0)
                check.value_error(fmt::format("expected_m_for_psum_layout must be positive or None; got {}", *call.expected_m_for_psum_layout));
            check_rank(check, p.a, 2, {"M", "K"});
            check_rank(check, p.b, 3, {"G", "N", "K"});
            check_rank(check, p.d, 2, {"M", "N"});
            p.m = p.a.size[0], p.k = p.a.size[1], p.groups = p.b.size[0], p.n = p.b.size[1];
            check_same(check, p.b, 2, p.a, 1, "K");
            check_same(check, p.d, 0, p.a, 0, "M");
            check_same(check, p.d, 1, p.b, 1, "N");
            check_rank(check, p.layout, 1, {call.use_psum_layout ? "G" : "M"});
            if (const int align = get_mk_alignment_for_contiguous_layout(); align % get_theoretical_mk_alignment_for_contiguous_layout() != 0)
                check.not_implemented(fmt::format("the SM90 grouped kernels need groups aligned to a multiple of {} rows (their BLOCK_M); "
                                                  "get_mk_alignment_for_contiguous_layout() is {}",
                                                  get_theoretical_mk_alignment_for_contiguous_layout(), align));
            if (call.use_psum_layout)
                check_same(check, p.layout, 0, p.b, 0, "G");
            else
                check_same(check, p.layout, 0, p.a, 0, "M");
            break;
        case G::kMMasked:
            check_rank(check, p.a, 3, {"G", "M", "K"});
            check_rank(check, p.b, 3, {"G", "N", "K"});
            check_rank(check, p.d, 3, {"G", "M", "N"});
            p.groups = p.a.size[0], p.m = p.a.size[1], p.k = p.a.size[2], p.n = p.b.size[1];
            check_same(check, p.b, 0, p.a, 0, "G");
            check_same(check, p.b, 2, p.a, 2, "K");
            check_same(check, p.d, 0, p.a, 0, "G");
            check_same(check, p.d, 1, p.a, 1, "M");
            check_same(check, p.d, 2, p.b, 1, "N");
            check_rank(check, p.layout, 1, {"G"});
            check_same(check, p.layout, 0, p.a, 0, "G");
            if (known(p.groups, p.m) and known(p.d.stride[0], p.d.stride[1]) and p.groups > 1 and p.m > 0 and
                p.d.stride[0] != p.m * p.d.stride[1])
                check.value_error(fmt::format("d must hold its groups back to back (d.stride(0) == M * d.stride(1) = {}); got strides {}",
                                              p.m * p.d.stride[1], p.d.stride_str()));
            // A hint for the config choice; only an empty problem (max M == 0) has nothing to hint at.
            if (call.expected_m <= 0 and not (known(p.m) and p.m == 0))
                check.value_error(fmt::format("expected_m must be positive (a hint of the typical rows per group); got {}", call.expected_m));
            break;
        case G::kKContiguous: {
            if (call.use_psum_layout)
                throw_not_implemented(fmt::format("{}: use_psum_layout=True is not implemented for the K-grouped ops on SM90 in deep_gemm; "
                                                  "pass grouped_layout as the K of each group", spec.name));
            check_rank(check, p.d, 3, {"G", "M", "N"});
            p.groups = p.d.size[0], p.m = p.d.size[1], p.n = p.d.size[2];
            check.fits_int32(p.m, "M");  // before sum(ks) * M and sum(ks) * N below
            check.fits_int32(p.n, "N");
            check_rank(check, p.layout, 1, {"G"});
            check_same(check, p.layout, 0, p.d, 0, "G");
            if (known(p.groups) and static_cast<int64_t>(call.ks.size()) != p.groups)
                check.value_error(fmt::format("ks_cpu must have one K per group (G = d.shape[0] = {}); got {} values", p.groups, call.ks.size()));
            // sum(ks) is the K extent of a and b, which the kernels index with 32-bit ints: bounding the
            // running sum also keeps it (and sum(ks) * M below) from overflowing int64.
            // FP8: K_g a multiple of 16 (a partial last 128-K block has a scale of its own). BF16: 128.
            const int64_t k_unit = fp8 ? kKGroupAlignment : 128;
            // The scales of group g: k_grouped_scale_blocks(K_g, 128) (compact), or rounded up to the alignment first.
            const int64_t sf_align = fp8 and call.use_padded_sf_layout ? get_mk_alignment_for_contiguous_layout() : 128;
            if (sf_align <= 0)
                check.value_error(fmt::format("use_padded_sf_layout=True needs a positive get_mk_alignment_for_contiguous_layout(); got {}", sf_align));
            int64_t sum_k = 0;
            for (size_t i = 0; i < call.ks.size(); ++i) {
                const int64_t ki = call.ks[i];
                if (ki < 0 or ki % k_unit != 0)
                    check.value_error(fmt::format("ks_cpu[{}] must be a non-negative multiple of {}; got {}", i, k_unit, ki));
                if (ki > Checker::kMaxInt32 - sum_k)
                    check.value_error(fmt::format("sum(ks_cpu) must be at most {} (the kernels take K as a 32-bit int); got "
                                                  "ks_cpu[{}] = {} after a sum of {}", Checker::kMaxInt32, i, ki, sum_k));
                sum_k += ki;
                p.sf_k += static_cast<int64_t>(k_grouped_scale_blocks(static_cast<uint64_t>(ki), static_cast<unsigned>(sf_align)));
            }
            p.k = sum_k;
            if (fp8) {
                const auto numel = [](const View& v) {
                    int64_t n = 1;
                    for (int i = 0; i < v.dim; ++i) n = known(n, v.size[i]) ? n * v.size[i] : kUnknown;
                    return n;
                };
                const int64_t na = numel(p.a), nb = numel(p.b);
                if (known(na, p.m) and na != sum_k * p.m)
                    check.value_error(fmt::format("a must hold sum(ks) * M = {} * {} = {} elements (each group's [M, k_i] K-major "
                                                  "block, concatenated); got {} (shape {})", sum_k, p.m, sum_k * p.m, na, p.a.shape_str()));
                if (known(nb, p.n) and nb != sum_k * p.n)
                    check.value_error(fmt::format("b must hold sum(ks) * N = {} * {} = {} elements (each group's [N, k_i] K-major "
                                                  "block, concatenated); got {} (shape {})", sum_k, p.n, sum_k * p.n, nb, p.b.shape_str()));
            } else {
                // BF16 (tn): a [sum(ks), M] and b [sum(ks), N], the groups' K rows back to back.
                check_rank(check, p.a, 2, {"sum(ks)", "M"});
                check_rank(check, p.b, 2, {"sum(ks)", "N"});
                for (const View* v : {&p.a, &p.b})
                    if (known(v->size[0]) and v->size[0] != sum_k)
                        check.value_error(fmt::format("{}.shape[0] must equal sum(ks) = {}; got {} ({} has shape {})", v->name, sum_k,
                                                      v->size[0], v->name, v->shape_str()));
                check_same(check, p.a, 1, p.d, 1, "M");
                check_same(check, p.b, 1, p.d, 2, "N");
            }
            check.contiguous(p.a, "");
            check.contiguous(p.b, "");
            check.contiguous(p.d, "");
            check.tma_base(p.a);
            check.tma_base(p.b);
            if (fp8) {
                check.tma_base(p.d);
            } else if (sum_k > 0) {
                // The kernel reads a and b M-/N-major through TMA: each K row must be a whole number of 16 bytes.
                for (const auto& [v, dim] : {std::pair{&p.a, "M"}, std::pair{&p.b, "N"}})
                    if (known(v->size[1]) and v->size[1] % 8 != 0)
                        check.value_error(fmt::format("{} ({}.shape[1] = {}) must be a multiple of 8: each row of {} [sum(ks), {}] is read by TMA, "
                                                      "which needs 16-byte aligned rows", dim, v->name, v->size[1], v->name, dim));
            }
            break;
        }
    }
    // The kernels take these as 32-bit ints (kernels::GemmProblem).
    check.fits_int32(p.m, "M");
    check.fits_int32(p.n, "N");
    check.fits_int32(p.k, "K");
    check.fits_int32(p.groups, "the group count G");
    if (p.has_c) {
        check_rank(check, p.c, p.d.dim, {"M", "N"});
        for (int i = 0; i < p.d.dim; ++i) check_same(check, p.c, i, p.d, i, i == p.d.dim - 1 ? "N" : i == p.d.dim - 2 ? "M" : "G");
        if (spec.grouping == G::kKContiguous) check.contiguous(p.c, "");
    }

    // ---- scale factors ----
    if (fp8) {
        const int64_t gm = p.recipe[0], gn = p.recipe[1], gk = p.recipe[2];
        switch (spec.grouping) {
            case G::kNone:
            {
                const char* k_rule = gk == 128 ? "ceil(K/128)" : gk == 32 ? "ceil(K/32)" : "ceil(K/gran_k)";
                check_sf_shape(check, p.sfa, {ceil_div(p.m, gm), ceil_div(p.k, gk)}, {gm == 1 ? "M" : "ceil(M/128)", k_rule});
                check_sf_shape(check, p.sfb, {ceil_div(p.n, gn), ceil_div(p.k, gk)},
                               {gn == 1 ? "N" : gn == 32 ? "ceil(N/32)" : "ceil(N/128)", k_rule});
            }
                break;
            case G::kMContiguous:
                check_sf_shape(check, p.sfa, {p.m, ceil_div(p.k, gk)}, {"M", "ceil(K/128)"});
                check_sf_shape(check, p.sfb, {p.groups, ceil_div(p.n, gn), ceil_div(p.k, gk)}, {"G", "ceil(N/128)", "ceil(K/128)"});
                break;
            case G::kMMasked:
                check_sf_shape(check, p.sfa, {p.groups, p.m, ceil_div(p.k, gk)}, {"G", "M", "ceil(K/128)"});
                check_sf_shape(check, p.sfb, {p.groups, ceil_div(p.n, gn), ceil_div(p.k, gk)}, {"G", "ceil(N/128)", "ceil(K/128)"});
                break;
            case G::kKContiguous: {
                // DeepGEMM's form, sfa [M, S] and sfb [N, S] with S = p.sf_k, the groups' scale blocks (its test passes
                // the .T view of a [S, M] buffer), or the transposes (deep_gemm's earlier form). A square scale tensor
                // (M or N == S) reads as DeepGEMM's form. p.sfa / p.sfb become [S, MN] views.
                const auto s_name = [&] {  // (built for the error only)
                    return call.use_padded_sf_layout ? fmt::format("sum(ceil(align(ks, {}) / 128)), the padded layout",
                                                                   get_mk_alignment_for_contiguous_layout())
                                                     : std::string("sum(ceil(ks / 128)), the compact layout");
                };
                check.fits_int32(p.sf_k, "the scale blocks S");
                for (auto [v, t, mn, mn_name] : {std::tuple{&p.sfa, call.sfa, p.m, "M"}, std::tuple{&p.sfb, call.sfb, p.n, "N"}}) {
                    const View given = *v;
                    const bool deepgemm_form = given.dim == 2 and known(given.size[0], given.size[1]) and given.size[0] == mn and
                                               given.size[1] == p.sf_k;
                    const bool our_form = given.dim == 2 and known(given.size[0], given.size[1]) and given.size[0] == p.sf_k and
                                          given.size[1] == mn;
                    if (deepgemm_form) {
                        *v = make_view(*t, given.name, true);
                    } else if (not our_form and not (given.dim == 2 and not known(given.size[0], given.size[1]))) {
                        check.value_error(fmt::format("{} must have shape [{}, S] = [{}, {}] (DeepGEMM's form; S = {}) or its "
                                                      "transpose [{}, {}]; got {}", given.name, mn_name, mn, p.sf_k, s_name(), p.sf_k,
                                                      mn, given.shape_str()));
                    }
                }
                break;
            }
        }
    }

    // ---- memory layouts (ValueError) ----
    if (spec.grouping != G::kKContiguous) {
        const char* k_major_why = fp8                                  ? "SM90 FP8 reads both operands K-major"
                                  : ab_dtype == at::kFloat8_e4m3fn ? "cuBLASLt's FP8 path needs both operands K-major"
                                                                   : nullptr;
        check_operand_layout(check, p.a, k_major_why);
        check_operand_layout(check, p.b, k_major_why);
        check_output_layout(check, p.d);
    }
    if (p.has_layout) check.contiguous(p.layout, " (read by the kernel as a flat int32 array)");

    // ---- scalars ----
    check_compiled_dims(check, call.compiled_dims);

    // ---- overlap ----
    if (p.has_c) {
        p.c_is_d = same_memory(p.c, p.d, mode);
        if (not p.c_is_d) check_no_overlap(check, p.d, {&p.c});
    }
    check_no_overlap(check, p.d, {&p.a, &p.b, p.has_sf ? &p.sfa : nullptr, p.has_sf ? &p.sfb : nullptr,
                                  p.has_layout ? &p.layout : nullptr});
    if (call.enable_overlap or call.signal != nullptr or call.max_block_n != 256) check_overlap_args(check, call, p);
    return p;
}

const GemmOpSpec& gemm_op_spec(GemmOp op) { return op_spec(op); }

void check_gemm_fake(GemmOp op, const GemmCall& call) {
    const GemmOpSpec& spec = gemm_op_spec(op);
    const Checker check(spec.name, CheckMode::kFake);
    const Problem p = validate(spec, call, check);
    // Fake tensors carry their would-be devices: mixing them is an error here too (meta tensors opt out).
    const View* views[] = {&p.a, p.has_sf ? &p.sfa : nullptr, &p.b, p.has_sf ? &p.sfb : nullptr, &p.d, p.has_c ? &p.c : nullptr,
                           p.has_layout ? &p.layout : nullptr, p.has_signal ? &p.signal : nullptr};
    const View* first = nullptr;
    const View* meta = nullptr;
    const View* real = nullptr;
    for (const View* v : views) {
        if (v == nullptr) continue;
        const View*& slot = v->tensor->is_meta() ? meta : real;
        if (slot == nullptr) slot = v;
    }
    if (meta != nullptr and real != nullptr)
        check.runtime_error(fmt::format("cannot mix meta tensors with tensors on a device; {} is on meta but {} is on {}", meta->name,
                                        real->name, device_name(*real->tensor)));
    if (meta != nullptr) return;
    for (const View* v : views) {
        if (v == nullptr) continue;
        if (first == nullptr) {
            first = v;
        } else if (v->tensor->device() != first->tensor->device()) {
            check.runtime_error(fmt::format("all tensors must be on the same CUDA device; {} is on {} but {} is on {}", first->name,
                                            device_name(*first->tensor), v->name, device_name(*v->tensor)));
        }
    }
}

void check_gemm_real_for_benchmark(GemmOp op, const GemmCall& call) {
    const GemmOpSpec& spec = gemm_op_spec(op);
    const Checker check(spec.name, CheckMode::kReal);
    const Problem p = validate(spec, call, check);
    // What run_gemm does next without touching a device: the scale layout decision.
    if (p.has_sf and not is_mn_major_tma_aligned(p.sfa, CheckMode::kReal))
        check.value_error("benchmark: sfa is not in the kernel layout (the real call would convert it)");
}

}  // namespace deep_gemm::api
