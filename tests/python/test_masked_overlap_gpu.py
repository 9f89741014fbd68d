"""GPU tests of the overlapped masked FP8 GEMM (`m_grouped_fp8_gemm_nt_masked(..., enable_overlap=True,
signal=...)`, the SGLang fork's form; docs/compat_2_8.md and docs/kernels/sm90_fp8_gemm_1d2d.md, "Tile signals").

Fresh random inputs, d poisoned with NaN, a float64 reference on the dequantised inputs; the rows at or past
masked_m keep their NaN. The signal after the call holds threshold = ceil(N / BLOCK_N) for every M block with
rows and 0 elsewhere (the whole tensor, which is exactly G * ceil(max_m / 64) long). The polling test runs a
Triton kernel on a second stream that waits (GPU-scope acquire) for each M block's counter while the GEMM runs
and copies that block's rows as soon as the counter says they are written: the copies must equal the final
output (a tile signalled before its rows landed would leave NaN or stale values in the copy).
Skipped without a Hopper GPU.
"""
import random

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import assert_gemm_close  # noqa: E402
from deep_gemm.utils import (dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8,  # noqa: E402
                             per_token_cast_to_fp8)


def _inputs(num_groups, max_m, n, k, seed):
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((num_groups, max_m, k), device='cuda', generator=g).to(torch.bfloat16)
    b = torch.randn((num_groups, n, k), device='cuda', generator=g).to(torch.bfloat16)
    qa = [per_token_cast_to_fp8(a[i]) for i in range(num_groups)]
    qb = [per_block_cast_to_fp8(b[i]) for i in range(num_groups)]
    a8 = (torch.stack([q[0] for q in qa]), torch.stack([q[1] for q in qa]))
    b8 = (torch.stack([q[0] for q in qb]), torch.stack([q[1] for q in qb]))
    a_deq = torch.stack([dequantize_per_token(*q) for q in qa]).double()
    b_deq = torch.stack([dequantize_per_block(*q) for q in qb]).double()
    return a8, b8, a_deq, b_deq


