"""GPU correctness of deep_gemm.cublaslt_gemm_{nt,nn,tn,tt} (BF16 through cuBLASLt).

Fresh random inputs per case, outputs poisoned with NaN before every call, float64 reference on the
bfloat16 inputs; calc_diff < 1e-5 (FP32 accumulation, one bfloat16 rounding of the output at most), no NaN
left, nothing written outside the output view. All four layouts, K-major and MN-major operands, shapes
that are multiples of no tile size, bfloat16 and float32 d, with and without c (separate, aliasing d,
float32 for a bfloat16 d, broadcast or column-major c), padded and misaligned d, K = 0, side streams and
CUDA graphs. Any CUDA GPU (cuBLASLt is not tied to Hopper).

float8_e4m3fn a and b (the test_fp8_* functions, at the end): K-major operands, ragged shapes, bfloat16 and
float32 d, c separate or d itself, checked with gemm_checks.assert_gemm_close against the float64 product of the
e4m3 values. cuBLASLt's FP8 kernels need an FP8-capable GPU (sm_89 or newer; Hopper here).
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from gemm_checks import FP8_INTO_FP32_BARS, assert_gemm_close, scaled_like  # noqa: E402

_TOL = 1e-5
_LAYOUTS = ('nt', 'nn', 'tn', 'tt')
_SHAPES = [(1, 576, 7168), (77, 4104, 2064), (100, 100, 512), (257, 136, 400), (300, 1000, 72), (129, 4096, 7168),
           (4096, 7168, 2048), (1000, 24, 8)]


def _randn(shape, g, dtype=torch.bfloat16):
    return torch.randn(shape, device='cuda', dtype=torch.float32, generator=g).to(dtype)


def _operands(layout, m, n, k, seed, a_mn_major=False, b_mn_major=False):
    """(a_arg, b_arg, a [M, K], b [N, K]): the arguments in `layout`'s shapes, each stored K-major unless *_mn_major."""
    g = torch.Generator(device='cuda').manual_seed(seed)
    a, b = _randn((m, k), g), _randn((n, k), g)
    a_store = a.t().contiguous().t() if a_mn_major else a  # [M, K] view of an M-major buffer
    b_store = b.t().contiguous().t() if b_mn_major else b
    return (a_store if layout[0] == 'n' else a_store.t()), (b_store if layout[1] == 't' else b_store.t()), a, b


def _op(layout):
    return getattr(deep_gemm, f'cublaslt_gemm_{layout}')


def _check(out, ref, what):
    assert not torch.isnan(out).any(), f'{what}: NaN in output (unwritten elements)'
    diff = float(calc_diff(out.double(), ref))
    assert diff < _TOL, f'{what}: calc_diff {diff}'


def _round8(x):
    return (x + 7) // 8 * 8


