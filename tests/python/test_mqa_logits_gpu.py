"""GPU correctness of the fused MQA-logits kernel (deep_gemm.fp8_mqa_logits / fp8_fp4_mqa_logits) against
mqa_logits_reference.py (float64 on the stored FP8 values), on fresh random data per case.

- Values: every element the op computes (inside [ks, ke), clamped) within 2e-3 of the reference's error
  scale sum_h |w| |q . kv| |s| (the FP8 wgmma accumulates exact FP8 products in FP32 with fewer mantissa bits
  than IEEE FP32, about 2^-13 per k32 step; an element from a wrong row, head or k step is off by O(1) of
  that scale), plus a BF16 rounding (2^-8 relative) for BF16 logits; and over all computed elements
  calc_diff < 5e-6 (FP32) / 3e-5 (BF16), DeepGEMM's bars against its simulated reference, overall and per
  query (one dropped head of one query moves its row's calc_diff to ~1e-3).
- clean_logits: every other element is exactly -inf. Without it those elements are not written: the
  caching allocator is poisoned with NaN first (a freed NaN block of the same size is what the op's
  allocation gets), so an element the kernel should write but does not stays NaN and fails.
- Ranges: ragged, empty (ke <= ks), negative and past S_kv (clamped), touching either end, the
  causal / context-parallel patterns of DeepGEMM's test; H 32 and 64, D 32 / 64 / 128, S not a multiple of
  the CTA's query count, S_kv not a multiple of the 64-row tile.
- Call forms: v2.6.1 keywords and positionals, v2.8.1 positionals (max_seqlen_k 6th, -inf outside), the
  plain fp8_mqa_logits form; schedule_meta from get_mqa_logits_metadata; repeated calls bitwise equal.
Skipped without a Hopper GPU."""
import zlib

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from mqa_logits_reference import mqa_logits_ref  # noqa: E402

FP8 = torch.float8_e4m3fn


def _inputs(seq_len, seq_len_kv, heads, dim, seed):
    gen = torch.Generator(device='cuda').manual_seed(seed)
    q = torch.randn(seq_len, heads, dim, device='cuda', generator=gen).to(FP8)
    kv_bf = torch.randn(seq_len_kv, dim, device='cuda', generator=gen)
    kv_sf = kv_bf.abs().amax(1).clamp_min(1e-4) / 448.0
    kv = (kv_bf / kv_sf[:, None]).to(FP8)
    weights = torch.randn(seq_len, heads, device='cuda', generator=gen)
    return q, kv, kv_sf.float().contiguous(), weights