def _signal(num_groups, max_m):
    return torch.zeros(num_groups * ((max_m + 63) // 64), dtype=torch.int32, device='cuda')


def _rows(value, max_m):
    return min(max(value, 0), max_m)


def _expected_signal(values, max_m, block_m, threshold, length):
    m_blocks = (max_m + block_m - 1) // block_m
    want = torch.zeros(length, dtype=torch.int32)
    for g, v in enumerate(values):
        want[g * m_blocks:g * m_blocks + (_rows(v, max_m) + block_m - 1) // block_m] = threshold
    return want


def _check_output(d, a_deq, b_deq, values, max_m, what):
    for g, v in enumerate(values):
        rows = _rows(v, max_m)
        if rows:
            assert_gemm_close(d[g, :rows], a_deq[g, :rows] @ b_deq[g].T, f'{what} group {g} ({rows} rows)')
        assert torch.isnan(d[g, rows:]).all(), f'{what} group {g}: a row at or past masked_m ({v}) was written'


_CASES = [
    # num_groups, max_m, n, k, expected_m, masked_m (0, partial blocks, max_m, > max_m, negative), max_block_n
    (6, 200, 2112, 7168, 100, [0, 1, 77, 200, 1000, -5], 256),
    (4, 1000, 4096, 512, 600, [999, 1000, 65, -1], 256),
    (16, 256, 7168, 2048, 64, None, 256),
    (16, 256, 7168, 2048, 64, None, 160),  # SGLang's H20 cap
    (32, 128, 4096, 7168, 32, None, 64),
]


@pytest.mark.parametrize('num_groups,max_m,n,k,expected_m,values,max_block_n', _CASES,
                         ids=[f'G{c[0]}-max{c[1]}-{c[2]}x{c[3]}-bn{c[6]}' for c in _CASES])
def test_overlap_output_and_signal(num_groups, max_m, n, k, expected_m, values, max_block_n):
    if values is None:
        rnd = random.Random(num_groups * max_m + n)
        values = [rnd.randint(-10, max_m + 20) for _ in range(num_groups)]
    a, b, a_deq, b_deq = _inputs(num_groups, max_m, n, k, seed=num_groups + max_m + n + k)
    masked_m = torch.tensor(values, dtype=torch.int32, device='cuda')
    d = torch.full((num_groups, max_m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    signal = _signal(num_groups, max_m)
    block_m, threshold = deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m, max_block_n=max_block_n,
                                                                enable_overlap=True, signal=signal)
    torch.cuda.synchronize()
    what = f'overlap G={num_groups} max_m={max_m} {n}x{k}'
    _check_output(d, a_deq, b_deq, values, max_m, what)
    assert block_m in (64, 128, 192, 256), block_m
    # threshold = ceil(N / BLOCK_N) with BLOCK_N a multiple of 16 within the cap
    block_n = next(bn for bn in range(16, 257, 16) if (n + bn - 1) // bn == threshold)
    assert block_n <= max_block_n, (block_n, max_block_n)
    torch.testing.assert_close(signal.cpu(), _expected_signal(values, max_m, block_m, threshold, signal.numel()),
                               rtol=0, atol=0)
    # Without overlap: the same output, None returned, the signal of the call before unchanged.
    d2 = torch.full_like(d, float('nan'))
    assert deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d2, masked_m, expected_m, max_block_n=max_block_n) is None
    torch.cuda.synchronize()
    _check_output(d2, a_deq, b_deq, values, max_m, what + ' (no overlap)')
    torch.testing.assert_close(signal.cpu(), _expected_signal(values, max_m, block_m, threshold, signal.numel()),
                               rtol=0, atol=0)


@pytest.mark.parametrize('config', ['64,128,0,0,1', '128,128,0,1,1', '256,128,0,0,0', '128,96,0,0,0'])
def test_overlap_forced_tiles(forced_config, config):
    """2-CTA pairs of M blocks (a group's odd last block: the pair's second tile has no rows and must not count,
    nor write past the signal), 256-row tiles (two waves per warpgroup), a straddling 96-column tile."""
    forced_config(config)
    values, max_m, n, k = [0, 37, 100, 1000, -7, 64, 65], 100, 200, 320
    a, b, a_deq, b_deq = _inputs(len(values), max_m, n, k, seed=7)
    masked_m = torch.tensor(values, dtype=torch.int32, device='cuda')
    d = torch.full((len(values), max_m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    # A guard band after the signal: nothing may be written there.
    buffer = torch.zeros(len(values) * 2 + 64, dtype=torch.int32, device='cuda')
    signal = buffer[:len(values) * 2]
    block_m, threshold = deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 64, enable_overlap=True, signal=signal)
    torch.cuda.synchronize()
    assert block_m == int(config.split(',')[0])
    assert threshold == (n + int(config.split(',')[1]) - 1) // int(config.split(',')[1])
    _check_output(d, a_deq, b_deq, values, max_m, f'overlap forced {config}')
    torch.testing.assert_close(signal.cpu(), _expected_signal(values, max_m, block_m, threshold, signal.numel()), rtol=0, atol=0)
    assert not buffer[signal.numel():].any(), 'a counter written past the signal'


def test_overlap_cuda_graph():
    """The signal's address is a kernel argument: captured once, a replay counts into the same (re-zeroed)
    signal with the replay's masked_m."""
    num_groups, max_m, n, k = 4, 300, 1024, 1024
    a, b, a_deq, b_deq = _inputs(num_groups, max_m, n, k, seed=3)
    a = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))  # no conversion inside the capture
    masked_m = torch.tensor([300, 0, 129, 17], dtype=torch.int32, device='cuda')
    d = torch.empty((num_groups, max_m, n), device='cuda', dtype=torch.bfloat16)
    signal = _signal(num_groups, max_m)
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 128, enable_overlap=True, signal=signal)  # compile outside
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        block_m, threshold = deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 128, enable_overlap=True, signal=signal)
    for values in ([300, 0, 129, 17], [1, 299, -3, 400]):
        masked_m.copy_(torch.tensor(values, dtype=torch.int32))
        d.fill_(float('nan'))
        signal.zero_()
        graph.replay()
        torch.cuda.synchronize()
        _check_output(d, a_deq, b_deq, values, max_m, f'overlap graph {values}')
        assert torch.equal(signal.cpu(), _expected_signal(values, max_m, block_m, threshold, signal.numel()))


# ---- a consumer on another stream --------------------------------------------------------------------------

triton = pytest.importorskip('triton')
tl = pytest.importorskip('triton.language')


@triton.jit
def _poll_and_copy(signal, want, d, snap, observed, num_blocks, m_blocks, max_m, n, block_m, num_programs,
                   ROWS: tl.constexpr, COLS: tl.constexpr, MAX_SPINS: tl.constexpr):
    """Program p takes M blocks p, p + num_programs, ...: waits until signal[blk] reaches want[blk] (acquire at GPU
    scope; at most MAX_SPINS reads), records the value it saw, then copies the block's rows of d into snap."""
    pid = tl.program_id(0)
    for blk in range(pid, num_blocks, num_programs):
        target = tl.load(want + blk)
        seen = tl.atomic_add(signal + blk, 0, sem='acquire', scope='gpu')
        spins = pid * 0  # (an int32 tensor: the loop's carried type)
        while (seen < target) & (spins < MAX_SPINS):
            seen = tl.atomic_add(signal + blk, 0, sem='acquire', scope='gpu')
            spins += 1
        tl.store(observed + blk, seen)
        group = blk // m_blocks
        row0 = (blk % m_blocks) * block_m
        for r in range(0, block_m, ROWS):
            rows = row0 + r + tl.arange(0, ROWS)
            for c in range(0, n, COLS):
                cols = c + tl.arange(0, COLS)
                mask = (rows[:, None] < max_m) & (cols[None, :] < n)
                offs = (group * max_m + rows[:, None]) * n + cols[None, :]
                tl.store(snap + offs, tl.load(d + offs, mask=mask), mask=mask)


@pytest.mark.parametrize('num_groups,max_m,n,k', [(16, 256, 7168, 2048), (32, 512, 4096, 7168)])
def test_overlap_consumer_stream_sees_complete_tiles(num_groups, max_m, n, k):
    rnd = random.Random(num_groups + max_m)
    values = [rnd.randint(0, max_m) for _ in range(num_groups)]
    values[0], values[-1] = max_m, 0
    a, b, a_deq, b_deq = _inputs(num_groups, max_m, n, k, seed=11)
    a = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))
    masked_m = torch.tensor(values, dtype=torch.int32, device='cuda')
    d = torch.full((num_groups, max_m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    snap = torch.full_like(d, float('nan'))
    signal = _signal(num_groups, max_m)
    # As SGLang does: the GEMM leaves SMs to the consumer (a persistent GEMM on every SM would keep a spinning
    # consumer from ever running, or the other way round).
    num_programs = 4
    old_sms = deep_gemm.get_num_sms()
    deep_gemm.set_num_sms(old_sms - 8)
    consumer = torch.cuda.Stream()
    try:
        # Learn the tile (and compile) first, with the same SMs: the poller then waits on a loaded kernel.
        block_m, threshold = deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, max_m // 2, enable_overlap=True,
                                                                    signal=signal)
        m_blocks = (max_m + block_m - 1) // block_m
        want = _expected_signal(values, max_m, block_m, threshold, num_groups * m_blocks).cuda()
        observed = torch.full_like(want, -1)
        d.fill_(float('nan'))
        signal.zero_()
        torch.cuda.synchronize()
        consumer.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(consumer):
            _poll_and_copy[(num_programs,)](signal, want, d, snap, observed, num_groups * m_blocks, m_blocks, max_m, n, block_m,
                                             num_programs, ROWS=16, COLS=256, MAX_SPINS=1 << 26)
        deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, max_m // 2, enable_overlap=True, signal=signal)
        torch.cuda.current_stream().wait_stream(consumer)
        torch.cuda.synchronize()
    finally:
        deep_gemm.set_num_sms(old_sms)
    assert torch.equal(observed.cpu(), want.cpu()), 'the consumer timed out or saw a count above the threshold'
    _check_output(d, a_deq, b_deq, values, max_m, 'overlap consumer')
    for g, v in enumerate(values):
        rows = _rows(v, max_m)
        # Every row the consumer copied after its block's counter reached the threshold is the final value.
        assert torch.equal(snap[g, :rows].view(torch.int16), d[g, :rows].view(torch.int16)), \
            f'group {g}: a tile was incomplete when its signal said it was written'
