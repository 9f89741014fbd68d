"""GPU correctness of the M-grouped FP8 GEMMs (`deep_gemm.m_grouped_fp8_gemm_nt_contiguous`, both
grouped_layout forms, and `deep_gemm.m_grouped_fp8_gemm_nt_masked`) on the 1D2D kernel.

Fresh random inputs per case (padding rows of A hold random data too, so a padding row that is computed
is visibly non-zero, except where a test zeroes them), outputs poisoned with NaN before every call, float32
reference on the dequantised inputs, gemm_checks.assert_gemm_close (no NaN, calc_diff < 1e-5, every 128x128
tile) on the rows that must be written, contiguous groups checked one by one. Padding rows with
ensure_zero_padding=True must be exactly zero; with False they follow DeepGEMM's SM90 behaviour, checked per
alignment block by padding_rows.assert_unspecified_padding (with zero padding rows of A, as DeepGEMM's own test
makes them: exactly zero in a block that holds group rows). Masked rows at or past masked_m must keep their
NaN. Skipped without a Hopper GPU.
"""
import random

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import assert_gemm_close, assert_groups_close  # noqa: E402
from padding_rows import assert_padding_rows, contiguous_rows  # noqa: E402
from deep_gemm.utils import (dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8,  # noqa: E402
                             per_token_cast_to_fp8)

def _gen(seed):
    return torch.Generator(device='cuda').manual_seed(seed)


def _randn(shape, g):
    return torch.randn(shape, device='cuda', dtype=torch.float32, generator=g).to(torch.bfloat16)


def _quant_a(x):
    """x [M, K] -> (fp8, sfa [M, ceil(K/128)], dequantised float32)."""
    x_fp8, sf = per_token_cast_to_fp8(x)
    return x_fp8, sf, dequantize_per_token(x_fp8, sf)


def _quant_b(x):
    """x [G, N, K] -> (fp8 [G, N, K], sfb [G, ceil(N/128), ceil(K/128)], dequantised float32)."""
    parts = [per_block_cast_to_fp8(x[gi]) for gi in range(x.shape[0])]
    b_fp8 = torch.stack([p[0] for p in parts])
    sfb = torch.stack([p[1] for p in parts])
    return b_fp8, sfb, torch.stack([dequantize_per_block(p[0], p[1]) for p in parts])


def _check_valid(out, ref, what):
    assert_gemm_close(out, ref, what)


def _group_sizes(num_groups, seed):
    """Uneven sizes: some 0, most not a multiple of 128 rows."""
    rnd = random.Random(seed)
    sizes = [rnd.choice([0, 1, 63, 128, 129, 200, 300, 511]) if rnd.random() < 0.5 else rnd.randint(0, 400)
             for _ in range(num_groups)]
    sizes[0] = max(sizes[0], 1)
    if num_groups > 2:
        sizes[1] = 0
    return sizes


