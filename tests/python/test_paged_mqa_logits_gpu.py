"""GPU correctness of the paged MQA-logits kernel (deep_gemm.fp8_paged_mqa_logits / fp8_fp4_paged_mqa_logits with
get_paged_mqa_logits_metadata) against paged_mqa_reference.py on the same FP8 inputs.

Fresh random data per case: ragged context lengths (1, exact multiples of 64 and 32, lengths ending mid-block, 0 in
2-D rows), block tables from a shuffled pool with spare blocks, kv blocks of 64 and 32 rows, H 32/64, next_n 1/2/4,
schedules of num_sms and num_sms // 2 slots, FP32/BF16 logits, 1-D and 2-D context_lens, clean and unclean logits,
the DeepGEMM 2.8 positional form. The logits buffer is allocated by the
op: the allocator's block of that size is filled with NaN first, so a position the kernel should write but does not
stays NaN (checked), and with clean_logits=False the positions outside a row's range must still be NaN (the kernel
writes nothing there). Skipped without a Hopper GPU.
"""
import random

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
import paged_mqa_reference as ref  # noqa: E402

DEV = 'cuda'


def random_lengths(rng, batch):
    """Lengths >= 1 mixing 1, exact multiples of 64, mid-page ends and long contexts."""
    pool = [1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 640, 1000, 4096]
    return [rng.choice(pool) if rng.random() < 0.6 else rng.randrange(1, 3000) for _ in range(batch)]


def build(batch, next_n, heads, lens_2d, seed, spare_pages=5, block_kv=64):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    lens = random_lengths(rng, batch)
    lens = [max(n, next_n) for n in lens]  # 1-D rows see L - next_n + t + 1 >= 1 positions
    pages = [(n + block_kv - 1) // block_kv for n in lens]  # kv blocks per batch
    width = max(pages) + rng.randrange(0, 3)  # a wider table than needed: entries past a batch's pages are junk
    num_blocks = sum(pages) + spare_pages
    pool = torch.randperm(num_blocks, device=DEV, dtype=torch.int32)
    table = torch.randint(0, num_blocks, (batch, width), device=DEV, dtype=torch.int32)
    used = 0
    for b, p in enumerate(pages):
        table[b, :p] = pool[used:used + p]
        used += p
    kv_cache, _ = ref.pack_kv_cache(torch.randn(num_blocks, block_kv, 1, 128, device=DEV, dtype=torch.bfloat16))
    q = torch.randn(batch, next_n, heads, 128, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    weights = torch.randn(batch * next_n, heads, device=DEV, dtype=torch.float32)
    lens_t = torch.tensor(lens, device=DEV, dtype=torch.int32)
    if lens_2d:
        # Per-row lengths in [0, L] with the last row at L (DeepGEMM's test draws them the same way).
        per_row = ((lens_t[:, None] + 1).float() * torch.rand(batch, next_n, device=DEV)).int()
        per_row[:, -1] = lens_t
        per_row[0, 0] = 0  # an empty row
        lens_t = per_row.contiguous()
    max_len = max(pages) * block_kv + rng.choice([0, 5])
    return q, kv_cache, weights, lens_t, table, max_len


def poison_allocator(rows, cols, dtype):
    """Fills the caching allocator's next block of this size with NaN, so the op's output starts as NaN."""
    t = torch.empty(rows, cols, device=DEV, dtype=dtype)
    t.fill_(float('nan'))
    del t


def run_and_check(q, kv_cache, weights, lens, table, max_len, clean, logits_dtype, form='2.6', slots=None):
    """slots: the schedule's size (default num_sms; vLLM passes num_sms // 2 for next_n 4)."""
    batch, next_n = q.shape[:2]
    meta = deep_gemm.get_paged_mqa_logits_metadata(lens, kv_cache.shape[1], slots or deep_gemm.get_num_sms())
    poison_allocator(batch * next_n, max_len, logits_dtype)
    if form == '2.8':
        assert not clean
        out = deep_gemm.fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, lens, table, meta, max_len, logits_dtype)
    elif logits_dtype == torch.float32 and form == 'legacy':
        out = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, lens, table, meta, max_len, clean)
    else:
        out = deep_gemm.fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, lens, table, meta, max_len, clean, logits_dtype)
    torch.cuda.synchronize()
    assert out.shape == (batch * next_n, max_len) and out.dtype == logits_dtype and out.is_contiguous()

    want = ref.ref_paged_mqa_logits(q, kv_cache, weights, lens, table, max_len)
    inside = torch.isfinite(want)
    got = out.float()
    assert not torch.isnan(got[inside]).any(), 'positions inside a row left unwritten'
    if clean:
        assert torch.equal(torch.isneginf(got), ~inside), 'the -inf pattern differs from the rows\' ranges'
    else:
        assert torch.isnan(got[~inside]).all(), 'the kernel wrote outside a row\'s range'
    if not inside.any():
        return out, meta  # every row empty (batch 1, one empty 2-D row): the pattern checks above are all there is
    diff = calc_diff(got[inside], want[inside])
    assert diff < (3e-5 if logits_dtype == torch.bfloat16 else 5e-6), diff
    if logits_dtype == torch.float32:
        # Element-wise: FP8 wgmmas accumulate with fewer bits than FP32, so the kernel's error scales with the
        # sum of the terms' magnitudes, not with the (cancelling) result. On an H200 the worst error was
        # 2.8e-5 of that magnitude (the FP32 reference's own: 1.6e-8); a dropped head or a wrong page is 1e-2
        # or more of it. The bar 2^-12 sits between.
        scale = ref.ref_paged_mqa_logits(q, kv_cache, weights, lens, table, max_len, magnitude=True)[inside]
        worst = float(((got[inside] - want[inside]).abs() / scale.clamp(min=1e-30)).max())
        assert worst < 2.0 ** -12, f'an element differs by {worst:.3g} of its terms\' magnitude'
    return out, meta


