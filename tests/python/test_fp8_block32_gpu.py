"""GPU correctness of the FP8 1D2D GEMM with block-32 scales (recipe (1, 32, 32): A per row per 32 K, B per 32x32
block; docs/kernels/sm90_fp8_gemm_1d2d.md, "Block-32 scales").

Fresh random inputs per shape whose magnitudes change from one 32-K block (and 32x32 block of B) to the next
(block32_reference.py), output poisoned with NaN before every call, reference = the float64 product of the
dequantized operands; gemm_checks.assert_gemm_close (no NaN, calc_diff < 1e-5, every 128x128 tile within 2^-7 of
max|ref|), and repeated runs bitwise identical. Skipped without a Hopper GPU.
"""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from block32_reference import make_inputs, reference  # noqa: E402
from gemm_checks import assert_gemm_close, scaled_like  # noqa: E402

BLOCK32 = dict(recipe=(1, 32, 32))


def _run(a_fp8, sfa, b_fp8, sfb, layout='nt', d=None, **kwargs):
    """fp8_gemm_<layout> into a NaN-filled d (the t / n operands and their scales passed as transposed views)."""
    m, n = a_fp8.shape[0], b_fp8.shape[0]
    if d is None:
        d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    a = (a_fp8.t(), sfa.t()) if layout[0] == 't' else (a_fp8, sfa)
    b = (b_fp8.t(), sfb.t()) if layout[1] == 'n' else (b_fp8, sfb)
    getattr(deep_gemm, f'fp8_gemm_{layout}')(a, b, d, **{**BLOCK32, **kwargs})
    torch.cuda.synchronize()
    return d


def _check(m, n, k, seed=0, layout='nt', **kwargs):
    a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, seed)
    ref = reference(a_fp8, sfa, b_fp8, sfb)
    d = _run(a_fp8, sfa, b_fp8, sfb, layout, **kwargs)
    assert_gemm_close(d, ref, f'block-32 {layout} {m}x{n}x{k} {kwargs}')
    d2 = _run(a_fp8, sfa, b_fp8, sfb, layout, **kwargs)
    assert torch.equal(d, d2), f'{m}x{n}x{k}: repeated runs differ'


# The shapes (M 128 / 1024 / 4096 x DeepSeek-like N x K), one row, N multiples of 32 that no tile width
# divides (2080, 4160, 96), N not a multiple of 32 (40, 100: the last B-scale row covers a partial slice), K not a
# multiple of 128 (160, 1552) and not of 32 (48, 400: a partial last 32-K step), a single 32-K step (32).
_SHAPES = [(m, n, k) for m in (128, 1024, 4096) for n, k in ((2112, 7168), (24576, 1536), (7168, 2048), (4096, 7168))]
_SHAPES += [(1, 2112, 7168), (1, 40, 32), (100, 96, 160), (257, 2080, 1552), (1000, 4160, 400), (77, 100, 48),
            (300, 7168, 512), (4096, 2080, 7168)]


@pytest.mark.parametrize('m,n,k', _SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _SHAPES])
def test_block32_nt(m, n, k):
    _check(m, n, k, seed=m * 7 + n * 13 + k)


@pytest.mark.parametrize('layout', ['nn', 'tn', 'tt'])
def test_block32_other_layouts(layout):
    for m, n, k in ((256, 2112, 1536), (100, 96, 400)):
        _check(m, n, k, seed=3, layout=layout)


@pytest.mark.parametrize('compiled_dims', ['', 'k', 'mnk'])
def test_block32_compiled_dims(compiled_dims):
    for m, n, k in ((100, 2112, 7168), (1000, 576, 416)):
        _check(m, n, k, seed=1, compiled_dims=compiled_dims)


