"""GPU correctness of the SM90 FP8 1D1D GEMM (recipe (1, 1, 128), FP32 out): `fp8_gemm_{nt,nn,tn,tt}` with
`recipe=(1, 1, 128)` and `k_grouped_fp8_gemm_nt_contiguous`.

Fresh random inputs per case; both operands quantized with one scale per row per 128 K; reference = the
dequantized operands multiplied in float64, plus C with the product's spread (so a dropped or doubled C fails);
d poisoned with NaN first (except where c is d); gemm_checks.assert_gemm_close with FP8_INTO_FP32_BARS (the
FP8 tensor cores' accumulation): no NaN, calc_diff < 1e-7 and every 128x128 tile within 2^-10 of max|ref|,
K-grouped outputs group by group. Skipped without a Hopper GPU.
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import FP8_INTO_FP32_BARS, assert_gemm_close, scaled_like  # noqa: E402
from deep_gemm.utils import per_token_cast_to_fp8  # noqa: E402

RECIPE = (1, 1, 128)


def _quantized(rows, k, gen):
    """x [rows, K] as (fp8 [rows, K], scales [rows, ceil(K/128)], dequantized float64 [rows, K])."""
    x = torch.randn((rows, k), device='cuda', dtype=torch.bfloat16, generator=gen)
    x_fp8, sf = per_token_cast_to_fp8(x, use_ue8m0=False)
    deq = x_fp8.double() * sf.double().repeat_interleave(128, dim=1)[:, :k]
    return x_fp8, sf.float(), deq


def _check_diff(d, ref, what):
    assert_gemm_close(d, ref, what, **FP8_INTO_FP32_BARS)


def _dense(layout, m, n, k, c_mode, seed):
    """c_mode: None (no c), 'c' (separate c), 'alias' (c is d)."""
    gen = torch.Generator(device='cuda').manual_seed(seed)
    a, sfa, a_deq = _quantized(m, k, gen)
    b, sfb, b_deq = _quantized(n, k, gen)
    ref = a_deq @ b_deq.t()
    # The t/n variants take the transposed views of the same K-major storage.
    if layout[0] == 't':
        a, sfa = a.t(), sfa.t()
    if layout[1] == 'n':
        b, sfb = b.t(), sfb.t()
    fn = getattr(deep_gemm, f'fp8_gemm_{layout}')
    c = None
    if c_mode is None:
        d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.float32)
    else:
        c = scaled_like(ref, gen)  # as large as the product: a dropped or doubled c fails
        ref = ref + c.double()
        d = c if c_mode == 'alias' else torch.full((m, n), float('nan'), device='cuda', dtype=torch.float32)
    fn((a, sfa), (b, sfb), d, c=c, recipe=RECIPE)
    torch.cuda.synchronize()
    return d, ref


@pytest.mark.parametrize('layout', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('c_mode', [None, 'c', 'alias'])
@pytest.mark.parametrize('m,n,k', [(256, 512, 1024), (129, 200, 400), (1, 64, 128), (77, 1000, 2064)])
def test_dense(layout, c_mode, m, n, k):
    d, ref = _dense(layout, m, n, k, c_mode, seed=m * 7 + n + k)
    _check_diff(d, ref, f'fp8_gemm_{layout} {m}x{n}x{k} c={c_mode}')


@pytest.mark.parametrize('m,n,k', [(4096, 4096, 4096), (7168, 2112, 1024)])
def test_dense_large(m, n, k):
    d, ref = _dense('nt', m, n, k, 'c', seed=1)
    _check_diff(d, ref, f'fp8_gemm_nt {m}x{n}x{k}')


def test_dense_wide_n():
    """N = 129280 (a vocabulary-sized projection): thousands of N tiles over the persistent grid."""
    d, ref = _dense('nt', 128, 129280, 256, None, seed=2)
    _check_diff(d, ref, 'fp8_gemm_nt 128x129280x256')


def test_dense_repeatable():
    d1, _ = _dense('nt', 300, 500, 1536, None, seed=3)
    d2, _ = _dense('nt', 300, 500, 1536, None, seed=3)
    assert torch.equal(d1, d2)


def _k_grouped(m, n, ks, c_mode, seed):
    gen = torch.Generator(device='cuda').manual_seed(seed)
    g = len(ks)
    a_parts, b_parts, sfa_parts, sfb_parts = [], [], [], []
    ref = torch.zeros((g, m, n), device='cuda', dtype=torch.float64)
    for i, kg in enumerate(ks):
        if kg == 0:
            continue
        a, sfa, a_deq = _quantized(m, kg, gen)
        b, sfb, b_deq = _quantized(n, kg, gen)
        ref[i] = a_deq @ b_deq.t()
        a_parts.append(a.flatten())
        b_parts.append(b.flatten())
        sfa_parts.append(sfa.t())  # [K_g / 128, M]
        sfb_parts.append(sfb.t())
    fp8 = torch.float8_e4m3fn
    a = torch.cat(a_parts) if a_parts else torch.empty(0, device='cuda', dtype=fp8)
    b = torch.cat(b_parts) if b_parts else torch.empty(0, device='cuda', dtype=fp8)
    sfa = torch.cat(sfa_parts).contiguous() if sfa_parts else torch.empty((0, m), device='cuda')
    sfb = torch.cat(sfb_parts).contiguous() if sfb_parts else torch.empty((0, n), device='cuda')
    c = None
    if c_mode is None:
        d = torch.full((g, m, n), float('nan'), device='cuda', dtype=torch.float32)
    else:
        c = scaled_like(ref, gen)  # as large as the product: a dropped or doubled c fails
        ref = ref + c.double()
        d = c if c_mode == 'alias' else torch.full((g, m, n), float('nan'), device='cuda', dtype=torch.float32)
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device='cuda')
    deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, ks_tensor, c=c)
    torch.cuda.synchronize()
    return d, ref


@pytest.mark.parametrize('c_mode', [None, 'c', 'alias'])
@pytest.mark.parametrize('m,n,ks', [
    (256, 384, [512]),
    (130, 200, [256, 0, 384, 128]),                        # an empty group, M and N not block multiples
    (512, 1024, [1024, 640, 0, 256, 128, 896, 0, 384]),   # G = 8, two empty groups
    (7, 13, [128, 256, 128, 0]),                           # tiny M, N (scales padded to 4 for TMA)
    # One launch takes 32 groups' tensor maps: 40 groups run as 32 + 8, the second launch's scales starting at
    # the first 32 groups' K; empty groups in both launches, and the last group of each launch non-empty.
    (96, 80, [256 if g in (31, 39) else 128 * ((7 * g) % 3) for g in range(40)]),
])
def test_k_grouped(c_mode, m, n, ks):
    d, ref = _k_grouped(m, n, ks, c_mode, seed=m + n + sum(ks))
    _check_diff(d, ref, f'k_grouped {m}x{n} ks={ks} c={c_mode}')
    for i, kg in enumerate(ks):
        if kg == 0 and c_mode is None:
            assert torch.all(d[i] == 0), f'empty group {i} must be zeros'


# DG_FP8_1D1D_GEMM_CONFIG: tiles wider than the model's 128 columns (up to 176) and a 64-row one, dense and K-grouped;
# the pipelined promotion (two scratch accumulators; odd and even K block counts, an empty group); 2-CTA clusters on
# pairs of M blocks sharing B (333 and 200 rows: an odd number of M blocks, so the last pair has a tile past M); C
# pulled into L2 ahead of the epilogue (both calls have a C: a separate one, and D itself).
@pytest.mark.parametrize('config', ['128,176', '128,160,4', '64,144', '128,144,0,16', '128,128,0,0,1', '64,96,0,0,1',
                                    '128,160,0,0,0,1', '128,128,0,0,1,1', '64,128,0,0,0,1', '128,128,0,0,0,0,1',
                                    '128,128,0,0,1,1,1'])
def test_forced_configs(forced_1d1d_config, config):
    forced_1d1d_config(config)
    d, ref = _dense('nt', 333, 700, 640, 'c', seed=11)
    _check_diff(d, ref, f'fp8_gemm_nt 333x700x640 config={config}')
    d, ref = _k_grouped(200, 530, [384, 0, 256, 640, 128], 'alias', seed=12)
    _check_diff(d, ref, f'k_grouped 200x530 config={config}')


def test_k_grouped_all_empty():
    d, ref = _k_grouped(64, 64, [0, 0], 'c', seed=5)
    assert torch.equal(d, ref.float())


def test_k_grouped_weight_gradient_shape():
    d, ref = _k_grouped(1024, 2048, [1280, 768, 1024, 512], None, seed=6)
    _check_diff(d, ref, 'k_grouped 1024x2048 G=4')
