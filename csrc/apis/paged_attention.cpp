#include "paged_attention.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include <limits>

#include "../jit_kernels/impls/sm90_fp8_paged_mqa_logits.hpp"
#include "common.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

using kernels::kPagedMqaBlockKv;
using kernels::kPagedMqaHeadDim;
using kernels::kPagedMqaSmallBlockKv;

constexpr int64_t kMaxScheduleSms = 1 << 16;  // get_paged_mqa_logits_metadata's num_sms bound (the grid)

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

void check_no_indices(const Checker& check, const std::optional<at::Tensor>& indices) {
    if (indices.has_value() and indices->defined())
        check.not_implemented("indices (varlen rows) are SM100-only in DeepGEMM (2.6.1, 2.8.1) and sgl-deep-gemm 0.2.5, whose SM90 paths refuse them too; got a tensor (pass None)");
}

// context_lens: int32 contiguous [B] or [B, next_n]; returns its view.
View check_context_lens(const Checker& check, const at::Tensor& lens) {
    check.dtype(lens, "context_lens", at::kInt);
    const View v = check.view(lens, "context_lens");
    if (v.dim != 1 and v.dim != 2)
        check.value_error(fmt::format("context_lens must be 1-D [B] or 2-D [B, next_n]; got shape {}", v.shape_str()));
    check.contiguous(v, "");
    return v;
}

}  // namespace

at::Tensor get_paged_mqa_logits_metadata(const at::Tensor& context_lens, int64_t block_kv, int64_t num_sms,
                                         const std::optional<at::Tensor>& indices, bool fake) {
    const Checker check("get_paged_mqa_logits_metadata", fake ? CheckMode::kFake : CheckMode::kReal);
    check_context_lens(check, context_lens);
    if (block_kv != kPagedMqaBlockKv and block_kv != kPagedMqaSmallBlockKv)
        check.value_error(fmt::format("block_kv must be {} or {} on SM90 (the kv cache block size); got {}", kPagedMqaBlockKv,
                                      kPagedMqaSmallBlockKv, block_kv));
    if (num_sms <= 0 or num_sms > kMaxScheduleSms)
        check.value_error(fmt::format("num_sms must be in [1, {}]; got {}", kMaxScheduleSms, num_sms));
    check_no_indices(check, indices);
    const auto options = context_lens.options().dtype(at::kInt);
    if (fake) return at::empty({num_sms + 1, 2}, options);

    // Tiles per batch = ceil(longest row / 64) (1-D lens: the batch's length); units are (batch, tile) in
    // batch-major order and SM i starts at unit floor(i * total / num_sms). A tile is 64 positions whatever the
    // block size (the kernel gathers two 32-row blocks into one), so block_kv does not change the schedule: a
    // schedule built for either block size is the right one for both caches.
    const at::Tensor longest = context_lens.dim() == 2 ? std::get<0>(context_lens.max(1)) : context_lens;
    const at::Tensor pages = at::floor_divide(longest.to(at::kLong).clamp_min(0) + (kPagedMqaBlockKv - 1), kPagedMqaBlockKv);
    const at::Tensor inclusive = pages.cumsum(0);
    const at::Tensor exclusive = at::cat({at::zeros({1}, inclusive.options()), inclusive});
    const at::Tensor total = exclusive.narrow(0, exclusive.size(0) - 1, 1);
    const at::Tensor starts = at::floor_divide(at::arange(num_sms + 1, inclusive.options()) * total, num_sms);
    const at::Tensor batch = at::searchsorted(inclusive, starts, /*out_int32=*/false, /*right=*/true);
    const at::Tensor page = starts - exclusive.index_select(0, batch);
    return at::stack({batch, page}, 1).to(at::kInt);
}

