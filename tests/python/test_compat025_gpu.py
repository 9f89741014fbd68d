"""GPU checks of the sgl-deep-gemm 0.2.5 / DeepGEMM 2.8.1 forms of docs/compat_2_8.md ("sgl-deep-gemm 0.2.5") that
compute: batched_syrk / batched_symm against float64 products, the Identity and Alpha epilogues against the plain
call and alpha= (bitwise), einsum / fp8_einsum with Identity and fp8_einsum's (d, None), and compile mode 1
(kernels built, nothing written; the later launch compiles nothing). Fresh random inputs, NaN-poisoned outputs
inside larger buffers. Skipped without a Hopper GPU."""
import os
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.epilogue import Alpha, Identity  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402

BF16, F32 = torch.bfloat16, torch.float32


def _randn(shape, seed, dtype=BF16):
    g = torch.Generator(device='cuda').manual_seed(seed)
    return torch.randn(shape, device='cuda', generator=g).to(dtype)


def _padded(cols):
    """``cols`` plus 8 to 15 columns of padding, a multiple of 8 (16-byte rows for 2-byte elements)."""
    return (cols + 7) // 8 * 8 + 8


def _view(shape, dtype):
    """A NaN-poisoned view ``shape`` inside a buffer with 3 more rows and padded columns."""
    buf = torch.full((*shape[:-2], shape[-2] + 3, _padded(shape[-1])), float('nan'), device='cuda', dtype=dtype)
    return buf[..., :shape[-2], :shape[-1]], buf


def _untouched_outside(view, buf):
    mask = torch.ones_like(buf, dtype=torch.bool)
    mask[..., :view.shape[-2], :view.shape[-1]] = False
    return bool(buf[mask].isnan().all())


def _operand(shape, seed, k_major):
    """A bf16 matrix (batch) of ``shape`` stored K-major (rows padded) or as the .mT view of an MN-major buffer."""
    stored = shape if k_major else (*shape[:-2], shape[-1], shape[-2])
    buf = _randn((*stored[:-1], _padded(stored[-1])), seed)[..., :stored[-1]]
    return buf if k_major else buf.mT


@pytest.mark.parametrize('batch', [None, 4])
@pytest.mark.parametrize('m,k', [(64, 512), (200, 136), (1, 64)])
@pytest.mark.parametrize('k_major', [True, False])
@pytest.mark.parametrize('d_dtype', [BF16, F32])
def test_batched_syrk(batch, m, k, k_major, d_dtype):
    lead = () if batch is None else (batch,)
    a = _operand((*lead, m, k), m * 31 + k, k_major)
    d, buf = _view((*lead, m, m), d_dtype)
    deep_gemm.batched_syrk(a, d)
    want = a.double() @ a.double().mT
    assert not d.isnan().any() and _untouched_outside(d, buf)
    assert float(calc_diff(d.double(), want)) < 1e-5
    for i in range(batch or 0):  # each matrix of the batch, so one wrong or dropped matrix fails
        assert float(calc_diff(d[i].double(), want[i])) < 1e-5, i


@pytest.mark.parametrize('batch', [None, 3])
@pytest.mark.parametrize('m,n', [(128, 256), (72, 40)])
@pytest.mark.parametrize('a_k_major,b_k_major', [(True, True), (False, True), (True, False), (False, False)])
def test_batched_symm(batch, m, n, a_k_major, b_k_major):
    lead = () if batch is None else (batch,)
    a = _operand((*lead, m, m), m + n, a_k_major)
    a.copy_(a + a.mT)  # symmetric
    b = _operand((*lead, m, n), m * n, b_k_major)
    d, buf = _view((*lead, m, n), BF16)
    deep_gemm.batched_symm(a, b, d)
    want = a.double() @ b.double()
    assert not d.isnan().any() and _untouched_outside(d, buf)
    assert float(calc_diff(d.double(), want)) < 1e-5
    for i in range(batch or 0):
        assert float(calc_diff(d[i].double(), want[i])) < 1e-5, i


def _fp8(m, n, k, seed):
    return per_token_cast_to_fp8(_randn((m, k), seed)), per_block_cast_to_fp8(_randn((n, k), seed + 1))


