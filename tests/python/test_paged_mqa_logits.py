"""CPU side of the paged MQA-logits ops (deep_gemm.get_paged_mqa_logits_metadata, fp8_paged_mqa_logits,
fp8_fp4_paged_mqa_logits): the float reference (paged_mqa_reference.py) against an independent loop formula,
the schedule's contents, a Python model of the kernel's walk over it (every unit once, any schedule bounded),
validation errors, the 2.6 / 2.8 call forms, and the torch.library side (meta kernels, torch.compile)."""

import random

import pytest
import torch

import deep_gemm
from deep_gemm import _paged_mqa
from compile_check import traced_targets
import paged_mqa_reference as ref

META = deep_gemm.get_paged_mqa_logits_metadata


# ---- the float reference ---------------------------------------------------------------------------

def make_problem(batch, next_n, heads, dim, lens, lens_2d, seed=0, device='cpu', extra_blocks=3, block_kv=64):
    """Random q (e4m3), a packed kv cache of block_kv-row blocks with a shuffled block table, float32 weights, int32
    lengths."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.tensor(lens, dtype=torch.int32)
    longest = lens.amax(1) if lens_2d else lens
    pages = [max(0, (int(n) + block_kv - 1) // block_kv) for n in longest]
    width = max(pages + [1])
    num_blocks = sum(pages) + extra_blocks
    perm = torch.randperm(num_blocks, generator=g)
    table = torch.zeros(batch, width, dtype=torch.int32)
    used = 0
    for b, p in enumerate(pages):
        table[b, :p] = perm[used:used + p].int()
        used += p
    x = torch.randn(num_blocks, block_kv, 1, dim, generator=g)
    kv_cache, kv_dequant = ref.pack_kv_cache(x)
    q = (torch.randn(batch, next_n, heads, dim, generator=g) * 2).to(torch.float8_e4m3fn)
    w = torch.randn(batch * next_n, heads, generator=g)
    return [t.to(device) for t in (q, kv_cache, kv_dequant, w, lens, table)]


def loop_formula(q, kv_dequant, w, lens, table, max_len):
    """DeepGEMM's test formula in other words, one element at a time: row (b, t) of a batch with 1-D length L
    covers p <= L - next_n + t (its draft position); with 2-D lengths p < lens[b, t]. A row's value at p is
    sum_h w[row, h] * relu(q[b, t, h] . kv(p)), kv(p) the dequantised row p % R of block table[b, p // R], R the
    block size."""
    batch, next_n, heads, dim = q.shape
    block_kv = kv_dequant.shape[1]
    out = torch.full((batch * next_n, max_len), float('-inf'))
    qf = q.float()
    for b in range(batch):
        for t in range(next_n):
            last = int(lens[b, t]) - 1 if lens.dim() == 2 else int(lens[b]) - next_n + t
            for p in range(min(last + 1, max_len)):
                kv = kv_dequant[int(table[b, p // block_kv]), p % block_kv, 0]
                total = 0.0
                for h in range(heads):
                    total += float(w[b * next_n + t, h]) * max(0.0, float(qf[b, t, h] @ kv))
                out[b * next_n + t, p] = total
    return out


@pytest.mark.parametrize('next_n,lens_2d,lens,block_kv', [
    (1, False, [1, 64, 70, 0], 64),
    (2, False, [2, 65, 128, 3], 64),
    (2, True, [[0, 1], [64, 63], [100, 129], [5, 5]], 64),
    (1, False, [1, 32, 33, 70, 0], 32),
    (4, True, [[0, 1, 31, 32], [64, 63, 65, 97], [5, 5, 5, 5]], 32),
])
def test_reference_matches_loop_formula(next_n, lens_2d, lens, block_kv):
    q, kv_cache, kv_dequant, w, lens_t, table = make_problem(len(lens), next_n, 4, 32, lens, lens_2d, block_kv=block_kv)
    max_len = 160
    got = ref.ref_paged_mqa_logits(q, kv_cache, w, lens_t, table, max_len)
    want = loop_formula(q, kv_dequant, w, lens_t, table, max_len)
    assert torch.equal(torch.isinf(got), torch.isinf(want))
    finite = torch.isfinite(want)
    assert finite.any()
    torch.testing.assert_close(got[finite], want[finite], rtol=1e-4, atol=1e-3)


def test_reference_magnitude_is_the_abs_loop_formula():
    """magnitude=True (the GPU test's error scale) is the loop formula with every term made non-negative."""
    q, kv_cache, kv_dequant, w, lens_t, table = make_problem(3, 2, 4, 32, [2, 65, 128], False)
    got = ref.ref_paged_mqa_logits(q, kv_cache, w, lens_t, table, 160, magnitude=True)
    want = loop_formula(q.float().abs(), kv_dequant.abs(), w.abs(), lens_t, table, 160)
    finite = torch.isfinite(want)
    assert torch.equal(finite, torch.isfinite(got)) and finite.any()
    torch.testing.assert_close(got[finite], want[finite], rtol=1e-5, atol=1e-5)
    plain = ref.ref_paged_mqa_logits(q, kv_cache, w, lens_t, table, 160)
    assert (plain[finite].abs() <= got[finite] * (1 + 1e-6)).all()


@pytest.mark.parametrize('block_kv', ref.BLOCK_SIZES)
def test_pack_unpack_round_trip(block_kv):
    x = torch.randn(3, block_kv, 1, 128)
    kv_cache, dequant = ref.pack_kv_cache(x)
    assert kv_cache.shape == (3, block_kv, 1, 132) and kv_cache.dtype == torch.uint8
    codes, scales = ref.unpack_kv_cache(kv_cache)
    torch.testing.assert_close(codes * scales[..., None], dequant[:, :, 0], rtol=0, atol=0)
    torch.testing.assert_close(dequant[:, :, 0], x[:, :, 0], rtol=0.07, atol=1e-2)


# ---- the schedule ----------------------------------------------------------------------------------

def test_schedule_exact_values():
    # Pages per batch 1, 4, 1 (2-D lengths: the longest row counts): 6 units over 4 SMs start at 0, 1, 3, 4.
    lens = torch.tensor([[1, 64], [130, 200], [0, 5]], dtype=torch.int32)
    assert META(lens, 64, 4).tolist() == [[0, 0], [1, 0], [1, 2], [1, 3], [3, 0]]
    # 1-D lengths 200, 0, 65: pages 4, 0, 2 over 3 SMs; batch 1 has no unit.
    lens = torch.tensor([200, 0, 65], dtype=torch.int32)
    assert META(lens, 64, 3).tolist() == [[0, 0], [0, 2], [2, 0], [3, 0]]


@pytest.mark.parametrize('seed', range(6))
def test_schedule_matches_python_model(seed):
    rng = random.Random(seed)
    batch = rng.choice([1, 2, 7, 33])
    num_sms = rng.choice([1, 3, 8, 132])
    if seed % 2:
        lens = torch.tensor([[rng.choice([-5, 0, 1, 63, 64, 65, rng.randrange(0, 5000)]) for _ in range(2)] for _ in range(batch)],
                            dtype=torch.int32)
    else:
        lens = torch.tensor([rng.choice([0, 1, 64, 128, 129, rng.randrange(0, 9000)]) for _ in range(batch)], dtype=torch.int32)
    meta = META(lens, 64, num_sms)
    assert meta.dtype == torch.int32 and meta.shape == (num_sms + 1, 2) and meta.is_contiguous()
    assert meta.tolist() == ref.ref_schedule(lens, num_sms).tolist()


def test_schedule_shares_are_balanced_and_ordered():
    lens = torch.tensor([5000, 1, 0, 640, 641, 64], dtype=torch.int32)
    pages = [(int(n) + 63) // 64 for n in lens]
    offsets = [sum(pages[:b]) for b in range(len(pages) + 1)]
    meta = META(lens, 64, 7).tolist()
    starts = [offsets[b] + j for b, j in meta]
    assert starts[0] == 0 and starts[-1] == sum(pages)
    shares = [b - a for a, b in zip(starts, starts[1:])]
    assert max(shares) - min(shares) <= 1


@pytest.mark.parametrize('num_sms', [1, 66, 132])
def test_schedule_does_not_depend_on_block_kv(num_sms):
    """The units are 64-position tiles whatever the cache's block size (the kernel gathers two 32-row blocks into a
    tile), so block_kv 32 and 64 give the same schedule: one built for either is right for both caches."""
    lens = torch.tensor([[0, 31], [32, 33], [64, 65], [1, 4000]], dtype=torch.int32)
    for lens_t in (lens, lens[:, 1].contiguous()):
        assert META(lens_t, 32, num_sms).tolist() == META(lens_t, 64, num_sms).tolist() == ref.ref_schedule(lens_t, num_sms).tolist()


def test_schedule_edge_cases():
    assert META(torch.zeros(0, dtype=torch.int32), 64, 4).tolist() == [[0, 0]] * 5
    assert META(torch.tensor([0, -3], dtype=torch.int32), 64, 2).tolist() == [[2, 0]] * 3
    # One unit over 3 SMs: starts floor(i / 3) = 0, 0, 0, 1, so SMs 0 and 1 are empty and SM 2 takes it.
    assert META(torch.tensor([1], dtype=torch.int32), 64, 3).tolist() == [[0, 0], [0, 0], [0, 0], [1, 0]]


def kernel_walk(meta, pages, sm):
    """Python model of for_each_unit in sm90_fp8_paged_mqa_logits.cuh (clamps included)."""
    batch = len(pages)
    b = min(max(meta[sm][0], 0), batch)
    page = max(meta[sm][1], 0)
    end_b, end_page = min(max(meta[sm + 1][0], 0), batch), max(meta[sm + 1][1], 0)
    n = pages[b] if b < batch else 0
    units, steps = [], 0
    while b < batch and (b < end_b or (b == end_b and page < end_page)):
        steps += 1
        assert steps < 10 * (sum(pages) + batch + 2), 'walk does not end'
        if page >= n:
            b, page = b + 1, 0
            n = pages[b] if b < batch else 0
            continue
        units.append((b, page))
        page += 1
    return units


def producer_blocks(units, table, num_blocks, block_kv):
    """Python model of the producer warp's block reads in sm90_fp8_paged_mqa_logits.cuh: per unit (b, tile) the
    cache blocks its TMA copies read, from 32 table entries loaded at once (one per lane) and shuffled out."""
    per_tile = 64 // block_kv
    tiles_per_chunk = 32 // per_tile
    width = len(table[0])
    prev_b, chunk_first, lanes, out = None, 0, None, []
    for b, page in units:
        if b != prev_b or page - chunk_first >= tiles_per_chunk:
            chunk_first = page
            entries = [page * per_tile + lane for lane in range(32)]
            lanes = [min(max(table[b][p] if p < width else 0, 0), num_blocks - 1) for p in entries]
        prev_b = b
        src = [(page - chunk_first) * per_tile + i for i in range(per_tile)]
        assert all(0 <= lane < 32 for lane in src), 'a shuffle from a lane that does not exist'
        out.append([lanes[lane] for lane in src])
    return out


@pytest.mark.parametrize('block_kv', ref.BLOCK_SIZES)
@pytest.mark.parametrize('num_sms', [1, 5, 66])
def test_producer_reads_each_tiles_blocks(block_kv, num_sms):
    """Every unit's copies read table[b, tile * 64 / block_kv + i] for the blocks that hold its positions (a 64-row
    tile is two 32-row blocks), across the 32-entry chunks and batch changes; entries past a batch's blocks are
    clamped into the cache."""
    rng = random.Random(block_kv * 1000 + num_sms)
    lens = [rng.choice([0, 1, 31, 32, 33, 64, 65, 2100, 2049]) for _ in range(9)] + [4096]
    num_blocks = 500
    width = (max(lens) + block_kv - 1) // block_kv + 1
    table = [[rng.randrange(-3, num_blocks + 3) for _ in range(width)] for _ in lens]
    pages = [(n + 63) // 64 for n in lens]
    meta = META(torch.tensor(lens, dtype=torch.int32), block_kv, num_sms).tolist()
    for sm in range(num_sms):
        units = kernel_walk(meta, pages, sm)
        for (b, j), blocks in zip(units, producer_blocks(units, table, num_blocks, block_kv)):
            for i, got in enumerate(blocks):
                entry = j * (64 // block_kv) + i
                if entry * block_kv < lens[b]:  # a block holding positions of the batch
                    assert got == min(max(table[b][entry], 0), num_blocks - 1), (b, j, i)
                else:
                    assert 0 <= got < num_blocks


@pytest.mark.parametrize('num_sms', [1, 5, 132])
def test_kernel_walk_covers_every_unit_once(num_sms):
    lens = torch.tensor([300, 0, 64, 1, 4096, 65], dtype=torch.int32)
    pages = [(int(n) + 63) // 64 for n in lens]
    meta = META(lens, 64, num_sms).tolist()
    units = [u for sm in range(num_sms) for u in kernel_walk(meta, pages, sm)]
    assert units == [(b, j) for b, p in enumerate(pages) for j in range(p)]


def test_kernel_walk_ends_on_any_schedule():
    rng = random.Random(1)
    pages = [3, 0, 5, 1]
    for _ in range(300):
        meta = [[rng.randint(-3, 7), rng.randint(-3, 9)] for _ in range(5)]
        for sm in range(4):
            for b, j in kernel_walk(meta, pages, sm):
                assert 0 <= b < len(pages) and 0 <= j < pages[b]


# ---- validation (CPU tensors: every check runs before the device check) ------------------------------

def valid_args(batch=2, next_n=2, heads=32, lens_2d=False, device='cpu', block_kv=64, slots=8):
    q = torch.zeros(batch, next_n, heads, 128, dtype=torch.float8_e4m3fn, device=device)
    kv = torch.zeros(5, block_kv, 1, 132, dtype=torch.uint8, device=device)
    w = torch.zeros(batch * next_n, heads, device=device)
    lens = torch.full((batch, next_n) if lens_2d else (batch,), 70, dtype=torch.int32, device=device)
    table = torch.zeros(batch, 3 * 64 // block_kv, dtype=torch.int32, device=device)
    meta = torch.zeros(slots + 1, 2, dtype=torch.int32, device=device)
    return dict(q=q, kv_cache=kv, weights=w, context_lens=lens, block_table=table, schedule_meta=meta, max_context_len=192)


@pytest.mark.parametrize('block_kv', ref.BLOCK_SIZES)
@pytest.mark.parametrize('next_n', [1, 2, 4])
def test_valid_cpu_call_reaches_device_check(block_kv, next_n):
    # Both block sizes, every next_n, a schedule of num_sms or num_sms // 2 slots (vLLM's next_n 4 form).
    for lens_2d, slots in ((False, 132), (True, 66)):
        with pytest.raises(RuntimeError, match='^fp8_paged_mqa_logits: requires CUDA tensors'):
            deep_gemm.fp8_paged_mqa_logits(**valid_args(next_n=next_n, lens_2d=lens_2d, block_kv=block_kv, slots=slots))


def _bad(**changes):
    args = valid_args()
    for k, v in changes.items():
        args[k] = v(args[k]) if callable(v) else v
    return args


BAD = [
    ('q', lambda t: t.float(), TypeError, 'q must have dtype float8_e4m3fn'),
    ('q', lambda t: t[0], ValueError, r'q must be a 4-D tensor'),
    ('q', lambda t: torch.zeros(2, 2, 32, 64, dtype=torch.float8_e4m3fn), ValueError, 'head dim D must be 128'),
    ('q', lambda t: torch.zeros(2, 2, 16, 128, dtype=torch.float8_e4m3fn), ValueError, '32 or 64 heads'),
    ('q', lambda t: torch.zeros(2, 3, 32, 128, dtype=torch.float8_e4m3fn), ValueError, r'next_n = q.shape\[1\] must be 1, 2 or 4'),
    ('q', lambda t: t.transpose(0, 1), ValueError, 'q must be contiguous'),
    ('kv_cache', lambda t: t.float(), TypeError, 'kv_cache must have dtype'),
    ('kv_cache', lambda t: torch.zeros(5, 64, 1, 130, dtype=torch.uint8), ValueError,
     r'kv_cache must have shape \[num_blocks, block_kv, 1, 132\] with block_kv 64 or 32'),
    ('kv_cache', lambda t: torch.zeros(5, 16, 1, 132, dtype=torch.uint8), ValueError, 'kv_cache must have shape'),
    ('kv_cache', lambda t: torch.zeros(5, 128, 1, 132, dtype=torch.uint8), ValueError, 'kv_cache must have shape'),
    ('kv_cache', lambda t: torch.zeros(5, 32, 2, 132, dtype=torch.uint8), ValueError, 'kv_cache must have shape'),
    ('kv_cache', lambda t: torch.zeros(5, 4232, dtype=torch.uint8)[:, :4224].view(5, 32, 1, 132), ValueError,
     'multiple of 16 bytes'),
    ('kv_cache', lambda t: torch.zeros(20000, dtype=torch.uint8).as_strided((5, 32, 1, 132), (2112, 132, 132, 1)), ValueError,
     'must be at least 4224'),
    ('kv_cache', lambda t: torch.zeros(0, 64, 1, 132, dtype=torch.uint8), ValueError, 'between 1 and'),
    ('kv_cache', lambda t: torch.zeros(5, 64, 1, 140, dtype=torch.uint8)[..., :132], ValueError, 'blocks must be packed'),
    ('kv_cache', lambda t: torch.zeros(5, 8452, dtype=torch.uint8)[:, :8448].view(5, 64, 1, 132), ValueError, 'multiple of 16 bytes'),
    ('weights', lambda t: t.double(), TypeError, 'weights must have dtype float32'),
    ('weights', lambda t: t[:3], ValueError, 'weights'),
    ('weights', lambda t: torch.zeros(4, 64), ValueError, 'weights'),
    ('weights', lambda t: torch.zeros(32, 4).t(), ValueError, 'weights must be contiguous'),
    ('context_lens', lambda t: t.long(), TypeError, 'context_lens must have dtype int32'),
    ('context_lens', lambda t: torch.zeros(3, dtype=torch.int32), ValueError, 'context_lens'),
    ('context_lens', lambda t: torch.zeros(2, 3, dtype=torch.int32), ValueError, 'next_n'),
    ('context_lens', lambda t: torch.zeros(2, 2, 2, dtype=torch.int32), ValueError, r'1-D \[B\] or 2-D'),
    ('context_lens', lambda t: torch.zeros(2, 4, dtype=torch.int32)[:, ::2], ValueError, 'context_lens must be contiguous'),
    ('block_table', lambda t: t.long(), TypeError, 'block_table must have dtype int32'),
    ('block_table', lambda t: torch.zeros(3, 3, dtype=torch.int32), ValueError, 'block_table'),
    ('block_table', lambda t: torch.zeros(3, 2, dtype=torch.int32).t(), ValueError, 'unit stride'),
    ('block_table', lambda t: t.to_sparse(), ValueError, 'block_table must be a strided'),
    ('context_lens', lambda t: t.to_sparse(), ValueError, 'context_lens must be a strided'),
    ('schedule_meta', lambda t: t.long(), TypeError, 'schedule_meta must have dtype int32'),
    ('schedule_meta', lambda t: torch.zeros(9, 3, dtype=torch.int32), ValueError, r'schedule_meta must be \[num_sms \+ 1, 2\]'),
    ('schedule_meta', lambda t: torch.zeros(1, 2, dtype=torch.int32), ValueError, 'schedule_meta must be'),
    ('schedule_meta', lambda t: torch.zeros(65538, 2, dtype=torch.int32), ValueError, r'num_sms in \[1, 65536\]'),
    ('max_context_len', -1, ValueError, 'max_context_len must be in'),
    ('max_context_len', 1 << 31, ValueError, 'max_context_len must be in'),
]


@pytest.mark.parametrize('name,change,exc,msg', BAD, ids=[f'{b[0]}-{i}' for i, b in enumerate(BAD)])
def test_validation_errors(name, change, exc, msg):
    with pytest.raises(exc, match=f'^fp8_paged_mqa_logits: .*{msg}'):
        deep_gemm.fp8_paged_mqa_logits(**_bad(**{name: change}))


def test_block_table_row_stride_must_fit_32_bits():
    # The kernel's table row stride is a 32-bit int: a larger one is refused, not truncated (meta: no storage).
    args = valid_args(device='meta')
    args['block_table'] = torch.empty_strided((2, 3), (2 ** 31, 1), dtype=torch.int32, device='meta')
    with pytest.raises(ValueError, match=r"^fp8_paged_mqa_logits: block_table's row stride must be at most 2\^31 - 1"):
        deep_gemm.fp8_paged_mqa_logits(**args)


def test_sm100_only_arguments_raise_not_implemented():
    args = valid_args()
    with pytest.raises(NotImplementedError, match='indices'):
        deep_gemm.fp8_paged_mqa_logits(**args, indices=torch.zeros(2, dtype=torch.int32))
    q = args.pop('q')
    with pytest.raises(NotImplementedError, match='FP4 q'):
        deep_gemm.fp8_fp4_paged_mqa_logits((q, torch.zeros(2, 2, 32, dtype=torch.int32)), **args)
    with pytest.raises(NotImplementedError, match='^get_paged_mqa_logits_metadata: indices'):
        META(torch.zeros(2, 1, dtype=torch.int32), 64, 4, indices=torch.zeros(2, dtype=torch.int32))


def test_metadata_validation():
    lens = torch.zeros(3, dtype=torch.int32)
    for block_kv in (0, 16, 48, 128):
        with pytest.raises(ValueError, match='^get_paged_mqa_logits_metadata: block_kv must be 64 or 32 on SM90'):
            META(lens, block_kv, 4)
    with pytest.raises(ValueError, match=r'num_sms must be in \[1, 65536\]'):
        META(lens, 32, 65537)
    with pytest.raises(ValueError, match='num_sms must be in'):
        META(lens, 64, 0)
    with pytest.raises(TypeError, match='context_lens must have dtype int32'):
        META(lens.long(), 64, 4)
    with pytest.raises(ValueError, match=r'1-D \[B\] or 2-D'):
        META(torch.zeros(2, 2, 2, dtype=torch.int32), 64, 4)


def test_logits_dtype_checked():
    with pytest.raises(TypeError, match='logits_dtype must be torch.float32 or torch.bfloat16'):
        deep_gemm.fp8_fp4_paged_mqa_logits(**valid_args(), logits_dtype=torch.float16)
    with pytest.raises(TypeError, match='clean_logits must be a bool'):
        deep_gemm.fp8_paged_mqa_logits(**valid_args(), clean_logits=1)


# ---- DeepGEMM 2.6 and 2.8 call forms --------------------------------------------------------------------

@pytest.fixture
def captured(monkeypatch):
    calls = []
    monkeypatch.setattr(_paged_mqa, '_c_logits', lambda *a: calls.append(a) or 'ran')
    return calls


def _positional():
    a = valid_args()
    return [a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], a['schedule_meta'], a['max_context_len']]


def test_call_forms(captured):
    pos = _positional()
    # (clean_logits, logits_bf16, indices) as passed to the C++ entry.
    forms = [
        (lambda: deep_gemm.fp8_paged_mqa_logits(*pos), (False, False, None)),
        (lambda: deep_gemm.fp8_paged_mqa_logits(*pos, True), (True, False, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits((pos[0], None), *pos[1:], True, torch.bfloat16), (True, True, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, clean_logits=False, logits_dtype=torch.bfloat16), (False, True, None)),
        # 2.8.1: the 8th positional argument is the logits dtype, the 9th indices.
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits((pos[0], None), *pos[1:], torch.bfloat16), (False, True, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, torch.float32, None), (False, False, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, logits_dtype=torch.bfloat16, indices=None), (False, True, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, torch.bfloat16, IDX), (False, True, IDX)),
        # sgl-deep-gemm 0.2.5: the 8th positional argument is indices (a tensor or None); no clean_logits, float32.
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, None), (False, False, None)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, IDX), (False, False, IDX)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, indices=IDX), (False, False, IDX)),
        (lambda: deep_gemm.fp8_fp4_paged_mqa_logits(*pos, IDX, logits_dtype=torch.bfloat16), (False, True, IDX)),
    ]
    for i, (call, want) in enumerate(forms):
        assert call() == 'ran', i
        got = captured[-1]
        assert got[0] is pos[0] and got[1] is None and got[7] == pos[6], i
        assert (got[8], got[9], got[10]) == want, i
    with pytest.raises(TypeError, match='logits_dtype given twice'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, torch.bfloat16, torch.bfloat16)
    n = len(captured)
    with pytest.raises(TypeError, match='indices given twice'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, IDX, indices=IDX)
    with pytest.raises(TypeError, match='indices given twice'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, torch.bfloat16, IDX, indices=IDX)
    with pytest.raises(TypeError, match='indices must be a tensor or None; got str'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, torch.bfloat16, 'rows')
    with pytest.raises(TypeError, match=r'in the 0.2.5 form \(8th argument indices\) logits_dtype must be a torch.dtype'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, None, IDX)
    with pytest.raises(TypeError, match=r'clean_logits must be a bool \(or the 8th argument a torch.dtype'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, 'clean')
    with pytest.raises(TypeError, match='clean_logits must be a bool'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, 1)
    assert len(captured) == n


IDX = torch.zeros(2, dtype=torch.int32)  # a 0.2.5 / 2.8.1 indices tensor


# Each dialect's positional form through the real binding on meta tensors: the dtype says where logits_dtype went;
# indices reaching the op raises its SM90 NotImplementedError.
@pytest.mark.parametrize('extra,dtype', [
    ((True,), torch.float32),                   # 2.6.1 clean_logits
    ((False, torch.bfloat16), torch.bfloat16),  # 2.6.1 clean_logits, logits_dtype
    ((torch.bfloat16,), torch.bfloat16),        # 2.8.1 logits_dtype
    ((torch.bfloat16, None), torch.bfloat16),   # 2.8.1 logits_dtype, indices
    ((None,), torch.float32),                   # 0.2.5 indices
])
def test_dialect_forms_bind_on_meta_tensors(extra, dtype):
    a = valid_args(device='meta')
    pos = [a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], a['schedule_meta'], 192]
    out = deep_gemm.fp8_fp4_paged_mqa_logits(*pos, *extra)
    assert out.shape == (4, 192) and out.dtype == dtype and out.device.type == 'meta'


@pytest.mark.parametrize('extra', [(IDX,), (torch.float32, IDX)], ids=['0.2.5', '2.8.1'])
def test_indices_reach_the_op_and_are_refused_on_sm90(extra):
    a = valid_args(device='meta')
    pos = [a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], a['schedule_meta'], 192]
    with pytest.raises(NotImplementedError, match='fp8_paged_mqa_logits: .*indices'):
        deep_gemm.fp8_fp4_paged_mqa_logits(*pos, *[e.to('meta') if isinstance(e, torch.Tensor) else e for e in extra])


