#include "attention.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include <limits>
#include <string>

#include "../jit_kernels/impls/sm90_fp8_mqa_logits.hpp"
#include "common.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

int64_t concrete(const c10::SymInt& s) { return s.maybe_as_int().value_or(kUnknown); }

// ks / ke: int32 [S], contiguous, on q's device.
void check_range_tensor(const Checker& check, const at::Tensor& t, const char* name, int64_t seq_len) {
    check.dtype(t, name, at::kInt);
    const View v = check.view(t, name);
    if (v.dim != 1) check.value_error(fmt::format("{} must be 1-D [S]; got shape {}", name, v.shape_str()));
    check.size_eq(v, 0, seq_len, "S", "q.shape[0]");
    check.contiguous(v, "");
}

}  // namespace

at::Tensor fp8_mqa_logits(const at::Tensor& q, const std::optional<at::Tensor>& q_sf, const at::Tensor& kv, const at::Tensor& kv_sf,
                          const at::Tensor& weights, const at::Tensor& ks, const at::Tensor& ke, bool clean_logits,
                          int64_t max_seqlen_k, at::ScalarType logits_dtype, const std::optional<at::Tensor>& schedule_meta,
                          bool fake) {
    const Checker check("fp8_mqa_logits", fake ? CheckMode::kFake : CheckMode::kReal);
    if (q_sf.has_value() and q_sf->defined())
        check.not_implemented("an FP4 q (a (q, sf) pair with a scale tensor) needs SM100 (Blackwell); on SM90 pass (q, None) "
                              "with an FP8 q");

    // q: FP8 [S, H, D], contiguous (read as the [S * H, D] matrix by TMA).
    check.dtype(q, "q", at::kFloat8_e4m3fn);
    const View qv = check.view(q, "q");
    if (qv.dim != 3) check.value_error(fmt::format("q must be 3-D [S, H, D]; got shape {}", qv.shape_str()));
    const int64_t num_heads = q.sym_size(1).guard_int(__FILE__, __LINE__);
    const int64_t head_dim = q.sym_size(2).guard_int(__FILE__, __LINE__);
    if (num_heads != 32 and num_heads != 64)
        check.value_error(fmt::format("the number of heads H = q.shape[1] must be 32 or 64 on SM90; got shape {}", qv.shape_str()));
    if (head_dim != 32 and head_dim != 64 and head_dim != 128)
        check.value_error(fmt::format("the head dim D = q.shape[2] must be 32, 64 or 128; got shape {}", qv.shape_str()));
    check.contiguous(qv, "");
    check.tma_base(qv);
    const int64_t seq_len = qv.size[0];

    // kv: (FP8 [S_kv, D] with unit inner stride and 16-byte rows, FP32 scales [S_kv]).
    check.dtype(kv, "kv[0]", at::kFloat8_e4m3fn);
    check.dtype(kv_sf, "kv[1]", at::kFloat);
    const View kvv = check.view(kv, "kv[0]"), sfv = check.view(kv_sf, "kv[1]");
    if (kvv.dim != 2) check.value_error(fmt::format("kv[0] must be 2-D [S_kv, D]; got shape {}", kvv.shape_str()));
    check.size_eq(kvv, 1, head_dim, "D", "q.shape[2]");
    if (not check.has_unit_stride(kvv, 1))
        check.value_error(fmt::format("kv[0] must have unit stride along D; got strides {}", kvv.stride_str()));
    check.tma_outer_stride(kvv, 0, head_dim);
    check.tma_base(kvv);
    const int64_t seq_len_kv = kvv.size[0];
    if (sfv.dim != 1) check.value_error(fmt::format("kv[1] must be 1-D [S_kv]; got shape {}", sfv.shape_str()));
    check.size_eq(sfv, 0, seq_len_kv, "S_kv", "kv[0].shape[0]");
    check.contiguous(sfv, "");

    // weights: FP32 [S, H], unit stride along H.
    check.dtype(weights, "weights", at::kFloat);
    const View wv = check.view(weights, "weights");
    if (wv.dim != 2) check.value_error(fmt::format("weights must be 2-D [S, H]; got shape {}", wv.shape_str()));
    check.size_eq(wv, 0, seq_len, "S", "q.shape[0]");
    check.size_eq(wv, 1, num_heads, "H", "q.shape[1]");
    if (not check.has_unit_stride(wv, 1))
        check.value_error(fmt::format("weights must have unit stride along H; got strides {}", wv.stride_str()));

    check_range_tensor(check, ks, "cu_seq_len_k_start", seq_len);
    check_range_tensor(check, ke, "cu_seq_len_k_end", seq_len);

    if (logits_dtype != at::kFloat and logits_dtype != at::kBFloat16)
        check.type_error(fmt::format("logits_dtype must be torch.float32 or torch.bfloat16; got {}", dtype_name(logits_dtype)));
    if (max_seqlen_k < 0) check.value_error(fmt::format("max_seqlen_k must be >= 0 (0: dense logits); got {}", max_seqlen_k));
    constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
    if (known(seq_len) and seq_len * num_heads > kMaxInt)
        check.value_error(fmt::format("S * H must fit in int32; got S = {}, H = {}", seq_len, num_heads));
    if (known(seq_len_kv) and seq_len_kv > kMaxInt - 64) check.value_error(fmt::format("S_kv is too large; got {}", seq_len_kv));
    if (max_seqlen_k > kMaxInt) check.value_error(fmt::format("max_seqlen_k must fit in int32; got {}", max_seqlen_k));
    if (schedule_meta.has_value() and schedule_meta->defined()) check.dtype(*schedule_meta, "schedule_meta", at::kInt);

    const bool compressed = max_seqlen_k > 0;
    const c10::SymInt cols = compressed ? c10::SymInt(max_seqlen_k) : kv.sym_size(0);
    at::Tensor logits = at::empty_symint({q.sym_size(0), cols}, q.options().dtype(logits_dtype));
    if (fake) return logits;

    check.same_cuda_device({&qv, &kvv, &sfv, &wv});
    const View ksv = check.view(ks, "cu_seq_len_k_start"), kev = check.view(ke, "cu_seq_len_k_end");
    const int device = check.same_cuda_device({&qv, &ksv, &kev});
    if (seq_len == 0) return logits;
    const int64_t num_cols = compressed ? max_seqlen_k : seq_len_kv;
    if (num_cols == 0) return logits;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    if (seq_len_kv == 0) {  // every range is empty: nothing to compute, no kv to map
        if (clean_logits) logits.fill_(-std::numeric_limits<float>::infinity());
        return logits;
    }

    kernels::MqaLogitsArgs a;
    a.config.num_heads = static_cast<int>(num_heads);
    a.config.head_dim = static_cast<int>(head_dim);
    a.config.bf16_logits = logits_dtype == at::kBFloat16;
    a.config.compressed = compressed;
    a.config.clean = clean_logits;
    a.q = q.const_data_ptr();
    a.kv = kv.const_data_ptr();
    a.kv_stride = kv.size(0) > 1 ? kv.stride(0) : head_dim;  // one row: any stride, as long as the tensor map takes it
    a.kv_scale = kv_sf.const_data_ptr<float>();
    a.weights = weights.const_data_ptr<float>();
    a.weights_stride = weights.stride(0);
    a.ks = ks.const_data_ptr<int>();
    a.ke = ke.const_data_ptr<int>();
    a.logits = logits.mutable_data_ptr();
    a.logits_stride = logits.stride(0);
    a.seq_len = static_cast<int>(seq_len);
    a.seq_len_kv = static_cast<int>(seq_len_kv);
    a.num_cols = static_cast<int>(num_cols);
    a.device = device;
    a.stream = current_stream(device);
    kernels::sm90_fp8_mqa_logits(a);
    return logits;
}