def _ranges(kind, seq_len, seq_len_kv, seed):
    gen = torch.Generator().manual_seed(seed)
    if kind == 'full':
        ks, ke = torch.zeros(seq_len, dtype=torch.int32), torch.full((seq_len,), seq_len_kv, dtype=torch.int32)
    elif kind == 'causal':  # DeepGEMM's no-CP pattern: ks = 0, ke = i + S_kv - S (clamped here if negative)
        ks = torch.zeros(seq_len, dtype=torch.int32)
        ke = (torch.arange(seq_len) + (seq_len_kv - seq_len) + 1).to(torch.int32)
    elif kind == 'cp':  # two chunks of a context-parallel rank: windows that jump
        half = max(seq_len // 2, 1)
        i = torch.arange(seq_len)
        ks = torch.zeros(seq_len, dtype=torch.int32)
        ke = torch.where(i < half, seq_len_kv // 4 + i, seq_len_kv // 2 + i).clamp(max=seq_len_kv).to(torch.int32)
    else:  # ragged: empty, out of range, ends, short windows
        ks = torch.randint(-5, seq_len_kv + 5, (seq_len,), generator=gen, dtype=torch.int32)
        ke = ks + torch.randint(-3, max(seq_len_kv // 3, 4), (seq_len,), generator=gen, dtype=torch.int32)
        edits = [(0, seq_len_kv), (seq_len_kv - 1, seq_len_kv + 9), (7, 7), (-20, 3), (seq_len_kv - 64, seq_len_kv), (10, 2)]
        for i, (b, e) in enumerate(edits[:seq_len]):
            ks[i], ke[i] = b, e
    return ks.cuda(), ke.cuda()


def _poison(numel, dtype):
    """Leaves a freed NaN block of exactly this size in the caching allocator (the op's output gets it)."""
    torch.cuda.synchronize()
    block = torch.full((numel,), float('nan'), dtype=dtype, device='cuda')
    del block


def _check(logits, q, kv, kv_sf, weights, ks, ke, clean, max_k, dtype):
    ref, written, bound = mqa_logits_ref(q.float().cpu(), kv.float().cpu(), kv_sf.cpu(), weights.cpu(), ks.cpu(), ke.cpu(),
                                         clean, max_k)
    got = logits.double().cpu()
    assert got.shape == ref.shape and logits.dtype == dtype
    if written.any():
        err = (got[written] - ref[written]).abs()
        rel_bf16 = 2.0 ** -8 if dtype == torch.bfloat16 else 0.0
        tol = 2e-3 * bound[written] + rel_bf16 * ref[written].abs() + 1e-30
        worst = int(torch.argmax(err - tol))
        assert (err <= tol).all(), f'value error {float(err[worst])} > {float(tol[worst])}'
        bar = 3e-5 if dtype == torch.bfloat16 else 5e-6
        assert calc_diff(got[written], ref[written]) < bar
        for i in range(got.shape[0]):  # per query: a wrong head or tile of one query fails here
            x, y = got[i, written[i]], ref[i, written[i]]
            energy = float((x * x + y * y).sum())
            if energy > 0:
                assert 1 - 2 * float((x * y).sum()) / energy < bar, f'query {i}: calc_diff above {bar}'
    outside = ~written
    if clean:
        assert torch.isneginf(got[outside]).all(), 'clean_logits: every element outside the ranges must be -inf'
    assert not torch.isinf(got[written]).any()


SHAPES = [  # S, S_kv, H, D
    (1, 1, 64, 128), (5, 70, 32, 128), (37, 1000, 64, 128), (130, 515, 32, 64), (65, 333, 64, 32),
    (256, 4096, 64, 128), (100, 64, 32, 32),
]
KINDS = ['full', 'causal', 'cp', 'ragged']


@pytest.mark.parametrize('shape', SHAPES, ids=lambda s: 'x'.join(map(str, s)))
@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16], ids=['f32', 'bf16'])
@pytest.mark.parametrize('clean', [True, False], ids=['clean', 'unclean'])
def test_dense_logits(shape, kind, dtype, clean):
    seq_len, seq_len_kv, heads, dim = shape
    seed = zlib.crc32(repr((shape, kind)).encode()) % 10000
    q, kv, kv_sf, weights = _inputs(seq_len, seq_len_kv, heads, dim, seed)
    ks, ke = _ranges(kind, seq_len, seq_len_kv, seed)
    _poison(seq_len * seq_len_kv, dtype)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), weights, ks, ke, clean_logits=clean, logits_dtype=dtype)
    _check(logits, q, kv, kv_sf, weights, ks, ke, clean, 0, dtype)


@pytest.mark.parametrize('shape', SHAPES[1:5], ids=lambda s: 'x'.join(map(str, s)))
@pytest.mark.parametrize('kind', ['causal', 'ragged'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16], ids=['f32', 'bf16'])
@pytest.mark.parametrize('clean', [True, False], ids=['clean', 'unclean'])
@pytest.mark.parametrize('width', ['max', 'short'])
def test_compressed_logits(shape, kind, dtype, clean, width):
    seq_len, seq_len_kv, heads, dim = shape
    seed = zlib.crc32(repr((shape, kind, width)).encode()) % 10000
    q, kv, kv_sf, weights = _inputs(seq_len, seq_len_kv, heads, dim, seed)
    ks, ke = _ranges(kind, seq_len, seq_len_kv, seed)
    b = ks.long().clamp(0, seq_len_kv)
    longest = int((torch.maximum(ke.long().clamp(0, seq_len_kv), b) - b).max())
    max_k = max(longest if width == 'max' else longest // 3, 1)
    _poison(seq_len * max_k, dtype)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), weights, ks, ke, clean, max_k, dtype)
    _check(logits, q, kv, kv_sf, weights, ks, ke, clean, max_k, dtype)


