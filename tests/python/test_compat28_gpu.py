"""GPU checks of the DeepGEMM 2.8 call forms and parity fixes (docs/compat_2_8.md): alpha on the dense FP8
and BF16 GEMMs, shutdown() and the cuBLASLt ops after it, the K-grouped FP8 op with DeepGEMM's scale
shapes, and grouped calls under a stored mk alignment of 256. Fresh random inputs, NaN-poisoned outputs,
float64 references on the dequantised inputs. Skipped without a Hopper GPU."""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from deep_gemm.utils import dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402


def _fp8_inputs(m, n, k, seed):
    g = torch.Generator(device='cuda').manual_seed(seed)
    x = torch.randn(m, k, device='cuda', generator=g, dtype=torch.bfloat16)
    w = torch.randn(n, k, device='cuda', generator=g, dtype=torch.bfloat16)
    a, b = per_token_cast_to_fp8(x), per_block_cast_to_fp8(w)
    ref = dequantize_per_token(*a).double() @ dequantize_per_block(*b).double().T
    return a, b, ref


@pytest.mark.parametrize('alpha', [0.5, -3.0, 0.1])
@pytest.mark.parametrize('m,n,k,with_c', [(129, 576, 512, False), (64, 512, 7168, False), (300, 200, 384, True)])
def test_fp8_gemm_nt_alpha(m, n, k, with_c, alpha):
    a, b, ref = _fp8_inputs(m, n, k, m + n + k)
    sfb_before = b[1].clone()
    c = torch.randn(m, n, device='cuda', dtype=torch.bfloat16) if with_c else None
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt(a, b, d, c, alpha=alpha)
    want = alpha * ref + (c.double() if with_c else 0)
    assert not torch.isnan(d).any()
    assert float(calc_diff(d.double(), want)) < 1e-3
    assert torch.equal(b[1], sfb_before)  # the caller's scales are not modified
    # alpha=1.0 is today's call, bitwise
    d1, d2 = torch.empty_like(d), torch.empty_like(d)
    deep_gemm.fp8_gemm_nt(a, b, d1, c)
    deep_gemm.fp8_gemm_nt(a, b, d2, c, alpha=1.0)
    assert torch.equal(d1, d2)