def test_identity_and_alpha_epilogues_match_plain_calls():
    m, n, k = 256, 512, 1024
    a, b = _fp8(m, n, k, 5)
    plain, via_identity = (torch.full((m, n), float('nan'), device='cuda', dtype=BF16) for _ in range(2))
    deep_gemm.fp8_gemm_nt(a, b, plain)
    deep_gemm.fp8_gemm_nt(a, b, via_identity, epilogue=Identity())
    assert torch.equal(plain, via_identity)
    scaled, via_alpha = (torch.full((m, n), float('nan'), device='cuda', dtype=BF16) for _ in range(2))
    deep_gemm.fp8_gemm_nt(a, b, scaled, alpha=0.5)
    deep_gemm.fp8_gemm_nt(a, b, via_alpha, epilogue=Alpha(0.5))
    assert torch.equal(scaled, via_alpha) and not torch.equal(scaled, plain)
    x, w = _randn((m, k), 7), _randn((n, k), 8)
    scaled, via_alpha = (torch.full((m, n), float('nan'), device='cuda', dtype=F32) for _ in range(2))
    deep_gemm.bf16_gemm_nt(x, w, scaled, alpha=-2.0)
    deep_gemm.bf16_gemm_nt(x, w, via_alpha, epilogue=Alpha(-2.0))
    assert torch.equal(scaled, via_alpha)
    assert float(calc_diff(via_alpha.double(), -2.0 * (x.double() @ w.double().T))) < 1e-5


@pytest.mark.parametrize('use_cublaslt', [False, True])
def test_einsum_with_identity(use_cublaslt):
    b_, h, r, dd = 9, 4, 128, 64
    x, y = _randn((b_, h, r), 11), _randn((h, dd, r), 12)
    z = torch.full((b_, h, dd), float('nan'), device='cuda', dtype=BF16)
    deep_gemm.einsum('bhr,hdr->bhd', x, y, z, None, use_cublaslt, Identity())
    assert float(calc_diff(z.double(), torch.einsum('bhr,hdr->bhd', x.double(), y.double()))) < 1e-5


def test_fp8_einsum_d_none_pair_and_identity():
    b_, h, r, dd = 16, 4, 256, 128
    x, y = _randn((b_, h, r), 13), _randn((h, dd, r), 14)
    qx, sx = per_token_cast_to_fp8(x.view(-1, r))
    qy = [per_block_cast_to_fp8(y[i]) for i in range(h)]
    a = (qx.view(b_, h, r), sx.view(b_, h, -1))
    b = (torch.stack([q for q, _ in qy]), torch.stack([s for _, s in qy]))
    plain, pair = (torch.full((b_, h, dd), float('nan'), device='cuda', dtype=BF16) for _ in range(2))
    deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, plain)
    deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, (pair, None), None, (1, 128, 128), Identity())
    assert torch.equal(plain, pair)
    assert float(calc_diff(pair.double(), torch.einsum('bhr,hdr->bhd', x.double(), y.double()))) < 1e-3


_COMPILE_MODE = '''
import torch, deep_gemm
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
m, n, k = 192, 640, 896
a = per_token_cast_to_fp8(torch.randn(m, k, device='cuda', dtype=torch.bfloat16))
b = per_block_cast_to_fp8(torch.randn(n, k, device='cuda', dtype=torch.bfloat16))
d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
deep_gemm.set_compile_mode(1)
deep_gemm.fp8_gemm_nt(a, b, d)
torch.cuda.synchronize()
assert d.isnan().all(), 'compile mode launched the GEMM'
deep_gemm.set_compile_mode(0)
import os
os.environ['DG_JIT_COMPILE'] = 'error'  # a cache miss now raises: the launch must find every kernel compiled above
deep_gemm.reload_settings()
deep_gemm.fp8_gemm_nt(a, b, d)
torch.cuda.synchronize()
assert not d.isnan().any()
print('ok')
'''


def test_compile_mode_builds_without_launching(tmp_path):
    env = dict(os.environ, DG_JIT_CACHE_DIR=str(tmp_path / 'cache'),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    result = subprocess.run([sys.executable, '-c', _COMPILE_MODE], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and result.stdout.strip() == 'ok', result.stderr[-4000:]