@pytest.mark.parametrize('layout', _LAYOUTS)
@pytest.mark.parametrize('m,n,k', _SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _SHAPES])
@pytest.mark.parametrize('out_dtype', [torch.bfloat16, torch.float32], ids=['bf16', 'fp32'])
def test_layouts(layout, m, n, k, out_dtype):
    a_arg, b_arg, a, b = _operands(layout, m, n, k, seed=m * 7 + n * 13 + k)
    ref = a.double() @ b.double().t()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=out_dtype)
    _op(layout)(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _check(d, ref, f'{layout} {m}x{n}x{k} {out_dtype}')
    d2 = torch.full_like(d, float('nan'))
    _op(layout)(a_arg, b_arg, d2)  # the memoized plan
    torch.cuda.synchronize()
    assert torch.equal(d, d2), 'repeated runs differ'


@pytest.mark.parametrize('layout', _LAYOUTS)
@pytest.mark.parametrize('a_mn,b_mn', [(True, False), (False, True), (True, True)], ids=['a_mn', 'b_mn', 'both_mn'])
@pytest.mark.parametrize('m,n,k', [(77, 4104, 2064), (300, 1000, 72), (1, 576, 7168)])
def test_mn_major_operands(layout, a_mn, b_mn, m, n, k):
    # MN-major rows of M / N elements must be 16-byte aligned
    m, n = (_round8(m) if a_mn else m), (_round8(n) if b_mn else n)
    a_arg, b_arg, a, b = _operands(layout, m, n, k, seed=m + n + k, a_mn_major=a_mn, b_mn_major=b_mn)
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    _op(layout)(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _check(d, a.double() @ b.double().t(), f'{layout} {m}x{n}x{k} a_mn={a_mn} b_mn={b_mn}')


@pytest.mark.parametrize('layout', _LAYOUTS)
@pytest.mark.parametrize('d_dtype,c_dtype', [(torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
                                             (torch.float32, torch.float32)], ids=['bf16+bf16', 'bf16+fp32', 'fp32+fp32'])
@pytest.mark.parametrize('c_form', ['separate', 'alias', 'broadcast', 'col_major'])
def test_with_c(layout, d_dtype, c_dtype, c_form):
    m, n, k = 130, 1000, 520
    a_arg, b_arg, a, b = _operands(layout, m, n, k, seed=11)
    g = torch.Generator(device='cuda').manual_seed(12)
    if c_form == 'broadcast':  # one bias row, stride 0 along M
        c = _randn((1, n), g, c_dtype).expand(m, n)
    elif c_form == 'col_major':
        c = _randn((n, m), g, c_dtype).t()
    else:
        c = _randn((m, n), g, c_dtype)
    # a bfloat16 d takes c rounded to bfloat16 (cuBLASLt reads C in D's dtype)
    ref = c.to(d_dtype).double() + a.double() @ b.double().t()
    if c_form == 'alias':
        if c_dtype != d_dtype:
            pytest.skip('c can only be d when the dtypes match')
        d = c.clone()
        _op(layout)(a_arg, b_arg, d, d)
    else:
        c_before = c.clone()
        d = torch.full((m, n), float('nan'), device='cuda', dtype=d_dtype)
        _op(layout)(a_arg, b_arg, d, c)
        torch.cuda.synchronize()
        assert torch.equal(c, c_before), 'c was modified'
    torch.cuda.synchronize()
    _check(d, ref, f'{layout} d {d_dtype} c {c_dtype} {c_form}')


@pytest.mark.parametrize('out_dtype', [torch.bfloat16, torch.float32], ids=['bf16', 'fp32'])
def test_padded_and_misaligned_d(out_dtype):
    m, n, k = 96, 200, 256
    a_arg, b_arg, a, b = _operands('nt', m, n, k, seed=5)
    ref = a.double() @ b.double().t()
    # rows padded to n + 9 elements (not a 16-byte multiple), view starting one element in
    buf = torch.full((m + 1, n + 9), float('nan'), device='cuda', dtype=out_dtype)
    d = buf[1:, 1:n + 1]
    deep_gemm.cublaslt_gemm_nt(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _check(d, ref, 'padded/misaligned d')
    outside = torch.ones_like(buf, dtype=torch.bool)
    outside[1:, 1:n + 1] = False
    assert torch.isnan(buf[outside]).all(), 'wrote outside the output view'


def test_k_zero_and_empty():
    a_arg, b_arg, _, _ = _operands('nt', 64, 96, 0, seed=1)
    d = torch.full((64, 96), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.cublaslt_gemm_nt(a_arg, b_arg, d)
    assert torch.all(d == 0)
    c = torch.randn(64, 96, device='cuda')
    deep_gemm.cublaslt_gemm_nt(a_arg, b_arg, d, c)
    assert torch.equal(d, c.to(torch.bfloat16))
    a_arg, b_arg, _, _ = _operands('nt', 0, 96, 128, seed=1)
    deep_gemm.cublaslt_gemm_nt(a_arg, b_arg, torch.empty(0, 96, device='cuda', dtype=torch.bfloat16))


def test_side_stream_and_cuda_graph():
    m, n, k = 256, 512, 384
    a_arg, b_arg, a, b = _operands('nn', m, n, k, seed=3)
    ref = a.double() @ b.double().t()
    side = torch.cuda.Stream()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # a second workspace (per stream)
        deep_gemm.cublaslt_gemm_nn(a_arg, b_arg, d)
    side.synchronize()
    _check(d, ref, 'side stream')

    # run once first (plan and workspace), then capture and replay
    out = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    capture = torch.cuda.Stream()
    capture.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture):
        deep_gemm.cublaslt_gemm_nn(a_arg, b_arg, out)
    torch.cuda.current_stream().wait_stream(capture)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture):
        deep_gemm.cublaslt_gemm_nn(a_arg, b_arg, out)
    out.fill_(float('nan'))
    graph.replay()
    torch.cuda.synchronize()
    _check(out, ref, 'graph replay')


def test_compile_fullgraph_matches_eager():
    m, n, k = 64, 256, 128
    a_arg, b_arg, a, b = _operands('tt', m, n, k, seed=9)

    def f(x, y, out):
        deep_gemm.cublaslt_gemm_tt(x, y, out)
        return out

    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.float32)
    torch.compile(f, backend='aot_eager', fullgraph=True)(a_arg, b_arg, d)
    torch.cuda.synchronize()
    _check(d, a.double() @ b.double().t(), 'torch.compile')


def test_device_mismatch_is_runtime_error():
    a_arg, b_arg, _, _ = _operands('nt', 64, 96, 128, seed=2)
    with pytest.raises(RuntimeError, match=r'^cublaslt_gemm_nt: requires CUDA tensors; d is on cpu'):
        deep_gemm.cublaslt_gemm_nt(a_arg, b_arg, torch.empty(64, 96, dtype=torch.bfloat16))


# ---- float8_e4m3fn operands (an unscaled FP8 product, as DeepGEMM's test_fp8_fp4.test_gemm uses as its baseline) ----
# Reference: the float64 product of the e4m3 values themselves (.double()), so only cuBLASLt's own error counts;
# gemm_checks bars: BF16 d the BF16 ones, FP32 d FP8_INTO_FP32_BARS (FP8 tensor-core accumulation is not an exact
# FP32 one). Operands K-major (cuBLASLt's FP8 "TN" form), K a multiple of 16.
_FP8_SHAPES = [(1, 64, 128), (1, 2112, 7168), (77, 576, 7168), (77, 2112, 400), (1000, 64, 7168), (1000, 576, 128),
               (1000, 2112, 2064), (300, 136, 16)]


_needs_fp8 = pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.get_device_capability() < (8, 9),
                                reason="cuBLASLt's FP8 kernels need sm_89 or newer")


def _fp8_operands(m, n, k, seed):
    """a [M, K] and b [N, K], row-major float8_e4m3fn: randn * 4 (values up to ~20, well inside e4m3's 448)."""
    g = torch.Generator(device='cuda').manual_seed(seed)
    return _randn((m, k), g, torch.float32).mul(4).to(torch.float8_e4m3fn), _randn((n, k), g, torch.float32).mul(4).to(torch.float8_e4m3fn)


def _fp8_check(out, ref, what):
    assert_gemm_close(out, ref, what, **(FP8_INTO_FP32_BARS if out.dtype == torch.float32 else {}))


@_needs_fp8
@pytest.mark.parametrize('m,n,k', _FP8_SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _FP8_SHAPES])
@pytest.mark.parametrize('out_dtype', [torch.bfloat16, torch.float32], ids=['bf16', 'fp32'])
def test_fp8_nt(m, n, k, out_dtype):
    a, b = _fp8_operands(m, n, k, seed=m * 5 + n * 3 + k)
    ref = a.double() @ b.double().t()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=out_dtype)
    deep_gemm.cublaslt_gemm_nt(a, b, d)
    torch.cuda.synchronize()
    _fp8_check(d, ref, f'fp8 nt {m}x{n}x{k} {out_dtype}')
    d2 = torch.full_like(d, float('nan'))
    deep_gemm.cublaslt_gemm_nt(a, b, d2)  # the memoized plan
    torch.cuda.synchronize()
    assert torch.equal(d, d2), 'repeated runs differ'