def test_recipe_forms_and_scale_layouts_agree():
    """recipe_a/recipe_b, scales already in the kernel's layout (sfa M-major TMA-aligned; sfb padded rows) or
    to be converted (sfb N-major, sfb at an odd offset, K not a multiple of 128): bitwise the same result."""
    for m, n, k in ((1000, 2112, 7168), (300, 576, 1552)):
        a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, 7)
        base = _run(a_fp8, sfa, b_fp8, sfb)
        assert_gemm_close(base, reference(a_fp8, sfa, b_fp8, sfb), f'{m}x{n}x{k}')
        assert torch.equal(_run(a_fp8, sfa, b_fp8, sfb, recipe=None, recipe_a=(1, 32), recipe_b=(32, 32)), base)
        sfa_mn = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
        assert torch.equal(_run(a_fp8, sfa_mn, b_fp8, sfb), base)
        sfb_n_major = sfb.t().contiguous().t()
        assert torch.equal(_run(a_fp8, sfa, b_fp8, sfb_n_major), base)
        storage = torch.empty(sfb.numel() + 1, device='cuda')
        sfb_odd = storage[1:].view_as(sfb).copy_(sfb)  # 4-byte aligned only
        assert torch.equal(_run(a_fp8, sfa, b_fp8, sfb_odd), base)
        sfb_padded = torch.full((sfb.shape[0], (sfb.shape[1] + 3) // 4 * 4), float('nan'), device='cuda')
        sfb_padded[:, :sfb.shape[1]] = sfb  # the kernel's row length, but NaN where it reads past K: copied
        assert torch.equal(_run(a_fp8, sfa, b_fp8, sfb_padded[:, :sfb.shape[1]]), base)


def test_each_scale_is_its_own():
    """One A scale (row 5, 32-K step 3) and one B scale (slice 2, step 6) doubled: exactly the entries they touch
    change, by the product of that step alone."""
    m, n, k = 128, 256, 512
    a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, 11)
    base = _run(a_fp8, sfa, b_fp8, sfb)
    sfa2, sfb2 = sfa.clone(), sfb.clone()
    sfa2[5, 3] *= 2
    sfb2[2, 6] *= 2
    d = _run(a_fp8, sfa2, b_fp8, sfb2)
    ref = reference(a_fp8, sfa2, b_fp8, sfb2)
    assert_gemm_close(d, ref, 'one scale doubled')
    rows, cols = (d != base).nonzero().t().tolist()
    touched = [r == 5 or 64 <= c < 96 for r, c in zip(rows, cols)]
    assert all(touched), 'an entry outside row 5 and columns 64..95 changed'
    assert 5 in rows and any(64 <= c < 96 and r != 5 for r, c in zip(rows, cols))


def test_block32_with_c():
    """D = C + A @ B^T in the epilogue: a float32 C, and a bfloat16 C that is D (accumulate in place)."""
    m, n, k = 300, 2080, 1536
    a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, 13)
    ref = reference(a_fp8, sfa, b_fp8, sfb)
    c = scaled_like(ref.float())
    d = _run(a_fp8, sfa, b_fp8, sfb, c=c)
    assert_gemm_close(d, ref + c.double(), 'C float32')
    d = c.to(torch.bfloat16)
    expected = ref + d.double()
    _run(a_fp8, sfa, b_fp8, sfb, d=d, c=d)
    assert_gemm_close(d, expected, 'C is D')


def test_block32_strided_and_unaligned_d():
    """a, b and d column slices of wider tensors; a D whose rows TMA cannot store (direct-store epilogue)."""
    m, n, k = 300, 1000, 1024
    a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, 17)
    a_wide = torch.empty((m, k + 256), device='cuda', dtype=a_fp8.dtype)
    b_wide = torch.empty((n, k + 128), device='cuda', dtype=b_fp8.dtype)
    a_wide[:, :k], b_wide[:, :k] = a_fp8, b_fp8
    d_wide = torch.full((m, n + 3), float('nan'), device='cuda', dtype=torch.bfloat16)
    _run(a_wide[:, :k], sfa, b_wide[:, :k], sfb, d=d_wide[:, :n])
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    assert_gemm_close(d_wide[:, :n], reference(a_fp8, sfa, b_fp8, sfb), 'strided, direct store')


# Kernel variants the model may not pick, forced through DG_FP8_GEMM_CONFIG ("block_m,block_n,stages,pipelined,
# multicast[,group_n,split_k]"); pipelined 1 = the two scratch accumulators taking turns per 32-K step. One and two
# math warpgroups with either promotion, 192-row tiles (three warpgroups) with either, 256-row tiles (two waves per
# warpgroup), every BLOCK_N from 32 to 192, B and A multicast, split-K.
_FORCED = ['128,128,0,0,0', '128,128,0,1,0', '64,128,0,1,0', '64,64,0,0,0', '64,32,0,1,2', '128,96,0,1,1',
           '128,160,0,0,2', '128,192,0,0,1', '192,128,0,0,0', '192,64,0,1,1', '256,128,0,0,0', '256,64,0,0,2',
           '256,96,3,0,1', '128,32,0,1,0', '64,32,0,1,0,8,4', '128,64,0,0,0,8,3']
_FORCED_SHAPES = [(1000, 2112, 1536), (129, 4160, 400), (257, 576, 8320)]


@pytest.mark.parametrize('config', _FORCED)
@pytest.mark.parametrize('m,n,k', _FORCED_SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _FORCED_SHAPES])
def test_block32_forced_config(forced_config, config, m, n, k):
    forced_config(config)
    _check(m, n, k, seed=m + n + k, compiled_dims='')


def test_block32_many_tiles_per_cta(forced_config):
    """Few SMs: every CTA runs many tiles (the B-scale rows and the slot ring carry across tiles)."""
    old = deep_gemm.get_num_sms()
    try:
        deep_gemm.set_num_sms(6)
        for config in ('', '256,128,0,0,2', '128,128,0,1,0'):
            forced_config(config)
            _check(1000, 1100, 4112, seed=19, compiled_dims='')
    finally:
        deep_gemm.set_num_sms(old)


def test_block32_forced_block_n_must_be_whole_slices(forced_config):
    forced_config('128,112,0,0,0')
    a_fp8, sfa, b_fp8, sfb = make_inputs(128, 256, 256, 23)
    with pytest.raises(RuntimeError, match=r'block_n must be a multiple of 32 with block-32 scales'):
        _run(a_fp8, sfa, b_fp8, sfb)
