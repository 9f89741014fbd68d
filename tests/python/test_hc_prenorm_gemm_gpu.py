"""GPU correctness of deep_gemm.tf32_hc_prenorm_gemm against hc_prenorm_reference.py (float64, b rounded to
nearest TF32 with ties away from zero, the kernel's split layout), on fresh random data with NaN-poisoned
outputs: ragged m and k, n from 1 to 64, num_splits None / 1 / 2 / 16 / more splits than K blocks, strided
and padded operands, results that do not depend on timing (two calls bitwise equal), PDL, a CUDA graph
replay, and DeepGEMM's own test loop and bar (calc_diff < 1e-8 against a TF32 torch matmul). Skipped
without a Hopper GPU.
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from hc_prenorm_reference import hc_prenorm_reference, split_ranges  # noqa: E402

op = deep_gemm.tf32_hc_prenorm_gemm
# Against the float64 reference with the same TF32 b, only the FP32 accumulation (the tensor core's for d,
# ours for sqr_sum) differs: calc_diff should be around 1e-12 or below. A b truncated instead of rounded
# gives ~1.3e-7 and a b not rounded at all ~2e-8 (tests/python/test_hc_prenorm_gemm.py measures both on the
# CPU), a wrong split or a lost block far more.
TIGHT = 1e-9
SQR_RTOL = 1e-5  # FP32 sums of up to 28672 squares, in chains of at most k / 64 tile sums


def _inputs(m, n, k, a_pad=0, seed=None):
    g = torch.Generator(device='cuda')
    g.manual_seed(seed if seed is not None else m * 7919 + n * 131 + k)
    a_full = torch.randn(m, k + a_pad, device='cuda', generator=g).bfloat16()
    b = torch.randn(n, k, device='cuda', generator=g)
    return a_full[:, :k], b


def _outputs(m, n, splits, d_pad=0, s_pad=0):
    """NaN-poisoned d and sqr_sum; with padding they are slices of wider buffers whose padding must stay NaN."""
    lead = () if splits is None else (splits,)
    d_buf = torch.full(lead + (m, n + d_pad), float('nan'), device='cuda')
    s_buf = torch.full(lead[:1] + (m + s_pad,), float('nan'), device='cuda')
    return d_buf, s_buf, d_buf[..., :n], s_buf[..., :m]


def _check(m, n, k, splits=None, a_pad=0, d_pad=0, s_pad=0):
    label = f'm={m} n={n} k={k} splits={splits} a_pad={a_pad} d_pad={d_pad} s_pad={s_pad}'
    a, b = _inputs(m, n, k, a_pad)
    d_buf, s_buf, d, s = _outputs(m, n, splits, d_pad, s_pad)
    op(a, b, d, s, num_splits=splits)
    torch.cuda.synchronize()
    ref_d, ref_s = hc_prenorm_reference(a, b, splits)
    assert not d.isnan().any(), f'{label}: NaN left in d'
    assert not s.isnan().any(), f'{label}: NaN left in sqr_sum'
    if d_pad:
        assert d_buf[..., n:].isnan().all(), f'{label}: d padding written'
    if s_pad:
        assert s_buf[..., m:].isnan().all(), f'{label}: sqr_sum padding written'
    if splits is None:
        parts = [(d, s, ref_d, ref_s)]
    else:
        parts = list(zip(d, s, ref_d, ref_s))
        ranges = split_ranges(k, splits)
    for i, (dd, ss, rd, rs) in enumerate(parts):
        where = label if splits is None else f'{label} split {i} (columns {ranges[i]})'
        if splits is not None and ranges[i][0] == ranges[i][1]:
            assert (dd == 0).all() and (ss == 0).all(), f'{where}: an empty split must be written as zeros'
            continue
        diff = float(calc_diff(dd, rd))
        assert diff < TIGHT, f'{where}: d calc_diff {diff:.3e}'
        torch.testing.assert_close(ss.double(), rs, rtol=SQR_RTOL, atol=0, msg=where)
    return a, b, d, s


# ---- ragged shapes ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('m', [1, 13, 127, 128, 129, 137, 300])
@pytest.mark.parametrize('k', [8, 64, 200, 1000, 7176])
def test_ragged_m_and_k(m, k):
    _check(m, 24, k)
    _check(m, 24, k, splits=16)


@pytest.mark.parametrize('n', [1, 7, 8, 16, 24, 32, 40, 64])
def test_every_n(n):
    _check(137, n, 2000)
    _check(13, n, 2000, splits=3)


@pytest.mark.parametrize('splits', [1, 2, 5, 16, 37, 200])
def test_num_splits(splits):
    _check(137, 24, 7168, splits=splits)
    _check(13, 24, 1000, splits=splits)  # 16 blocks: 37 and 200 leave splits empty


def test_padded_and_strided_operands():
    _check(137, 24, 100, a_pad=4)                         # k = 100: a rows padded to 104 (16-byte strides)
    _check(137, 24, 7168, a_pad=64, d_pad=8, s_pad=3)     # d and sqr_sum slices of wider buffers
    _check(300, 20, 1000, splits=4, d_pad=12, s_pad=5)
    a, b = _inputs(400, 24, 1024)
    d = torch.full((137, 24), float('nan'), device='cuda')
    s = torch.full((137,), float('nan'), device='cuda')
    op(a[200:337], b, d, s)  # rows 200..336: a 16-byte aligned start inside a
    ref_d, ref_s = hc_prenorm_reference(a[200:337], b)
    assert float(calc_diff(d, ref_d)) < TIGHT
    torch.testing.assert_close(s.double(), ref_s, rtol=SQR_RTOL, atol=0)


def test_zero_rows_is_a_no_op():
    a, b = _inputs(0, 24, 1024)
    d, s = torch.empty(0, 24, device='cuda'), torch.empty(0, device='cuda')
    op(a, b, d, s)
    op(a, b, d[None].expand(4, 0, 24).contiguous(), s[None].expand(4, 0).contiguous(), num_splits=4)


def test_special_values():
    """Zeros, large and tiny magnitudes: the squares stay in FP32 range and exact zeros give exact zeros."""
    m, n, k = 64, 24, 4096
    a = torch.zeros(m, k, device='cuda', dtype=torch.bfloat16)
    a[1] = 2.0 ** 50   # squares 2^100, sums 2^112: still finite in FP32
    a[2] = 2.0 ** -50  # squares 2^-100: normal FP32
    a[3, ::7] = -3.0
    b = torch.randn(n, k, device='cuda')
    d = torch.full((m, n), float('nan'), device='cuda')
    s = torch.full((m,), float('nan'), device='cuda')
    op(a, b, d, s)
    ref_d, ref_s = hc_prenorm_reference(a, b)
    assert (d[0] == 0).all() and s[0] == 0 and (d[4:] == 0).all() and (s[4:] == 0).all()
    torch.testing.assert_close(s.double(), ref_s, rtol=SQR_RTOL, atol=0)
    for row in (1, 2, 3):
        assert float(calc_diff(d[row], ref_d[row])) < TIGHT, row


# ---- determinism, PDL, CUDA graphs ----------------------------------------------------------------------

@pytest.mark.parametrize('m,k,splits', [(13, 28672, None), (4096, 7168, None), (137, 7680, 16), (8192, 7168, 16)])
def test_repeated_calls_are_bitwise_equal(m, k, splits):
    a, b = _inputs(m, 24, k)
    outs = []
    for _ in range(3):
        _, _, d, s = _outputs(m, 24, splits)
        op(a, b, d, s, num_splits=splits)
        outs.append((d, s))
    for d, s in outs[1:]:
        assert torch.equal(d, outs[0][0]) and torch.equal(s, outs[0][1])


def test_pdl_gives_the_same_results():
    a, b = _inputs(13, 24, 28672)
    _, _, d0, s0 = _outputs(13, 24, None)
    op(a, b, d0, s0)
    old = deep_gemm.get_pdl()
    try:
        deep_gemm.set_pdl(True)
        for _ in range(3):  # back to back: each launch may start while the previous one finishes
            _, _, d, s = _outputs(13, 24, None)
            op(a, b, d, s)
            assert torch.equal(d, d0) and torch.equal(s, s0)
    finally:
        deep_gemm.set_pdl(old)


def test_cuda_graph_replay():
    """The split reduction's workspace and counters under capture (a capture gets its own buffer)."""
    a, b = _inputs(13, 24, 7168)
    _, _, d_eager, s_eager = _outputs(13, 24, None)
    op(a, b, d_eager, s_eager)  # compiles and loads outside the capture
    _, _, d, s = _outputs(13, 24, None)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op(a, b, d, s)
    for _ in range(3):
        d.fill_(float('nan'))
        s.fill_(float('nan'))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(d, d_eager) and torch.equal(s, s_eager)