CASES = [(batch, next_n, heads, lens_2d, clean, dtype, block_kv)
         for batch in (1, 7, 300)
         for next_n in (1, 2)
         for heads in (32, 64)
         for lens_2d, clean in ((False, True), (True, False), (True, True), (False, False))
         for dtype in (torch.float32, torch.bfloat16)
         for block_kv in (64, 32)
         if (batch, lens_2d, clean) != (300, True, True) and (block_kv == 64 or batch != 1)]


@pytest.mark.parametrize('batch,next_n,heads,lens_2d,clean,dtype,block_kv', CASES)
def test_paged_mqa_logits(batch, next_n, heads, lens_2d, clean, dtype, block_kv):
    seed = hash((batch, next_n, heads, lens_2d, clean, str(dtype), block_kv)) % 10000
    run_and_check(*build(batch, next_n, heads, lens_2d, seed, block_kv=block_kv), clean=clean, logits_dtype=dtype)


@pytest.mark.parametrize('block_kv', [64, 32])
@pytest.mark.parametrize('half_slots', [False, True])
@pytest.mark.parametrize('heads,lens_2d', [(32, True), (64, True), (64, False)])
def test_next_n_4(heads, lens_2d, half_slots, block_kv):
    """next_n 4 with the schedule of num_sms slots, or num_sms // 2 as vLLM builds it for next_n 4."""
    slots = deep_gemm.get_num_sms() // 2 if half_slots else None
    dtype = torch.bfloat16 if lens_2d else torch.float32
    run_and_check(*build(23, 4, heads, lens_2d, 11 + heads, block_kv=block_kv), clean=True, logits_dtype=dtype, slots=slots)


@pytest.mark.parametrize('next_n', [1, 2, 4])
def test_32_and_64_row_caches_agree(next_n):
    """The same tokens stored as 64-row blocks and as 32-row blocks (each 64-row block split in two, the halves placed
    at shuffled positions of a bigger pool) give bitwise equal logits, under either block size's schedule."""
    q, kv64, weights, lens, table64, max_len = build(37, next_n, 64, False, 29)
    num_blocks = kv64.shape[0]
    perm = torch.randperm(2 * num_blocks, device=DEV)            # half h of block k goes to 32-row block perm[2k + h]
    kv32 = torch.empty(2 * num_blocks, 32, 1, 132, dtype=torch.uint8, device=DEV)
    flat64 = kv64.view(num_blocks, 64 * 132)
    for h in range(2):
        rows = flat64[:, h * 32 * 128:(h + 1) * 32 * 128]
        sf = flat64[:, 64 * 128 + h * 32 * 4:64 * 128 + (h + 1) * 32 * 4]
        kv32.view(2 * num_blocks, 32 * 132)[perm[h::2]] = torch.cat([rows, sf], dim=1)
    table32 = perm.view(num_blocks, 2)[table64.long()].view(table64.shape[0], -1).int().contiguous()
    out64 = deep_gemm.fp8_paged_mqa_logits(q, kv64, weights, lens, table64,
                                           deep_gemm.get_paged_mqa_logits_metadata(lens, 64, deep_gemm.get_num_sms()), max_len, True)
    for meta_block in (32, 64):
        meta = deep_gemm.get_paged_mqa_logits_metadata(lens, meta_block, deep_gemm.get_num_sms())
        out32 = deep_gemm.fp8_paged_mqa_logits(q, kv32, weights, lens, table32, meta, max_len, True)
        torch.cuda.synchronize()
        assert torch.equal(out32, out64), meta_block