@_needs_fp8
@pytest.mark.parametrize('m,n,k', [(1, 576, 7168), (77, 2112, 400), (1000, 64, 2064)])
@pytest.mark.parametrize('d_dtype,c_dtype,c_form', [(torch.float32, torch.float32, 'alias'), (torch.float32, torch.float32, 'separate'),
                                                    (torch.bfloat16, torch.bfloat16, 'separate'), (torch.bfloat16, torch.float32, 'separate')],
                         ids=['fp32_c_is_d', 'fp32+fp32', 'bf16+bf16', 'bf16+fp32'])
def test_fp8_with_c(m, n, k, d_dtype, c_dtype, c_form):
    """d = c + a @ b.T; c = d (DeepGEMM's accumulate form) or a separate c (kept unchanged)."""
    a, b = _fp8_operands(m, n, k, seed=m + n + k)
    prod = a.double() @ b.double().t()
    c = scaled_like(prod, torch.Generator(device='cuda').manual_seed(7), c_dtype)
    ref = c.to(d_dtype).double() + prod  # a bfloat16 d takes c rounded to bfloat16
    if c_form == 'alias':
        d = c.clone()
        deep_gemm.cublaslt_gemm_nt(a, b, d, c=d)
    else:
        c_before = c.clone()
        d = torch.full((m, n), float('nan'), device='cuda', dtype=d_dtype)
        deep_gemm.cublaslt_gemm_nt(a, b, d, c=c)
        torch.cuda.synchronize()
        assert torch.equal(c, c_before), 'c was modified'
    torch.cuda.synchronize()
    _fp8_check(d, ref, f'fp8 {m}x{n}x{k} d {d_dtype} c {c_dtype} {c_form}')