def _run_contiguous(group_ms, n, k, psum, zero_padding, tail=0, seed=0, zero_a_padding=False):
    """zero_padding: ensure_zero_padding (None: the default); zero_a_padding: A's padding rows zero."""
    align = deep_gemm.get_mk_alignment_for_contiguous_layout()
    layout, row_group, m_sum = contiguous_rows(group_ms, align, psum, tail)
    g = _gen(seed + sum(group_ms) + n + k)
    a_bf16 = _randn((m_sum, k), g)
    if zero_a_padding:
        a_bf16[row_group < 0] = 0
    a_fp8, sfa, a_deq = _quant_a(a_bf16)
    b_fp8, sfb, b_deq = _quant_b(_randn((len(group_ms), n, k), g))
    d = torch.full((m_sum, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    kwargs = dict(use_psum_layout=psum)
    if zero_padding is not None:
        kwargs['ensure_zero_padding'] = zero_padding
    deep_gemm.m_grouped_fp8_gemm_nt_contiguous((a_fp8, sfa), (b_fp8, sfb), d, layout, **kwargs)
    torch.cuda.synchronize()

    what = (f'contiguous{" psum" if psum else ""} G={len(group_ms)} {group_ms} n={n} k={k} '
            f'zero_padding={zero_padding} zero_a_padding={zero_a_padding}')
    ref = torch.zeros((m_sum, n), device='cuda', dtype=torch.float32)
    for gi in range(len(group_ms)):
        rows = row_group == gi
        if rows.any():
            ref[rows] = a_deq[rows] @ b_deq[gi].t()
    assert_groups_close(d, ref, row_group, what)  # group by group: a 1-row group with the wrong expert fails
    assert_padding_rows(d, row_group, align, zero_padding is not False, zero_a_padding, what)


_CONTIGUOUS_CASES = [
    ([77], 4096, 7168, 0),
    ([100, 0, 300, 129], 2112, 512, 128),  # an empty group; padding rows past the last group
    ([128, 1, 0, 256, 63, 200, 0, 513], 576, 1536, 0),
    (_group_sizes(32, 7), 1024, 1024, 64),
    ([4096, 4096], 7168, 2048, 0),
]


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
@pytest.mark.parametrize('group_ms,n,k,tail', _CONTIGUOUS_CASES,
                         ids=[f'G{len(c[0])}-{c[1]}x{c[2]}' for c in _CONTIGUOUS_CASES])
def test_contiguous_zero_padding(group_ms, n, k, tail, psum):
    """The default (ensure_zero_padding=True): padding rows are written as zeros."""
    _run_contiguous(group_ms, n, k, psum, None, tail)


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
@pytest.mark.parametrize('group_ms,n,k,tail', _CONTIGUOUS_CASES,
                         ids=[f'G{len(c[0])}-{c[1]}x{c[2]}' for c in _CONTIGUOUS_CASES])
@pytest.mark.parametrize('zero_a_padding', [True, False], ids=['a-pad-zero', 'a-pad-random'])
def test_contiguous_padding_unspecified(group_ms, n, k, tail, psum, zero_a_padding):
    """ensure_zero_padding=False (DeepGEMM's SM90 behaviour): the padding rows of an alignment block that holds
    group rows are computed and stored (zero rows of A: exactly zero; random ones: finite), a block of padding
    only is written whole or not at all."""
    _run_contiguous(group_ms, n, k, psum, False, tail, zero_a_padding=zero_a_padding)


@pytest.mark.parametrize('align', [256])
def test_contiguous_group_alignment_above_block(align):
    """A group alignment of 256 rows: 128-row blocks of pure padding between groups."""
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    deep_gemm._C._set_mk_alignment_value(align)
    try:
        for psum in (False, True):
            _run_contiguous([130, 5, 0, 256], 576, 1536, psum, True, tail=64)
            _run_contiguous([130, 5, 0, 256], 576, 1536, psum, False, tail=64, zero_a_padding=True)
            _run_contiguous([130, 5, 0, 256], 576, 1536, psum, False, tail=64)
    finally:
        deep_gemm._C._set_mk_alignment_value(old)


def _masked_inputs(num_groups, max_m, n, k, seed, masked_values):
    g = _gen(seed)
    a_bf16 = _randn((num_groups, max_m, k), g)
    quant = [_quant_a(a_bf16[gi]) for gi in range(num_groups)]
    a_fp8 = torch.stack([q[0] for q in quant])
    sfa = torch.stack([q[1] for q in quant])
    a_deq = torch.stack([q[2] for q in quant])
    b_fp8, sfb, b_deq = _quant_b(_randn((num_groups, n, k), g))
    masked_m = torch.tensor(masked_values, device='cuda', dtype=torch.int32)
    return (a_fp8, sfa), (b_fp8, sfb), a_deq, b_deq, masked_m


def _check_masked(d, a_deq, b_deq, masked_values, max_m, what):
    for gi, mv in enumerate(masked_values):
        rows = min(max(mv, 0), max_m)
        if rows > 0:
            _check_valid(d[gi, :rows], a_deq[gi, :rows] @ b_deq[gi].t(), f'{what} group {gi} ({rows} rows)')
        assert torch.isnan(d[gi, rows:]).all(), f'{what} group {gi}: a row at or past masked_m ({mv}) was written'


_MASKED_CASES = [
    # num_groups, max_m, n, k, expected_m, masked_m: 0, 1, some, max_m, > max_m, negative
    (6, 200, 2112, 7168, 100, [0, 1, 77, 200, 1000, -5]),
    (4, 1000, 4096, 512, 600, [999, 1000, 65, -1]),
    (3, 100, 576, 1536, 40, [64, 100, 1]),
    (32, 192, 1024, 2048, 192, None),
    # decode-like: max_m far above the groups, trailing empty groups (most of the scheduler's tile bound unused)
    (8, 2048, 512, 512, 16, [0, 5, 0, 0, 17, 0, 0, 1]),
]


@pytest.mark.parametrize('num_groups,max_m,n,k,expected_m,masked_values', _MASKED_CASES,
                         ids=[f'G{c[0]}-max{c[1]}-{c[2]}x{c[3]}' for c in _MASKED_CASES])
@pytest.mark.parametrize('sfa_kernel_layout', [False, True], ids=['sfa-kmajor', 'sfa-mmajor'])
def test_masked(num_groups, max_m, n, k, expected_m, masked_values, sfa_kernel_layout):
    if masked_values is None:
        rnd = random.Random(num_groups + max_m)
        masked_values = [rnd.randint(-10, max_m + 50) for _ in range(num_groups)]
    a, b, a_deq, b_deq, masked_m = _masked_inputs(num_groups, max_m, n, k, num_groups * max_m + n + k, masked_values)
    if sfa_kernel_layout:
        a = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))  # passed through without a conversion
    d = torch.full((num_groups, max_m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m)
    torch.cuda.synchronize()
    _check_masked(d, a_deq, b_deq, masked_values, max_m, f'masked G={num_groups} max_m={max_m} n={n} k={k}')


def test_masked_cuda_graph():
    """masked_m is read on the GPU (no host sync): the op can be captured and replayed, and a replay sees
    masked_m's new values."""
    num_groups, max_m, n, k = 4, 300, 1024, 1024
    values = [300, 0, 129, 17]
    a, b, a_deq, b_deq, masked_m = _masked_inputs(num_groups, max_m, n, k, 31, values)
    d = torch.empty((num_groups, max_m, n), device='cuda', dtype=torch.bfloat16)
    sfa_kernel = deep_gemm.get_mn_major_tma_aligned_tensor(a[1])  # no conversion inside the capture
    a = (a[0], sfa_kernel)
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 128)  # compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 128)
    for values in ([300, 0, 129, 17], [1, 299, -3, 400]):
        masked_m.copy_(torch.tensor(values, dtype=torch.int32))
        d.fill_(float('nan'))
        graph.replay()
        torch.cuda.synchronize()
        _check_masked(d, a_deq, b_deq, values, max_m, f'masked graph replay {values}')