# ---- torch.library: meta kernels and torch.compile ------------------------------------------------------

def test_opcheck_meta():
    a = valid_args(device='meta')
    torch.library.opcheck(torch.ops.deep_gemm.fp8_paged_mqa_logits.default,
                          (a['q'], None, a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], a['schedule_meta'],
                           a['max_context_len'], True, True, None))
    torch.library.opcheck(torch.ops.deep_gemm.get_paged_mqa_logits_metadata.default, (a['context_lens'], 64, 7, None))
    out = torch.ops.deep_gemm.fp8_paged_mqa_logits(a['q'], None, a['kv_cache'], a['weights'], a['context_lens'], a['block_table'],
                                                   a['schedule_meta'], 192, False, True, None)
    assert out.shape == (4, 192) and out.dtype == torch.bfloat16 and out.is_contiguous()
    with pytest.raises(ValueError, match='head dim D must be 128'):
        torch.ops.deep_gemm.fp8_paged_mqa_logits(a['q'][..., :64], None, a['kv_cache'], a['weights'], a['context_lens'],
                                                 a['block_table'], a['schedule_meta'], 192, False, True, None)


def test_meta_kernel_takes_32_row_blocks():
    a = valid_args(device='meta', next_n=4, block_kv=32, slots=66)
    args = (a['q'], None, a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], a['schedule_meta'], 192, True, False, None)
    torch.library.opcheck(torch.ops.deep_gemm.fp8_paged_mqa_logits.default, args)
    out = torch.ops.deep_gemm.fp8_paged_mqa_logits(*args)
    assert out.shape == (8, 192) and out.dtype == torch.float32
    torch.library.opcheck(torch.ops.deep_gemm.get_paged_mqa_logits_metadata.default, (a['context_lens'], 32, 66, None))
    with pytest.raises(ValueError, match='kv_cache must have shape'):
        torch.ops.deep_gemm.fp8_paged_mqa_logits(a['q'], None, a['kv_cache'][:, :16], *args[3:])