at::Tensor get_mqa_logits_metadata(const at::Tensor& ks, const at::Tensor& ke, int64_t num_kv_tokens, int64_t num_heads, bool fake) {
    const Checker check("get_mqa_logits_metadata", fake ? CheckMode::kFake : CheckMode::kReal);
    if (num_heads != 32 and num_heads != 64) check.value_error(fmt::format("num_heads must be 32 or 64 on SM90; got {}", num_heads));
    if (num_kv_tokens < 0 or num_kv_tokens > std::numeric_limits<int32_t>::max())
        check.value_error(fmt::format("num_kv_tokens must be in [0, 2^31); got {}", num_kv_tokens));
    const int64_t seq_len = concrete(ks.sym_numel());
    check_range_tensor(check, ks, "cu_seq_len_k_start", kUnknown);
    check_range_tensor(check, ke, "cu_seq_len_k_end", seq_len);
    const int64_t queries = kernels::mqa_queries_per_block(static_cast<int>(num_heads));
    const c10::SymInt blocks = (ks.sym_size(0) + (queries - 1)) / queries;
    if (fake) return at::empty_symint({blocks, c10::SymInt(2)}, ks.options());

    // Same rule as the kernel (sm90_fp8_mqa_logits.cuh): clamp, drop empty ranges, union per CTA.
    const int64_t s = ks.size(0), nb = (s + queries - 1) / queries, pad = nb * queries - s;
    const at::Tensor b = ks.to(at::kLong).clamp(0, num_kv_tokens);
    const at::Tensor e = at::maximum(ke.to(at::kLong).clamp(0, num_kv_tokens), b);
    const at::Tensor empty = e.le(b);
    const int64_t big = num_kv_tokens + 1;
    const at::Tensor lo = at::constant_pad_nd(b.masked_fill(empty, big), {0, pad}, big).view({nb, queries}).amin(1);
    const at::Tensor hi = at::constant_pad_nd(e.masked_fill(empty, 0), {0, pad}, 0).view({nb, queries}).amax(1);
    const at::Tensor none = hi.le(lo);
    return at::stack({lo.masked_fill(none, 0), hi.masked_fill(none, 0)}, 1).to(at::kInt);
}

jit::KernelSource mqa_logits_kernel_source(int num_heads, int head_dim, bool bf16_logits, bool compressed, bool clean) {
    kernels::MqaLogitsConfig c;
    c.num_heads = num_heads, c.head_dim = head_dim, c.bf16_logits = bf16_logits, c.compressed = compressed, c.clean = clean;
    return kernels::sm90_fp8_mqa_logits_source(c);
}

}  // namespace deep_gemm::api