at::Tensor fp8_paged_mqa_logits(const at::Tensor& q, const std::optional<at::Tensor>& q_sf, const at::Tensor& kv_cache,
                                const at::Tensor& weights, const at::Tensor& context_lens, const at::Tensor& block_table,
                                const at::Tensor& schedule_meta, int64_t max_context_len, bool clean_logits, bool logits_bf16,
                                const std::optional<at::Tensor>& indices, bool fake) {
    const Checker check("fp8_paged_mqa_logits", fake ? CheckMode::kFake : CheckMode::kReal);
    if (q_sf.has_value() and q_sf->defined())
        check.not_implemented("FP4 q (a (q, q_sf) pair with scales) is SM100-only in DeepGEMM; on SM90 pass (q_fp8, None)");
    check_no_indices(check, indices);

    // q [B, next_n, H, 128] e4m3, contiguous (TMA reads the [B * next_n * H, 128] view).
    check.dtype(q, "q", at::kFloat8_e4m3fn);
    const View qv = check.view(q, "q");
    check.rank(qv, 4, "[B, next_n, H, D]");
    if (q.sym_size(3).guard_int(__FILE__, __LINE__) != kPagedMqaHeadDim)
        check.value_error(fmt::format("q head dim D must be {} on SM90; got shape {}", kPagedMqaHeadDim, qv.shape_str()));
    const int64_t heads = q.sym_size(2).guard_int(__FILE__, __LINE__);
    const int64_t next_n = q.sym_size(1).guard_int(__FILE__, __LINE__);
    if (heads != 32 and heads != 64) check.value_error(fmt::format("q must have 32 or 64 heads on SM90; got shape {}", qv.shape_str()));
    if (next_n != 1 and next_n != 2 and next_n != 4)
        check.value_error(fmt::format("next_n = q.shape[1] must be 1, 2 or 4 on SM90; got shape {}", qv.shape_str()));
    check.contiguous(qv, " (TMA reads its [B * next_n * H, D] view)");
    check.tma_base(qv);
    const int64_t batch = qv.size[0];
    if (known(batch) and batch * next_n * heads > kIntMax)
        check.value_error(fmt::format("B * next_n * H must fit in int32; got q shape {}", qv.shape_str()));

    // kv_cache [num_blocks, block_kv, 1, 128 + 4] bytes, block_kv 64 or 32: a block is block_kv x 128 e4m3 then
    // block_kv float32 scales.
    check.dtype_in(kv_cache, "kv_cache", {at::kByte, at::kFloat8_e4m3fn});
    const View kv = check.view(kv_cache, "kv_cache");
    check.rank(kv, 4, "[num_blocks, block_kv, 1, D + 4]");
    const int64_t row_bytes = kPagedMqaHeadDim + 4;
    if ((known(kv.size[1]) and kv.size[1] != kPagedMqaBlockKv and kv.size[1] != kPagedMqaSmallBlockKv) or
        (known(kv.size[2]) and kv.size[2] != 1) or (known(kv.size[3]) and kv.size[3] != row_bytes))
        check.value_error(fmt::format("kv_cache must have shape [num_blocks, block_kv, 1, {}] with block_kv {} or {} (D = {} FP8 "
                                      "bytes + a float32 scale per row); got {}",
                                      row_bytes, kPagedMqaBlockKv, kPagedMqaSmallBlockKv, kPagedMqaHeadDim, kv.shape_str()));
    const int64_t block_kv = known(kv.size[1]) ? kv.size[1] : kPagedMqaSmallBlockKv;  // unknown (fake): the smaller bound
    if (known(kv.size[0]) and (kv.size[0] < 1 or kv.size[0] > kIntMax))
        check.value_error(fmt::format("kv_cache must hold between 1 and 2^31 - 1 blocks; got shape {}", kv.shape_str()));
    const bool packed_page = (not known(kv.stride[3]) or kv.stride[3] == 1) and (not known(kv.stride[1]) or kv.stride[1] == row_bytes);
    if (not packed_page)
        check.value_error(
            fmt::format("kv_cache blocks must be packed (strides [*, {}, *, 1]); got strides {}", row_bytes, kv.stride_str()));
    check.tma_outer_stride(kv, 0, block_kv * row_bytes);
    check.tma_base(kv);

    // weights [B * next_n, H] float32, contiguous (the kernel reads a batch's weights as one run of floats).
    check.dtype(weights, "weights", at::kFloat);
    const View wv = check.view(weights, "weights");
    check.rank(wv, 2, "[B * next_n, H]");
    check.size_eq(wv, 0, known(batch) ? batch * next_n : kUnknown, "B * next_n", "q.shape[0] * q.shape[1]");
    check.size_eq(wv, 1, heads, "H", "q.shape[2]");
    check.contiguous(wv, "");

    // context_lens [B] or [B, next_n]; block_table [B, max_blocks] with unit inner stride.
    const View lv = check_context_lens(check, context_lens);
    check.size_eq(lv, 0, batch, "B", "q.shape[0]");
    if (lv.dim == 2) check.size_eq(lv, 1, next_n, "next_n", "q.shape[1]");
    check.dtype(block_table, "block_table", at::kInt);
    const View bt = check.view(block_table, "block_table");
    check.rank(bt, 2, "[B, max_blocks]");
    check.size_eq(bt, 0, batch, "B", "q.shape[0]");
    if (not check.has_unit_stride(bt, 1))
        check.value_error(fmt::format("block_table must have unit stride along dim 1; got strides {}", bt.stride_str()));
    if (known(bt.size[1]) and bt.size[1] > kIntMax)
        check.value_error(fmt::format("block_table is too wide; got shape {}", bt.shape_str()));
    if (known(bt.size[0]) and bt.size[0] > 1 and known(bt.stride[0]) and bt.stride[0] > kIntMax)  // the kernel's row stride is 32-bit
        check.value_error(fmt::format("block_table's row stride must be at most 2^31 - 1 elements; got strides {}", bt.stride_str()));

    // schedule_meta [num_sms + 1, 2] int32 contiguous (get_paged_mqa_logits_metadata).
    check.dtype(schedule_meta, "schedule_meta", at::kInt);
    const View sv = check.view(schedule_meta, "schedule_meta");
    // Any slot count runs correctly (one CTA per slot; the slots of a schedule cover every unit): num_sms, or
    // num_sms // 2 as vLLM builds it for next_n 4, alike. Its content does not depend on block_kv (see above).
    const bool slots_ok = not known(sv.size[0]) or (sv.size[0] >= 2 and sv.size[0] <= kMaxScheduleSms + 1);
    if (sv.dim != 2 or (known(sv.size[1]) and sv.size[1] != 2) or not slots_ok)
        check.value_error(fmt::format("schedule_meta must be [num_sms + 1, 2] with num_sms in [1, {}] (get_paged_mqa_logits_metadata); "
                                      "got shape {}",
                                      kMaxScheduleSms, sv.shape_str()));
    check.contiguous(sv, "");

    if (max_context_len < 0 or max_context_len > kIntMax)
        check.value_error(fmt::format("max_context_len must be in [0, 2^31 - 1]; got {}", max_context_len));

    const View* views[] = {&qv, &kv, &wv, &lv, &bt, &sv};
    if (not fake) check.same_cuda_device({views[0], views[1], views[2], views[3], views[4], views[5]});
    else {
        for (const View* v : views)
            if (v->tensor->device() != q.device())
                check.runtime_error(fmt::format("all tensors must be on one device; q is on {} but {} is on {}", device_name(q), v->name,
                                                device_name(*v->tensor)));
    }

    const c10::SymInt rows = q.sym_size(0) * next_n;
    at::Tensor logits = at::empty_symint({rows, c10::SymInt(max_context_len)}, q.options().dtype(logits_bf16 ? at::kBFloat16 : at::kFloat));
    if (fake or batch == 0 or max_context_len == 0) return logits;

    const int device = q.device().index();
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    kernels::PagedMqaArgs a;
    a.config.num_heads = int(heads);
    a.config.next_n = int(next_n);
    a.config.lens_2d = context_lens.dim() == 2;
    a.config.clean = clean_logits;
    a.config.bf16_logits = logits_bf16;
    a.config.block_kv = int(block_kv);
    a.q = q.const_data_ptr();
    a.kv_cache = kv_cache.const_data_ptr();
    // One page: its stride is never used, and any value must still make a valid tensor map.
    a.page_stride = kv_cache.size(0) > 1 ? kv_cache.stride(0) : block_kv * row_bytes;
    a.num_pages = int(kv_cache.size(0));
    a.weights = weights.const_data_ptr<float>();
    a.context_lens = context_lens.const_data_ptr<int>();
    a.block_table = block_table.const_data_ptr<int>();
    a.table_width = int(block_table.size(1));
    a.table_stride = block_table.size(0) > 1 ? int(block_table.stride(0)) : 0;  // checked above to fit
    a.schedule = schedule_meta.const_data_ptr<int>();
    a.schedule_sms = int(schedule_meta.size(0) - 1);
    a.logits = logits.mutable_data_ptr();
    a.logits_stride = logits.stride(0);
    a.batch = int(batch);
    a.max_context_len = int(max_context_len);
    a.device = device;
    a.stream = current_stream(device);
    kernels::sm90_fp8_paged_mqa_logits(a);
    return logits;
}

jit::KernelSource paged_mqa_logits_kernel_source(int num_heads, int next_n, bool lens_2d, bool clean, bool bf16_logits, int block_kv) {
    kernels::PagedMqaConfig c;
    c.num_heads = num_heads, c.next_n = next_n, c.lens_2d = lens_2d, c.clean = clean, c.bf16_logits = bf16_logits;
    c.block_kv = block_kv;
    return kernels::paged_mqa_logits_source(c);
}

}  // namespace deep_gemm::api