# Grouped kernels that the config model may not pick: 64-row tiles with straddling B scales (pipelined), a
# 128x192 tile (not pipelined; the contiguous calls on 2-CTA clusters sharing A, 11 N blocks: the last pair's
# second tile lies past N), and the previous rules' choice. The masked op drops the multicast field.
@pytest.mark.parametrize('value', ['64,112,0,1,0', '128,192,0,0,2', 'rules'])
def test_forced_configs(forced_config, value):
    forced_config(value)
    _run_contiguous([100, 0, 300, 129], 2112, 512, False, True, tail=128)
    _run_contiguous([100, 0, 300, 129], 2112, 512, True, False, tail=128)
    _run_contiguous([100, 0, 300, 129], 2112, 512, False, False, tail=128, zero_a_padding=True)
    masked_values = [0, 1, 77, 200]
    a, b, a_deq, b_deq, masked_m = _masked_inputs(4, 200, 576, 1536, 7, masked_values)
    d = torch.full((4, 200, 576), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 100)
    torch.cuda.synchronize()
    _check_masked(d, a_deq, b_deq, masked_values, 200, f'masked forced {value}')


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
@pytest.mark.parametrize('zero_padding', [True, False], ids=['zero', 'unspecified'])
@pytest.mark.parametrize('value', ['256,128,0,0,0', '256,128,0,0,2', '64,112,0,1,2', '128,128,0,0,2',
                                   '128,192,0,0,1', '128,128,0,1,1', '64,128,0,0,1'])
