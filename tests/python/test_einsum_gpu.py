"""GPU correctness of deep_gemm.einsum / fp8_einsum (SM90 kernels, and einsum's cuBLASLt loop).

Fresh random inputs per case, outputs poisoned with NaN before every call, the float64 reference of
einsum_reference.py; calc_diff < 1e-5 for BF16 (DeepGEMM's bar for 'bmk,bnk->mn'), < 1e-3 for FP8, plus a
per-batch/per-head check so that one wrong head or one dropped batch fails, no NaN left, and nothing written
outside the output view. Shapes: DeepGEMM's test shapes and ragged ones (b, m, n not multiples of any tile),
the strided y slice fy[:, :, :r], c given / c is d, float32 and bfloat16 d, use_cublaslt both ways.
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402

import einsum_reference as ref  # noqa: E402

BF16, F32 = torch.bfloat16, torch.float32


def _gen(seed):
    return torch.Generator(device='cuda').manual_seed(seed)


def _randn(shape, g, dtype=BF16):
    return torch.randn(shape, device='cuda', dtype=torch.float32, generator=g).to(dtype)


def _poisoned(shape, dtype, pad_cols=0):
    """A NaN-filled output view inside a larger NaN buffer (pad_cols extra columns), and the buffer."""
    buf = torch.full((*shape[:-1], shape[-1] + pad_cols), float('nan'), device='cuda', dtype=dtype)
    return buf[..., :shape[-1]], buf


def _check(out, want, tol, what):
    assert not out.isnan().any(), f'{what}: NaN left in the output'
    diff = float(calc_diff(out, want))
    assert diff < tol, f'{what}: calc_diff {diff:.3g} >= {tol}'


# ---- 'bmk,bnk->mn' ---------------------------------------------------------------------------------------

BMK_SHAPES = [(s, m, n, k) for s in (129, 4096) for (m, n, k) in [(128, 384, 128), (256, 256, 256), (384, 128, 384)]]
BMK_SHAPES += [(8192, 128, 384, 128), (3, 77, 200, 72), (17, 1, 8, 8), (5, 300, 136, 104), (2, 129, 520, 520)]


@pytest.mark.parametrize('s,m,n,k', BMK_SHAPES)
@pytest.mark.parametrize('d_dtype,c_mode', [(F32, 'none'), (F32, 'separate'), (F32, 'is_d'), (BF16, 'none')])
@pytest.mark.parametrize('use_cublaslt', [False, True])
def test_bmk_bnk_mn(s, m, n, k, d_dtype, c_mode, use_cublaslt):
    if use_cublaslt and s > 129:
        pytest.skip('the cuBLASLt loop launches one GEMM per batch: large S only in the benchmark')
    g = _gen(s * 7 + m + n + k)
    a, b = _randn((s, m, k), g), _randn((s, n, k), g)
    # C of the product's spread (sqrt(s * k)), so that dropping or doubling it fails the bar.
    c0 = torch.randn((m, n), device='cuda', generator=g) * (s * k) ** 0.5
    d, buf = _poisoned((m, n), d_dtype, pad_cols=8)
    c = None
    if c_mode == 'separate':
        c = c0.clone()
    elif c_mode == 'is_d':
        d.copy_(c0)
        c = d
    deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=c, use_cublaslt=use_cublaslt)
    want = ref.bmk_bnk_mn(a, b, c0 if c_mode != 'none' else None)
    _check(d, want, 1e-5, 'einsum bmk,bnk->mn')
    if c_mode != 'none':  # the product alone (d - c) must match too
        _check(d.double() - c0.double(), want - c0.double(), 1e-5, 'd - c')
    assert buf[:, n:].isnan().all(), 'wrote outside d'


def test_bmk_each_batch_counts():
    """One batch of large values: d must move by exactly that batch's product."""
    g = _gen(11)
    s, m, n, k = 37, 128, 256, 192
    a, b = _randn((s, m, k), g), _randn((s, n, k), g)
    a[s - 1] *= 8  # the last batch dominates; a kernel that stops one batch early fails
    d = torch.full((m, n), float('nan'), device='cuda')
    deep_gemm.einsum('bmk,bnk->mn', a, b, d)
    _check(d, ref.bmk_bnk_mn(a, b), 1e-5, 'einsum bmk,bnk->mn')
    d2 = torch.full((m, n), float('nan'), device='cuda')
    deep_gemm.einsum('bmk,bnk->mn', a[:-1], b[:-1], d2)
    _check(d - d2, a[-1].double() @ b[-1].double().T, 1e-5, 'last batch alone')