@_needs_fp8
@pytest.mark.parametrize('layout', ['nn', 'tn', 'tt'])
def test_fp8_k_major_storage_in_other_forms(layout):
    """Row-major [M, K] / [N, K] storage passed in another form's argument shapes (transposed views)."""
    m, n, k = 77, 576, 2064
    a, b = _fp8_operands(m, n, k, seed=21)
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    _op(layout)(a if layout[0] == 'n' else a.t(), b if layout[1] == 't' else b.t(), d)
    torch.cuda.synchronize()
    _fp8_check(d, a.double() @ b.double().t(), f'fp8 {layout}')


def test_fp8_non_k_major_raises_before_launch():
    a, b = _fp8_operands(64, 96, 128, seed=4)
    d = torch.full((64, 96), float('nan'), device='cuda', dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"^cublaslt_gemm_nn: b must be K-major .*cuBLASLt's FP8 path needs both operands K-major"):
        deep_gemm.cublaslt_gemm_nn(a, b.t().contiguous(), d)
    torch.cuda.synchronize()
    assert torch.isnan(d).all(), 'd was written by a rejected call'


@_needs_fp8
def test_fp8_compile_fullgraph_matches_eager():
    m, n, k = 64, 256, 128
    a, b = _fp8_operands(m, n, k, seed=9)

    def f(x, y, out):
        deep_gemm.cublaslt_gemm_nt(x, y, out, out)
        return out

    d = torch.zeros(m, n, device='cuda', dtype=torch.float32)
    torch.compile(f, backend='aot_eager', fullgraph=True)(a, b, d)
    torch.cuda.synchronize()
    _fp8_check(d, a.double() @ b.double().t(), 'fp8 torch.compile')