def test_opcheck_metadata_cpu():
    torch.library.opcheck(torch.ops.deep_gemm.get_paged_mqa_logits_metadata.default,
                          (torch.tensor([[3, 70], [0, 129]], dtype=torch.int32), 64, 3, None))


def test_fake_tensor_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = valid_args(lens_2d=True, device='cuda')
        meta = META(a['context_lens'], 64, 132)
        assert meta.shape == (133, 2) and meta.dtype == torch.int32
        out = deep_gemm.fp8_fp4_paged_mqa_logits(a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table'], meta,
                                                 a['max_context_len'], torch.bfloat16)
        assert out.shape == (4, 192) and out.dtype == torch.bfloat16


@pytest.mark.parametrize('dynamic', [False, True])
def test_compile_fullgraph(dynamic):
    def f(q, kv_cache, weights, context_lens, block_table):
        meta = deep_gemm.get_paged_mqa_logits_metadata(context_lens, 64, 8)
        return deep_gemm.fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, context_lens, block_table, meta, 192,
                                                  logits_dtype=torch.bfloat16)

    a = valid_args()
    targets = traced_targets(f, (a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table']),
                             'fp8_paged_mqa_logits: requires CUDA tensors', dynamic)
    assert any('deep_gemm.fp8_paged_mqa_logits' in t for t in targets), targets
    assert any('deep_gemm.get_paged_mqa_logits_metadata' in t for t in targets), targets


def test_compile_fullgraph_025_form():
    """The sgl-deep-gemm 0.2.5 form (8th positional indices=None) under torch.compile(fullgraph=True)."""
    def f(q, kv_cache, weights, context_lens, block_table):
        meta = deep_gemm.get_paged_mqa_logits_metadata(context_lens, 64, 8, None)
        return deep_gemm.fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, context_lens, block_table, meta, 192, None)

    a = valid_args()
    targets = traced_targets(f, (a['q'], a['kv_cache'], a['weights'], a['context_lens'], a['block_table']),
                             'fp8_paged_mqa_logits: requires CUDA tensors', False)
    assert any('deep_gemm.fp8_paged_mqa_logits' in t for t in targets), targets


