"""GPU correctness of the SM90 BF16 GEMM ops (`deep_gemm.bf16_gemm_{nt,nn,tn,tt}`, the M-grouped
contiguous / masked ops and `k_grouped_bf16_gemm_tn_contiguous`).

Fresh random inputs per case, outputs poisoned with NaN before every call, float64 reference;
calc_diff < 1e-5, no NaN in the rows that must be written, and nothing written outside the output view.
Shapes include M and N that are multiples of no block size; with and without `c`; bf16 and float32 `d`.
Skipped without a Hopper GPU.
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from padding_rows import assert_padding_rows, contiguous_rows  # noqa: E402

_TOL = 1e-5
_LAYOUTS = ('nt', 'nn', 'tn', 'tt')


def _gen(seed):
    return torch.Generator(device='cuda').manual_seed(seed)


def _randn(shape, g, dtype=torch.bfloat16):
    return torch.randn(shape, device='cuda', dtype=torch.float32, generator=g).to(dtype)


def _operands(layout, m, n, k, seed):
    """Returns (a_arg, b_arg, a_logical [M,K], b_logical [N,K]) for the given layout."""
    g = _gen(seed)
    a = _randn((m, k), g)
    b = _randn((n, k), g)
    a_arg = a if layout[0] == 'n' else a.t().contiguous()  # tn/tt: a stored [K, M]
    b_arg = b if layout[1] == 't' else b.t().contiguous()  # nn/tn: b stored [K, N]
    return a_arg, b_arg, a, b


def _diff_ok(out, ref, what):
    assert not torch.isnan(out).any(), f'{what}: NaN in output (unwritten elements)'
    diff = float(calc_diff(out.double(), ref))
    assert diff < _TOL, f'{what}: calc_diff {diff}'


_SHAPES = [
    (1, 576, 7168), (64, 2112, 7168), (100, 100, 512), (128, 7168, 2048), (129, 4096, 7168),
    (1000, 2112, 7168), (4096, 7168, 2048), (4096, 24576, 1536), (77, 4104, 2064), (257, 136, 400),
    (300, 1000, 72),  # K not a multiple of 64
    (1100, 2112, 7168), (2100, 7168, 2048),  # odd numbers of M blocks
]


@pytest.mark.parametrize('layout', _LAYOUTS)
@pytest.mark.parametrize('m,n,k', _SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _SHAPES])
@pytest.mark.parametrize('out_dtype', [torch.bfloat16, torch.float32], ids=['bf16', 'fp32'])
def test_bf16_gemm(layout, m, n, k, out_dtype):
    # MN-major operands need 16-byte aligned rows of M / N.
    if layout[0] == 't' and m % 8 != 0:
        m = (m + 7) // 8 * 8
    if layout[1] == 'n' and n % 8 != 0:
        n = (n + 7) // 8 * 8
    a_arg, b_arg, a, b = _operands(layout, m, n, k, seed=m * 7 + n * 13 + k)
    ref = a.double() @ b.double().t()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=out_dtype)
    getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _diff_ok(d, ref, f'{layout} {m}x{n}x{k} {out_dtype}')
    d2 = torch.full_like(d, float('nan'))
    getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d2)
    torch.cuda.synchronize()
    assert torch.equal(d, d2), 'repeated runs differ'


@pytest.mark.parametrize('layout', _LAYOUTS)
@pytest.mark.parametrize('m,n,k', [(100, 2112, 7168), (4096, 4096, 512), (77, 4104, 2064)])
@pytest.mark.parametrize('alias', [False, True], ids=['c', 'c_is_d'])
def test_bf16_gemm_with_c_fp32(layout, m, n, k, alias):
    if layout[0] == 't':
        m = (m + 7) // 8 * 8
    if layout[1] == 'n':
        n = (n + 7) // 8 * 8
    a_arg, b_arg, a, b = _operands(layout, m, n, k, seed=m + n + k)
    c = torch.randn((m, n), device='cuda', dtype=torch.float32, generator=_gen(11)) * 4
    ref = c.double() + a.double() @ b.double().t()
    if alias:
        d = c.clone()
        getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d, c=d)
    else:
        d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.float32)
        getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d, c=c)
    torch.cuda.synchronize()
    _diff_ok(d, ref, f'{layout} {m}x{n}x{k} with c (alias={alias})')


def test_bf16_gemm_strided():
    """Row strides larger than the row: a, b, d are column slices of wider tensors."""
    m, n, k = 300, 1024, 1024
    g = _gen(3)
    a_wide = _randn((m, k + 64), g)
    b_wide = _randn((n, k + 128), g)
    a, b = a_wide[:, :k], b_wide[:, :k]
    for out_dtype in (torch.bfloat16, torch.float32):
        d_wide = torch.full((m, n + 64), float('nan'), device='cuda', dtype=out_dtype)
        d = d_wide[:, :n]
        deep_gemm.bf16_gemm_nt(a, b, d)
        torch.cuda.synchronize()
        _diff_ok(d, a.double() @ b.double().t(), f'strided {out_dtype}')
        assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'


def test_bf16_gemm_unaligned_n_output():
    """N = 100: a bf16 D row stride the TMA store cannot use (direct-store epilogue)."""
    m, n, k = 257, 100, 512
    a_arg, b_arg, a, b = _operands('nt', m, n, k, seed=5)
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.bf16_gemm_nt(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _diff_ok(d, a.double() @ b.double().t(), 'N=100')


def test_bf16_gemm_broadcast_c():
    """A row-broadcast c (row stride 0, e.g. a bias expanded to [M, N]) is copied once for the epilogue."""
    m, n, k = 300, 1000, 512
    g = _gen(31)
    a, b = _randn((m, k), g), _randn((n, k), g)
    c = _randn((1, n), g).expand(m, n)
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.bf16_gemm_nt(a, b, d, c=c)
    torch.cuda.synchronize()
    _diff_ok(d, c.double() + a.double() @ b.double().t(), 'broadcast c')


def test_bf16_gemm_output_at_odd_column():
    """D one column into a wider tensor: an even row stride but a base 2 bytes past a 4-byte boundary
    (direct-store epilogue): column pairs must not be written as one 4-byte word."""
    m, n, k = 257, 1000, 512
    a_arg, b_arg, a, b = _operands('nt', m, n, k, seed=6)
    d_wide = torch.full((m, n + 2), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, 1:n + 1]
    deep_gemm.bf16_gemm_nt(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _diff_ok(d, a.double() @ b.double().t(), 'D at an odd column')
    assert torch.isnan(d_wide[:, 0]).all() and torch.isnan(d_wide[:, n + 1]).all(), 'wrote outside the output view'


# The padding cases of the contiguous tests: (ensure_zero_padding, A's padding rows zero).
_PADDING_CASES = {'zero': (True, False), 'unspecified-a-pad-zero': (False, True),
                  'unspecified-a-pad-random': (False, False)}


@pytest.mark.parametrize('group_ms,n,k', [
    ([128, 256, 384, 128], 4096, 7168),
    ([100, 1, 300, 0, 129], 2112, 512),
    ([4096] * 2, 7168, 2048),
    ([77], 4104, 2064),
])
@pytest.mark.parametrize('padding', list(_PADDING_CASES))
def test_m_grouped_bf16_gemm_nt_contiguous(group_ms, n, k, padding):
    zero_padding, zero_a_padding = _PADDING_CASES[padding]
    align = deep_gemm.get_mk_alignment_for_contiguous_layout()
    layout, _, m_sum = contiguous_rows(group_ms, align)
    num_groups = len(group_ms)
    g = _gen(sum(group_ms) + n + k)
    a = _randn((m_sum, k), g)
    if zero_a_padding:
        a[layout < 0] = 0
    b = _randn((num_groups, n, k), g)
    d = torch.full((m_sum, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, layout, ensure_zero_padding=zero_padding)
    torch.cuda.synchronize()
    valid = layout >= 0
    assert_padding_rows(d, layout, align, zero_padding, zero_a_padding, f'contiguous {group_ms} {padding}')
    ref = torch.zeros((m_sum, n), device='cuda', dtype=torch.float64)
    for gi in range(num_groups):
        rows = layout == gi
        ref[rows] = a[rows].double() @ b[gi].double().t()
    d_valid = torch.where(valid.unsqueeze(1), d.float(), torch.zeros_like(d, dtype=torch.float32))
    _diff_ok(d_valid, ref, f'contiguous {group_ms} n={n} k={k}')


@pytest.mark.parametrize('group_ms,n,k,align,tail', [
    ([128, 256, 384, 128], 4096, 7168, 128, 0),
    ([100, 1, 300, 0, 129], 2112, 512, 128, 200),  # empty group; rows past the last group
    ([0, 77], 4104, 2064, 128, 0),
    ([130, 5, 0, 256], 576, 1536, 256, 64),  # alignment above BLOCK_M: padding-only blocks between groups
])
@pytest.mark.parametrize('padding', list(_PADDING_CASES))
def test_m_grouped_bf16_gemm_nt_contiguous_psum(group_ms, n, k, align, tail, padding):
    """use_psum_layout=True: grouped_layout = group ends; group g starts at end[g-1] rounded up to the
    contiguous alignment. Rows of every group are checked against the reference; the other (padding) rows
    are zeros with ensure_zero_padding=True and follow DeepGEMM's SM90 rows with False (padding_rows.assert_padding_rows)."""
    zero_padding, zero_a_padding = _PADDING_CASES[padding]
    old_align = deep_gemm.get_mk_alignment_for_contiguous_layout()
    deep_gemm._C._set_mk_alignment_value(align)
    try:
        layout, row_group, m_sum = contiguous_rows(group_ms, align, psum=True, tail=tail)
        g = _gen(sum(group_ms) + n + k + align)
        a = _randn((m_sum, k), g)
        if zero_a_padding:
            a[row_group < 0] = 0
        b = _randn((len(group_ms), n, k), g)
        d = torch.full((m_sum, n), float('nan'), device='cuda', dtype=torch.bfloat16)
        deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, layout, use_psum_layout=True,
                                                    ensure_zero_padding=zero_padding)
        torch.cuda.synchronize()
        valid = row_group >= 0
        ref = torch.zeros((m_sum, n), device='cuda', dtype=torch.float64)
        for gi in range(len(group_ms)):
            rows = row_group == gi
            ref[rows] = a[rows].double() @ b[gi].double().t()
        assert_padding_rows(d, row_group, align, zero_padding, zero_a_padding,
                            f'contiguous psum {group_ms} align={align} {padding}')
        d_valid = torch.where(valid.unsqueeze(1), d.float(), torch.zeros_like(d, dtype=torch.float32))
        _diff_ok(d_valid, ref, f'contiguous psum {group_ms} n={n} k={k} align={align}')
    finally:
        deep_gemm._C._set_mk_alignment_value(old_align)