def test_v28_positional_form_is_clean_and_compressed():
    q, kv, kv_sf, weights = _inputs(70, 900, 64, 128, 5)
    ks, ke = _ranges('ragged', 70, 900, 5)
    meta = deep_gemm.get_mqa_logits_metadata(ks, ke, 900, 64)
    _poison(70 * 300, torch.bfloat16)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), weights, ks, ke, 300, torch.bfloat16, meta)
    _check(logits, q, kv, kv_sf, weights, ks, ke, True, 300, torch.bfloat16)
    _poison(70 * 900, torch.float32)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), weights, ks, ke, 0)
    _check(logits, q, kv, kv_sf, weights, ks, ke, True, 0, torch.float32)


def test_fp8_mqa_logits_form_and_determinism():
    q, kv, kv_sf, weights = _inputs(300, 2000, 32, 128, 9)
    ks, ke = _ranges('causal', 300, 2000, 9)
    first = deep_gemm.fp8_mqa_logits(q, (kv, kv_sf), weights, ks, ke)
    _check(first, q, kv, kv_sf, weights, ks, ke, True, 0, torch.float32)
    for _ in range(5):
        assert torch.equal(deep_gemm.fp8_mqa_logits(q, (kv, kv_sf), weights, ks, ke), first)


def test_strided_kv_rows_and_weights():
    """kv rows with a padded stride (a slice of a wider buffer) and weights with a row stride > H."""
    q, kv, kv_sf, weights = _inputs(40, 500, 64, 64, 13)
    wide_kv = torch.zeros(500, 128, dtype=FP8, device='cuda')
    wide_kv[:, :64] = kv
    wide_w = torch.zeros(40, 80, device='cuda')
    wide_w[:, :64] = weights
    ks, ke = _ranges('ragged', 40, 500, 13)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (wide_kv[:, :64], kv_sf), wide_w[:, :64], ks, ke)
    _check(logits, q, kv, kv_sf, weights, ks, ke, True, 0, torch.float32)


def test_one_kv_row_with_an_odd_stride():
    """S_kv = 1 with a row stride no tensor map would take (a one-row view of a wider buffer): its stride is never
    used, so the op must run as for a contiguous kv."""
    q, kv, kv_sf, weights = _inputs(8, 1, 32, 128, 5)
    odd = torch.zeros(2 * 128 + 8, dtype=FP8, device='cuda').as_strided((1, 128), (137, 1))
    odd.copy_(kv)
    ks, ke = _ranges('ragged', 8, 1, 5)
    logits = deep_gemm.fp8_fp4_mqa_logits((q, None), (odd, kv_sf), weights, ks, ke)
    _check(logits, q, kv, kv_sf, weights, ks, ke, True, 0, torch.float32)


def test_empty_kv_and_empty_queries():
    q, kv, kv_sf, weights = _inputs(6, 1, 32, 128, 3)
    ks = torch.zeros(6, dtype=torch.int32, device='cuda')
    out = deep_gemm.fp8_fp4_mqa_logits((q, None), (kv[:0], kv_sf[:0]), weights, ks, ks, max_seqlen_k=4)
    assert out.shape == (6, 4) and torch.isneginf(out).all()
    out = deep_gemm.fp8_fp4_mqa_logits((q[:0], None), (kv, kv_sf), weights[:0], ks[:0], ks[:0])
    assert out.shape == (0, 1)


def test_metadata_matches_cpu():
    ks, ke = _ranges('ragged', 77, 640, 21)
    for heads in (32, 64):
        got = deep_gemm.get_mqa_logits_metadata(ks, ke, 640, heads)
        assert got.is_cuda
        assert torch.equal(got.cpu(), deep_gemm.get_mqa_logits_metadata(ks.cpu(), ke.cpu(), 640, heads))