# ---- a model of the kernel's barrier protocol --------------------------------------------------------------
#
# sm90_fp8_paged_mqa_logits.cuh in Python: the TMA warp and kMathWGs math warpgroups as generators that yield when
# they wait on an mbarrier (phase k incomplete: a wait for parity P returns once P != k % 2), TMA copies landing at
# once. Each slot records what was last loaded into it; a consumer checks it reads its own unit and batch (a
# producer overwriting a slot too early would show), and the run must end with every unit computed once (no
# deadlock) for any interleaving.

class _Barrier:
    def __init__(self, count):
        self.count, self.arrived, self.phase = count, 0, 0

    def arrive(self):
        self.arrived += 1
        if self.arrived == self.count:
            self.arrived, self.phase = 0, self.phase + 1


class _Ring:
    def __init__(self, stages):
        self.stages, self.stage, self.parity = stages, 0, 0

    def advance(self):
        self.stage += 1
        if self.stage == self.stages:
            self.stage, self.parity = 0, self.parity ^ 1


def _wait(bar, parity):
    while parity == bar.phase % 2:
        yield


def _protocol_run(units, stages, math_wgs, seed):
    kv_full = [_Barrier(1) for _ in range(stages)]
    kv_empty = [_Barrier(4) for _ in range(stages)]
    q_full = [_Barrier(1) for _ in range(2)]
    q_empty = [_Barrier(4 * math_wgs) for _ in range(2)]
    kv_slot, q_slot, computed = [None] * stages, [None] * 2, []

    def producer():
        ks, qs, prev = _Ring(stages), _Ring(2), None
        for b, page in units:
            if b != prev:
                if prev is not None:
                    qs.advance()
                prev = b
                yield from _wait(q_empty[qs.stage], qs.parity ^ 1)
                q_slot[qs.stage] = b
                q_full[qs.stage].arrive()
            yield from _wait(kv_empty[ks.stage], ks.parity ^ 1)
            kv_slot[ks.stage] = (b, page)
            kv_full[ks.stage].arrive()
            ks.advance()

    def math(wg):
        ks, qs, prev = _Ring(stages), _Ring(2), None
        for i, (b, page) in enumerate(units):
            if b != prev:
                if prev is not None:
                    for _ in range(4):
                        q_empty[qs.stage].arrive()
                    qs.advance()
                prev = b
                yield from _wait(q_full[qs.stage], qs.parity)
            if i % math_wgs != wg:
                ks.advance()
                continue
            yield from _wait(kv_full[ks.stage], ks.parity)
            assert kv_slot[ks.stage] == (b, page) and q_slot[qs.stage] == b, 'a slot was overwritten before it was read'
            yield  # the QGMMAs: another role may run in between
            assert kv_slot[ks.stage] == (b, page) and q_slot[qs.stage] == b, 'a slot was overwritten while it was read'
            computed.append((b, page))
            for _ in range(4):
                kv_empty[ks.stage].arrive()
            ks.advance()

    rng = random.Random(seed)
    roles = [producer()] + [math(wg) for wg in range(math_wgs)]
    steps = 0
    while roles:
        role = rng.choice(roles)
        try:
            next(role)
        except StopIteration:
            roles.remove(role)
        steps += 1
        assert steps < 100000, 'deadlock'
    assert sorted(computed) == sorted(units)


@pytest.mark.parametrize('math_wgs', [1, 2])
@pytest.mark.parametrize('seed', range(8))
def test_barrier_protocol_model(math_wgs, seed):
    rng = random.Random(seed)
    pages = [rng.choice([0, 1, 2, 3, 9, 17]) for _ in range(rng.randint(1, 12))]
    units = [(b, j) for b, p in enumerate(pages) for j in range(p)]
    for stages in (2, 8):
        _protocol_run(units, stages, math_wgs, seed)
    # Runs of one-page batches: a warpgroup owning none of a batch's pages still waits for its q slot before
    # releasing it (else it could release a slot twice in one phase while the other still reads it).
    for run in range(40):
        _protocol_run([(b, 0) for b in range(12)], 8, math_wgs, 1000 * seed + run)