def _mn_major(t):
    """t [rows, K] stored MN-major as [K, rows] with rows padded to a multiple of 8 elements (16-byte aligned
    rows, which TMA needs and both the plain call and the alpha route require; test_compat28.py checks that
    both reject unpadded rows of 257 elements alike)."""
    rows, k = t.shape
    store = torch.full((k, (rows + 7) // 8 * 8), float('nan'), device=t.device, dtype=t.dtype)
    return store[:, :rows].copy_(t.T)


@pytest.mark.parametrize('lay', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('out_dtype,with_c', [(torch.bfloat16, False), (torch.float32, True), (torch.bfloat16, True)])
def test_bf16_gemm_alpha(lay, out_dtype, with_c):
    m, n, k, alpha = 257, 384, 320, 0.75
    g = torch.Generator(device='cuda').manual_seed(7)
    x = torch.randn(m, k, device='cuda', generator=g, dtype=torch.bfloat16)
    w = torch.randn(n, k, device='cuda', generator=g, dtype=torch.bfloat16)
    a = x if lay[0] == 'n' else _mn_major(x)  # [K, M] with a row stride of 264
    b = w if lay[1] == 't' else _mn_major(w)
    c = torch.randn(m, n, device='cuda', dtype=out_dtype) if with_c else None
    d = torch.full((m, n), float('nan'), device='cuda', dtype=out_dtype)
    getattr(deep_gemm, f'bf16_gemm_{lay}')(a, b, d, c, alpha=alpha)
    prod, c_term = x.double() @ w.double().T, (c.double() if with_c else 0)
    assert not torch.isnan(d).any()
    assert float(calc_diff(d.double(), alpha * prod + c_term)) < 1e-5
    # The plain call takes the same operands (our kernel): alpha changes the scale, not the acceptance.
    d1 = torch.full((m, n), float('nan'), device='cuda', dtype=out_dtype)
    getattr(deep_gemm, f'bf16_gemm_{lay}')(a, b, d1, c)
    assert not torch.isnan(d1).any()
    assert float(calc_diff(d1.double(), prod + c_term)) < 1e-5
    if lay[0] == 't':  # unpadded [K, 257] rows: both routes raise the same ValueError before any launch
        errors = []
        for kw in ({}, {'alpha': alpha}):
            with pytest.raises(ValueError, match=f'^bf16_gemm_{lay}: a stride along dim 1 must be a multiple of 16 bytes') as e:
                getattr(deep_gemm, f'bf16_gemm_{lay}')(x.T.contiguous(), b, d1, c, **kw)
            errors.append(str(e.value))
        assert errors[0] == errors[1]


def test_shutdown_then_ops_work_again():
    a = torch.randn(128, 256, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(192, 256, device='cuda', dtype=torch.bfloat16)
    d0 = torch.empty(128, 192, device='cuda', dtype=torch.bfloat16)
    deep_gemm.cublaslt_gemm_nt(a, b, d0)
    deep_gemm.shutdown()
    deep_gemm.shutdown()  # twice: nothing left to release
    d1 = torch.full_like(d0, float('nan'))
    deep_gemm.cublaslt_gemm_nt(a, b, d1)  # a new handle, workspace and plan
    assert torch.equal(d0, d1)
    d2 = torch.full_like(d0, float('nan'))
    deep_gemm.bf16_gemm_nt(a, b, d2, alpha=2.0)  # the cuBLASLt alpha path after a shutdown
    assert float(calc_diff(d2.double(), 2 * d0.double())) < 1e-5


@pytest.mark.parametrize('m,n,ks', [(256, 384, [128, 0, 384, 256]), (96, 160, [256, 128])])
@pytest.mark.parametrize('form', ['deepgemm_T', 'deepgemm', 'ours'])
def test_k_grouped_fp8_scale_forms(m, n, ks, form):
    sum_k, groups = sum(ks), len(ks)
    g = torch.Generator(device='cuda').manual_seed(sum_k + m)
    a_parts, b_parts, sfa_parts, sfb_parts, refs = [], [], [], [], []
    for kg in ks:
        if kg == 0:  # an empty group: nothing in a, b or the scales; d[g] = 0
            refs.append(torch.zeros(m, n, device='cuda', dtype=torch.float64))
            continue
        x = torch.randn(m, kg, device='cuda', generator=g, dtype=torch.bfloat16)
        y = torch.randn(n, kg, device='cuda', generator=g, dtype=torch.bfloat16)
        (xa, xs), (ya, ys) = per_token_cast_to_fp8(x), per_token_cast_to_fp8(y)
        a_parts.append(xa.flatten()), b_parts.append(ya.flatten())
        sfa_parts.append(xs), sfb_parts.append(ys)
        refs.append(dequantize_per_token(xa, xs).double() @ dequantize_per_token(ya, ys).double().T)
    sfa_mk, sfb_nk = torch.cat(sfa_parts, dim=1), torch.cat(sfb_parts, dim=1)  # [M, sum/128], [N, sum/128]
    if form == 'deepgemm_T':  # DeepGEMM's test: .T of a [sum/128, M] buffer
        sfa, sfb = sfa_mk.T.contiguous().T, sfb_nk.T.contiguous().T
    elif form == 'deepgemm':
        sfa, sfb = sfa_mk.contiguous(), sfb_nk.contiguous()
    else:
        sfa, sfb = sfa_mk.T.contiguous(), sfb_nk.T.contiguous()
    d = torch.full((groups, m, n), float('nan'), device='cuda', dtype=torch.float32)
    deep_gemm.k_grouped_fp8_gemm_nt_contiguous((torch.cat(a_parts), sfa), (torch.cat(b_parts), sfb), d, ks,
                                               torch.tensor(ks, dtype=torch.int32, device='cuda'))
    ref = torch.stack(refs)
    assert not torch.isnan(d).any()
    assert float(calc_diff(d.double(), ref)) < 1e-3


def test_grouped_contiguous_under_a_stored_alignment_of_256():
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    deep_gemm.set_mk_alignment_for_contiguous_layout(256)
    try:
        assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
        group_ms, n, k = [100, 300, 0, 256], 256, 512
        rows = []
        for gi, gm in enumerate(group_ms):
            rows += [gi] * gm + [-1] * ((gm + 255) // 256 * 256 - gm)
        layout = torch.tensor(rows, device='cuda', dtype=torch.int32)
        g = torch.Generator(device='cuda').manual_seed(3)
        x = torch.randn(len(rows), k, device='cuda', generator=g, dtype=torch.bfloat16)
        w = torch.randn(len(group_ms), n, k, device='cuda', generator=g, dtype=torch.bfloat16)
        a = per_token_cast_to_fp8(x)
        bs = [per_block_cast_to_fp8(w[i]) for i in range(len(group_ms))]
        b = (torch.stack([t for t, _ in bs]), torch.stack([s for _, s in bs]))
        d = torch.full((len(rows), n), float('nan'), device='cuda', dtype=torch.bfloat16)
        deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout)
        xa = dequantize_per_token(*a).double()
        ref = torch.zeros(len(rows), n, device='cuda', dtype=torch.float64)
        for gi in range(len(group_ms)):
            sel = layout == gi
            ref[sel] = xa[sel] @ dequantize_per_block(*bs[gi]).double().T
        assert not torch.isnan(d).any()  # padding rows are zeros (ensure_zero_padding)
        assert float(calc_diff(d.double(), ref)) < 1e-3
    finally:
        deep_gemm.set_mk_alignment_for_contiguous_layout(old)