@pytest.mark.parametrize('num_groups,max_m,expected_m,n,k', [
    (4, 256, 128, 4096, 7168),
    (6, 1024, 300, 2112, 512),
    (2, 100, 50, 576, 7168),   # max_m not a multiple of 64
    (3, 64, 64, 7168, 2048),
])
def test_m_grouped_bf16_gemm_nt_masked(num_groups, max_m, expected_m, n, k):
    g = _gen(num_groups * 1000 + max_m + n + k)
    a = _randn((num_groups, max_m, k), g)
    b = _randn((num_groups, n, k), g)
    masked_m = torch.randint(0, max_m + 1, (num_groups,), device='cuda', dtype=torch.int32, generator=g)
    masked_m[0] = max_m  # one full group
    if num_groups > 2:
        masked_m[1] = 0  # one empty group
    d = torch.full((num_groups, max_m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m)
    torch.cuda.synchronize()
    for gi in range(num_groups):
        rows = int(masked_m[gi])
        # The TMA store writes whole 64-row boxes (README): nothing from the box after masked_m's on.
        box_end = (rows + 63) // 64 * 64
        assert torch.isnan(d[gi, box_end:]).all(), \
            f'masked group {gi}: a row past the 64-row box of masked_m ({rows}) was written'
        if rows == 0:
            continue
        ref = a[gi, :rows].double() @ b[gi].double().t()
        _diff_ok(d[gi, :rows], ref, f'masked group {gi} ({rows} rows)')


# ---- K-grouped (weight gradients): d[g] = c[g] + a[K_g].T @ b[K_g] ----------------------------------

def _k_grouped_inputs(ks, m, n, seed):
    g = _gen(seed)
    a = _randn((sum(ks), m), g)
    b = _randn((sum(ks), n), g)
    ks_tensor = torch.tensor(ks, device='cuda', dtype=torch.int32)
    return a, b, ks_tensor


def _k_grouped_reference(a, b, ks, m, n, c=None):
    """float64 [G, M, N]: c[g] (or zeros) plus one torch matmul per group."""
    ref = torch.zeros((len(ks), m, n), device='cuda', dtype=torch.float64) if c is None else c.double().clone()
    start = 0
    for gi, k in enumerate(ks):
        ref[gi] += a[start:start + k].double().t() @ b[start:start + k].double()
        start += k
    return ref


def _check_k_grouped(d, ref, ks, c, what):
    _diff_ok(d, ref, what)
    for gi, k in enumerate(ks):  # empty groups are exact copies of c (or zeros)
        if k == 0:
            expected = torch.zeros_like(d[gi]) if c is None else c[gi]
            assert torch.equal(d[gi], expected), f'{what}: group {gi} (K = 0) is not {"c" if c is not None else "zero"}'


_K_GROUPED_CASES = [
    ([128, 0, 384, 256], 136, 200),                  # M, N multiples of no block size; an empty group
    ([0, 0, 256], 8, 8),                             # tiny M/N (TMA boxes wider than the tensor), leading empty groups
    ([256, 1024, 0, 128, 640, 384], 1032, 2112),
    ([4096, 2048], 7168, 2048),                      # large tiles, long K
    ([128, 0, 256, 128, 0, 512, 128, 384, 128, 0, 256, 128, 640, 128, 0, 128], 72, 520),  # 16 groups
]


@pytest.mark.parametrize('ks,m,n', _K_GROUPED_CASES, ids=[f'G{len(ks)}_{m}x{n}' for ks, m, n in _K_GROUPED_CASES])
@pytest.mark.parametrize('mode', ['no_c', 'c', 'c_is_d'])
def test_k_grouped_bf16_gemm_tn_contiguous(ks, m, n, mode):
    a, b, ks_tensor = _k_grouped_inputs(ks, m, n, seed=sum(ks) + m * 7 + n)
    c = None if mode == 'no_c' else torch.randn((len(ks), m, n), device='cuda', dtype=torch.float32, generator=_gen(m + n)) * 4
    ref = _k_grouped_reference(a, b, ks, m, n, c)
    if mode == 'c_is_d':
        d = c.clone()
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c=d)
    else:
        d = torch.full((len(ks), m, n), float('nan'), device='cuda', dtype=torch.float32)
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c=c)
    torch.cuda.synchronize()
    _check_k_grouped(d, ref, ks, c, f'k-grouped {ks} {m}x{n} {mode}')


