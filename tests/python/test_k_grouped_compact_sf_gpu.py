"""GPU correctness of `k_grouped_fp8_gemm_nt_contiguous`'s per-group scale layouts (docs/compat_2_8.md,
"k_grouped_fp8_gemm_nt_contiguous scale shapes"): ragged group K's (multiples of 16, a partial last 128-K block
per group), compact scales (the default) and padded ones (`use_padded_sf_layout=True`, the alignment knob at 128,
256 or 384), FP32 scales of any value and power-of-two (UE8M0) ones.

Each group's operands are quantized with one scale per row per 128 K (the last block's scale covering its partial
K); the reference is the dequantized operands multiplied in float64. The padding blocks of a padded scale tensor
hold NaN, so a group whose scales are read from the wrong offset fails; each group's data is followed by the next
group's, scaled large, so a partial block that reads past its group fails. d is poisoned with NaN, or is C (the
op's accumulate-in-place form). Bars: gemm_checks.FP8_INTO_FP32_BARS, group by group. Skipped without a Hopper GPU.
"""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import FP8_INTO_FP32_BARS, assert_gemm_close, scaled_like  # noqa: E402
from deep_gemm.utils import per_token_cast_to_fp8  # noqa: E402


@pytest.fixture
def alignment():
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    yield deep_gemm.set_mk_alignment_for_contiguous_layout
    deep_gemm.set_mk_alignment_for_contiguous_layout(old)


def _quantized(rows, k, gen, ue8m0, scale):
    """x [rows, K] as (fp8 [rows, K], scales [rows, ceil(K/128)], dequantized float64 [rows, K])."""
    x = torch.randn((rows, k), device='cuda', dtype=torch.bfloat16, generator=gen) * scale
    x_fp8, sf = per_token_cast_to_fp8(x, use_ue8m0=ue8m0)
    deq = x_fp8.double() * sf.double().repeat_interleave(128, dim=1)[:, :k]
    return x_fp8, sf.float(), deq


def _run(m, n, ks, *, padded, align, ue8m0, c_mode, seed, deepgemm_form=False):
    gen = torch.Generator(device='cuda').manual_seed(seed)
    a_parts, b_parts, sfa_parts, sfb_parts = [], [], [], []
    ref = torch.zeros((len(ks), m, n), device='cuda', dtype=torch.float64)
    for g, k in enumerate(ks):
        own = math.ceil(k / 128)
        blocks = math.ceil(math.ceil(k / align) * align / 128) if padded else own
        if k > 0:
            scale = 1.0 if g % 2 == 0 else 64.0  # neighbours differ in size: reading the next group's K shows
            a, sfa, a_deq = _quantized(m, k, gen, ue8m0, scale)
            b, sfb, b_deq = _quantized(n, k, gen, ue8m0, scale)
            ref[g] = a_deq @ b_deq.t()
            a_parts.append(a.flatten())
            b_parts.append(b.flatten())
        else:
            sfa, sfb = torch.empty((m, 0), device='cuda'), torch.empty((n, 0), device='cuda')
        nan = float('nan')  # padding blocks: never read
        sfa_parts.append(torch.cat([sfa.t(), torch.full((blocks - own, m), nan, device='cuda')]))
        sfb_parts.append(torch.cat([sfb.t(), torch.full((blocks - own, n), nan, device='cuda')]))
    fp8 = torch.float8_e4m3fn
    a = torch.cat(a_parts) if a_parts else torch.empty(0, device='cuda', dtype=fp8)
    b = torch.cat(b_parts) if b_parts else torch.empty(0, device='cuda', dtype=fp8)
    sfa, sfb = torch.cat(sfa_parts).contiguous(), torch.cat(sfb_parts).contiguous()  # [S, M], [S, N]
    if deepgemm_form:  # [M, S] as DeepGEMM's tests pass it: the .T view
        sfa, sfb = sfa.T, sfb.T
    c = None
    d = torch.full((len(ks), m, n), float('nan'), device='cuda')
    if c_mode == 'alias':
        c = d = scaled_like(ref, gen)
        ref = ref + c.double()
    kwargs = dict(use_padded_sf_layout=True) if padded else {}
    deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, torch.tensor(ks, dtype=torch.int32, device='cuda'),
                                                c=c, **kwargs)
    torch.cuda.synchronize()
    return d, ref


def _check(d, ref, what):
    for g in range(d.shape[0]):
        assert_gemm_close(d[g], ref[g], f'{what} group {g}', **FP8_INTO_FP32_BARS)


RAGGED = [
    (256, 384, [96, 0, 272, 128, 16, 1040]),   # partial last blocks, an empty group, a 16-K group
    (130, 200, [512, 48, 0, 336]),             # M, N not block multiples
    # 40 groups: two launches, the second one's scales starting after the first 32 groups' blocks.
    (96, 80, [16 * ((5 * g) % 23) for g in range(40)]),
]


@pytest.mark.parametrize('c_mode', [None, 'alias'])
@pytest.mark.parametrize('ue8m0', [False, True])
@pytest.mark.parametrize('m,n,ks', RAGGED)
def test_compact(m, n, ks, ue8m0, c_mode):
    d, ref = _run(m, n, ks, padded=False, align=128, ue8m0=ue8m0, c_mode=c_mode, seed=m + n + len(ks))
    _check(d, ref, f'compact {m}x{n} ks={ks} ue8m0={ue8m0} c={c_mode}')


@pytest.mark.parametrize('align', [128, 256, 384])
@pytest.mark.parametrize('ue8m0', [False, True])
@pytest.mark.parametrize('m,n,ks', RAGGED + [(192, 256, [128, 256, 0, 384, 640])])
def test_padded(m, n, ks, ue8m0, align, alignment):
    alignment(align)
    d, ref = _run(m, n, ks, padded=True, align=align, ue8m0=ue8m0, c_mode=None, seed=m + n + align, deepgemm_form=True)
    _check(d, ref, f'padded({align}) {m}x{n} ks={ks} ue8m0={ue8m0}')


def test_deepgemm_261_calls_unchanged(alignment):
    """Group K's multiples of 128, scales [M, sum(ks)/128] (DeepGEMM 2.6.1's call): the default call and the padded
    layout at alignment 128 run the same kernel on the same tensors and give bitwise the same d."""
    ks = [256, 0, 384, 128]
    alignment(128)
    d_default, _ = _run(128, 256, ks, padded=False, align=128, ue8m0=False, c_mode=None, seed=7)
    d_padded, ref = _run(128, 256, ks, padded=True, align=128, ue8m0=False, c_mode=None, seed=7)
    assert torch.equal(d_default, d_padded)
    _check(d_padded, ref, '2.6.1 form')