def test_bmk_empty_k_and_s():
    a, b = torch.empty(4, 64, 0, device='cuda', dtype=BF16), torch.empty(4, 32, 0, device='cuda', dtype=BF16)
    c = torch.randn(64, 32, device='cuda')
    d = torch.full((64, 32), float('nan'), device='cuda')
    deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=c)
    assert torch.equal(d, c)
    d16 = torch.full((64, 32), float('nan'), device='cuda', dtype=BF16)
    deep_gemm.einsum('bmk,bnk->mn', a[:0], b[:0], d16)
    assert (d16 == 0).all()


# ---- 'bhr,hdr->bhd' and 'bhd,hdr->bhr' ---------------------------------------------------------------------

HEAD_SHAPES = [(h, r, d, b) for (h, r, d) in [(128, 512, 128), (8, 4096, 1024)] for b in (4, 32, 128, 4096, 8192)]
HEAD_SHAPES += [(3, 64, 200, 77), (5, 200, 96, 1), (16, 136, 72, 300), (2, 1000, 248, 129)]


def _head_operands(form, h, r, d, b, g, pad=128):
    fy = _randn((h, d, r + pad), g)
    y = fy[:, :, :r]  # DeepGEMM's strided slice
    x = _randn((b, h, r if form == 'bhr,hdr->bhd' else d), g)
    return x, y


@pytest.mark.parametrize('h,r,d,b', HEAD_SHAPES)
@pytest.mark.parametrize('form', ['bhr,hdr->bhd', 'bhd,hdr->bhr'])
@pytest.mark.parametrize('use_cublaslt', [False, True])
def test_head_forms(h, r, d, b, form, use_cublaslt):
    g = _gen(h * 1000 + r + d + b)
    x, y = _head_operands(form, h, r, d, b, g)
    n = d if form == 'bhr,hdr->bhd' else r
    z = torch.full((b, h, n), float('nan'), device='cuda', dtype=BF16)
    deep_gemm.einsum(form, x, y, z, use_cublaslt=use_cublaslt)
    want = ref.bhr_hdr_bhd(x, y) if form == 'bhr,hdr->bhd' else ref.bhd_hdr_bhr(x, y)
    _check(z, want, 1e-5, form)
    for i in range(h):  # one wrong head (or a head written into its neighbour's columns) fails
        _check(z[:, i], want[:, i], 1e-5, f'{form} head {i}')


def test_head_form_padded_rows_of_z_untouched():
    """z a view with padded rows ([B, H, N] inside [B, H * N + 64]): the padding stays NaN."""
    g = _gen(5)
    h, r, d, b = 4, 256, 136, 50
    x, y = _head_operands('bhr,hdr->bhd', h, r, d, b, g)
    buf = torch.full((b, h * d + 64), float('nan'), device='cuda', dtype=BF16)
    z = buf[:, :h * d].view(b, h, d)
    deep_gemm.einsum('bhr,hdr->bhd', x, y, z)
    _check(z, ref.bhr_hdr_bhd(x, y), 1e-5, 'padded z')
    assert buf[:, h * d:].isnan().all()


# ---- fp8_einsum --------------------------------------------------------------------------------------------

@pytest.mark.parametrize('h,r,d,b', [(8, 4096, 1024, b) for b in (4, 32, 128, 4096, 8192)] +
                         [(3, 256, 200, 77), (16, 512, 128, 1), (4, 384, 136, 300)])
@pytest.mark.parametrize('use_ue8m0', [False, True])
def test_fp8_bhr_hdr_bhd(h, r, d, b, use_ue8m0):
    g = _gen(h + r + d + b)
    x, y = _randn((b, h, r), g), _randn((h, d, r), g)
    qx, sx = per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=use_ue8m0)
    qx, sx = qx.view(b, h, r), sx.view(b, h, -1)
    qy = torch.empty_like(y, dtype=torch.float8_e4m3fn)
    sy = torch.empty((h, (d + 127) // 128, (r + 127) // 128), device='cuda', dtype=F32)
    for i in range(h):
        qy[i], sy[i] = per_block_cast_to_fp8(y[i], use_ue8m0=use_ue8m0)
    z = torch.full((b, h, d), float('nan'), device='cuda', dtype=BF16)
    deep_gemm.fp8_einsum('bhr,hdr->bhd', (qx, sx), (qy, sy), z)
    # Against the dequantised operands (tight) and against the BF16 einsum (DeepGEMM's 1e-3 bar).
    want = ref.bhr_hdr_bhd(ref.dequant_per_token(qx, sx), ref.dequant_per_block(qy, sy))
    _check(z, want, 1e-5, 'fp8_einsum vs dequantised')
    _check(z, ref.bhr_hdr_bhd(x, y), 1e-3, 'fp8_einsum')
    for i in range(h):
        _check(z[:, i], want[:, i], 1e-5, f'fp8_einsum head {i}')