def test_k_grouped_bf16_gemm_few_sms():
    """A small persistent grid: every CTA walks tiles of many groups (the scheduler's ks cursor)."""
    ks, m, n = [128, 384, 0, 256, 128, 0, 512], 264, 392
    a, b, ks_tensor = _k_grouped_inputs(ks, m, n, seed=17)
    old = deep_gemm.get_num_sms()
    try:
        for sms in (1, 5):
            deep_gemm.set_num_sms(sms)
            d = torch.full((len(ks), m, n), float('nan'), device='cuda', dtype=torch.float32)
            deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor)
            torch.cuda.synchronize()
            _check_k_grouped(d, _k_grouped_reference(a, b, ks, m, n), ks, None, f'k-grouped on {sms} SMs')
    finally:
        deep_gemm.set_num_sms(old)


def test_k_grouped_bf16_gemm_all_groups_empty():
    ks, m, n = [0, 0], 136, 200
    a, b, ks_tensor = _k_grouped_inputs(ks, m, n, seed=1)
    d = torch.full((2, m, n), float('nan'), device='cuda', dtype=torch.float32)
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor)
    assert torch.all(d == 0)
    c = torch.randn((2, m, n), device='cuda', dtype=torch.float32, generator=_gen(2))
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c=c)
    assert torch.equal(d, c)


def test_k_grouped_bf16_gemm_cuda_graph():
    """ks_tensor is read on the GPU (no host sync): the op can be captured and replayed."""
    ks, m, n = [256, 0, 128], 520, 1032
    a, b, ks_tensor = _k_grouped_inputs(ks, m, n, seed=23)
    d = torch.empty((len(ks), m, n), device='cuda', dtype=torch.float32)
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor)  # compile and load outside the capture
    d.fill_(float('nan'))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor)
    graph.replay()
    torch.cuda.synchronize()
    _check_k_grouped(d, _k_grouped_reference(a, b, ks, m, n), ks, None, 'k-grouped graph replay')