def test_torch_compile_runs_the_kernel():
    a, b = _inputs(137, 24, 7168)

    def f(a, b):
        d = torch.empty(16, 137, 24, device='cuda')
        s = torch.empty(16, 137, device='cuda')
        op(a, b, d, s, num_splits=16)
        return d.sum(0), s.sum(0)

    d, s = torch.compile(f, fullgraph=True)(a, b)
    ref_d, ref_s = hc_prenorm_reference(a, b)
    assert float(calc_diff(d, ref_d)) < TIGHT
    torch.testing.assert_close(s.double(), ref_s, rtol=SQR_RTOL, atol=0)


# ---- DeepGEMM's test (tests/test_hyperconnection.py of v2.6.1): its shapes and its bar --------------------

@pytest.mark.parametrize('m', [13, 137, 4096, 8192])
@pytest.mark.parametrize('n,k', [(24, 28672), (24, 7680), (24, 7168)])
@pytest.mark.parametrize('splits', [None, 16])
def test_deepgemm_shapes_and_bar(m, n, k, splits):
    a, b, d, s = _check(m, n, k, splits=splits)
    final_d = d if splits is None else d.sum(0)
    final_s = s if splits is None else s.sum(0)
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        ref_d = a.float() @ b.T
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    ref_s = a.float().square().sum(-1)
    # Which side is off when the bar is missed: torch's TF32 matmul against the float64 reference (b rounded
    # to nearest) tells a torch/cuBLAS that rounds differently from a kernel fault. Products of a BF16 and a
    # TF32 value are exact in FP32, so with the same rounding of b only the accumulation order differs.
    torch_vs_ref = float(calc_diff(ref_d, hc_prenorm_reference(a, b)[0]))
    diff = max(float(calc_diff(final_d, ref_d)), float(calc_diff(final_s, ref_s)))
    assert diff < 1e-8, (f'm={m} n={n} k={k} splits={splits}: {diff:.3e} against the TF32 torch matmul '
                         f'(torch against the round-to-nearest reference: {torch_vs_ref:.3e})')