def test_one_page_with_an_odd_stride():
    """A kv cache of one page whose page stride no tensor map would take (a view of a wider buffer): the stride
    is never used, so the op must run as for a packed cache."""
    q, kv_cache, weights, lens, table, max_len = build(1, 1, 32, False, 17, spare_pages=0)
    lens = lens.clamp(max=64)
    table = table[:, :1].clone().zero_()
    page = kv_cache[:1]
    odd = torch.zeros(2 * page.numel() + 4, dtype=page.dtype, device=DEV).as_strided(page.shape, (page.numel() + 4, 132, 132, 1))
    odd.copy_(page)
    run_and_check(q, odd, weights, lens, table, 64, clean=True, logits_dtype=torch.float32)


@pytest.mark.parametrize('form', ['2.8', 'legacy'])
def test_call_forms(form):
    run_and_check(*build(9, 2, 64, True, 3), clean=form == 'legacy', logits_dtype=torch.float32 if form == 'legacy' else torch.bfloat16,
                  form=form)


def test_repeatable_and_any_schedule_width():
    q, kv_cache, weights, lens, table, max_len = build(40, 2, 64, False, 5)
    first, _ = run_and_check(q, kv_cache, weights, lens, table, max_len, True, torch.float32)
    for num_sms in (1, 3, 200):
        meta = deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)
        again = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, lens, table, meta, max_len, True)
        assert torch.equal(again, first), num_sms  # the same per-unit arithmetic whichever CTA runs it


@pytest.mark.parametrize('block_kv', [64, 32])
def test_device_data_out_of_range_is_clamped(block_kv):
    """Lengths past the table and max_context_len, negative lengths, block indices out of range and a junk schedule
    run without a fault and give the clamped results (an out-of-bounds access itself is checked by
    scripts/sanitize_cases.py under compute-sanitizer)."""
    q, kv_cache, weights, lens, table, max_len = build(6, 2, 32, False, 7, block_kv=block_kv)
    bad_lens = lens.clone()
    bad_lens[0], bad_lens[1] = 1 << 30, -100
    bad_table = table.clone()
    bad_table[2, 0], bad_table[3, 0] = -7, kv_cache.shape[0] + 1000
    meta = deep_gemm.get_paged_mqa_logits_metadata(bad_lens, block_kv, 16)
    got = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, bad_lens, bad_table, meta, max_len, True)
    torch.cuda.synchronize()
    # Batch 0 sees min(max_context_len, block_kv * table width) positions; batch 1 none; the clamped block indices
    # read blocks 0 and num_blocks - 1.
    cap = min(max_len, block_kv * table.shape[1])
    assert torch.isfinite(got[0:2, :cap]).all() and torch.isneginf(got[0:2, cap:]).all()
    assert torch.isneginf(got[2:4]).all()
    clamped = bad_table.clone()
    clamped[2, 0], clamped[3, 0] = 0, kv_cache.shape[0] - 1
    # The kernel clamps each row's length (L - next_n + t + 1 for 1-D lengths), so the reference gets them per row.
    row_lens = ref.row_lengths(bad_lens, q.shape[1]).clamp(0, cap).int().contiguous()
    want = ref.ref_paged_mqa_logits(q, kv_cache, weights, row_lens, clamped, max_len)
    inside = torch.isfinite(want)
    assert torch.equal(inside, torch.isfinite(got)) and calc_diff(got[inside], want[inside]) < 5e-6

    junk = torch.tensor([[-5, 9], [3, -1], [99, 99]] + [[2, 1]] * (deep_gemm.get_num_sms() - 2), device=DEV, dtype=torch.int32)
    deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, bad_lens, bad_table, junk, max_len, True)
    torch.cuda.synchronize()


def test_cuda_graph_capture():
    q, kv_cache, weights, lens, table, max_len = build(16, 1, 64, True, 9)
    meta = deep_gemm.get_paged_mqa_logits_metadata(lens, 64, deep_gemm.get_num_sms())
    eager = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, lens, table, meta, max_len, True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        meta_g = deep_gemm.get_paged_mqa_logits_metadata(lens, 64, deep_gemm.get_num_sms())
        out_g = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, lens, table, meta_g, max_len, True)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(meta_g, meta) and torch.equal(out_g, eager)