def test_contiguous_256_row_tiles_and_multicast(forced_config, psum, zero_padding, value):
    """256-row tiles look groups up per 128-row half: a block whose halves hold two groups (a group starting at
    an odd multiple of 128 rows) runs once per group and each run writes its own half only. 2-CTA clusters
    sharing A (multicast 2) compute adjacent N blocks of one M block, so both see the same group, the same
    all-padding blocks and the same second visits; an odd number of N blocks (576 / 128: 5) leaves the last pair
    a tile past N, which must write nothing. 2-CTA clusters sharing B (multicast 1) compute M blocks 2p and
    2p + 1, which may hold two groups (each CTA then loads its own B), a group and padding (the padding block is
    computed along and written as padding: [130, 0, 60] with 256 rows of tail pairs the third group's block with
    a padding block), or lie past M (an odd number of blocks). Halves of padding, empty groups and padding past
    the last group as in the other tests."""
    forced_config(value)
    _run_contiguous([128, 1, 0, 256, 63, 200, 0, 513], 576, 1536, psum, zero_padding)
    _run_contiguous(_group_sizes(32, 11), 1024, 1024, psum, zero_padding, tail=64)
    _run_contiguous(_group_sizes(16, 13), 1088, 1024, psum, zero_padding, tail=64)
    _run_contiguous([300, 5], 4096, 7168, psum, zero_padding, tail=128)
    _run_contiguous([130, 0, 60], 1024, 1024, psum, zero_padding, tail=256)
    if not zero_padding:
        _run_contiguous([128, 1, 0, 256, 63, 200, 0, 513], 576, 1536, psum, False, zero_a_padding=True)


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
@pytest.mark.parametrize('value', ['64,128,0,0,0', '64,112,0,1,0'])
def test_contiguous_64_row_tiles_padding_unspecified(forced_config, psum, value):
    """ensure_zero_padding=False on 64-row tiles: a 64-row block of padding after a group's last rows (group sizes
    below 64 mod 128) lies in an alignment block that starts in the group, so it is computed with the group's B
    and stored (zeros from zero rows of A), as DeepGEMM's 128-row blocks do."""
    forced_config(value)
    for zero_a_padding in (True, False):
        _run_contiguous([50, 1, 0, 130, 63, 200, 0, 300], 576, 1536, psum, False, tail=128,
                        zero_a_padding=zero_a_padding)


@pytest.mark.parametrize('value', ['256,128,0,0,0', '256,64,0,0,0', '192,128,0,0,0', '128,128,0,1,0', '128,192,0,0,0',
                                   '128,128,0,1,1', '256,128,0,0,1', '64,128,0,0,1'])
def test_masked_last_tile_rows(forced_config, value):
    """Masked groups on 256-row tiles (two 64-row waves per math warpgroup), 192-row ones and 128-row ones (pipelined
    and not): the rows at or past masked_m are clipped per wave, a warpgroup whose rows are all valid stores through
    TMA, and on tiles of one wave per warpgroup a warpgroup whose rows all lie at or past masked_m only passes the
    pipeline's slots on. 2-CTA clusters on pairs of a group's M blocks sharing B (multicast 1): groups with an odd
    number of M blocks give their last pair a tile past masked_m, which writes nothing."""
    forced_config(value)
    masked_values = [0, 1, 64, 127, 128, 129, 200, 255, 256, 257, 300, 1000]
    max_m = 300
    a, b, a_deq, b_deq, masked_m = _masked_inputs(len(masked_values), max_m, 640, 1536, 13, masked_values)
    d = torch.full((len(masked_values), max_m, 640), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 200)
    torch.cuda.synchronize()
    _check_masked(d, a_deq, b_deq, masked_values, max_m, f'masked forced {value}')


def test_forced_192_row_tiles_rejected_for_contiguous(forced_config):
    """192-row tiles (three 64-row warpgroups) do not fit the contiguous layouts' 128-row segments: a contiguous
    call with them forced raises before any launch."""
    forced_config('192,128,0,0,0')
    layout, _, m_sum = contiguous_rows([130, 5], 128, False, 0)
    g = _gen(5)
    a_fp8, sfa, _ = _quant_a(_randn((m_sum, 256), g))
    b_fp8, sfb, _ = _quant_b(_randn((2, 256, 256), g))
    d = torch.full((m_sum, 256), float('nan'), device='cuda', dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match='block_m 192 is for the dense and masked GEMMs only'):
        deep_gemm.m_grouped_fp8_gemm_nt_contiguous((a_fp8, sfa), (b_fp8, sfb), d, layout)
    torch.cuda.synchronize()
    assert torch.isnan(d).all()


def test_masked_direct_store_odd_column_base():
    """D starting one column into a wider tensor: an even row stride but a base 2 bytes past a 4-byte
    boundary (direct-store epilogue, masked rows): column pairs must not be written as one 4-byte word."""
    num_groups, max_m, n, k = 3, 150, 576, 512
    values = [150, 0, 77]
    a, b, a_deq, b_deq, masked_m = _masked_inputs(num_groups, max_m, n, k, 41, values)
    d_wide = torch.full((num_groups, max_m, n + 2), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, :, 1:n + 1]
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, 100)
    torch.cuda.synchronize()
    _check_masked(d, a_deq, b_deq, values, max_m, 'masked, D at an odd column')
    assert torch.isnan(d_wide[:, :, 0]).all() and torch.isnan(d_wide[:, :, n + 1]).all(), 'wrote outside the output view'
