"""DeepGEMM-compatible arguments and helpers on CPU: recipe_a/recipe_b, the nn m-grouped forms, the
ensure_zero_padding / use_psum_layout arguments, the UE8M0 and FP4 helpers (bitwise against plain
reference loops) and the testing utilities."""

import math
import os
import struct

import pytest
import torch

import deep_gemm
from deep_gemm._compat import _resolve_recipe
from deep_gemm.testing import assert_bitwise_equal, ignore_env, test_filter
from deep_gemm.utils import (cast_back_from_fp4, ceil_to_ue8m0, get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
                             get_mn_major_tma_aligned_packed_ue8m0_tensor, pack_ue8m0_to_int, per_block_cast_to_fp8,
                             per_channel_cast_to_fp8, per_custom_dims_cast_to_fp8, per_token_cast_to_fp4, per_token_cast_to_fp8,
                             transpose_packed_fp4, unpack_ue8m0_from_int)

from op_cases import CASES_BY_NAME, FP8, BF16, F32, I32

# ---- recipe_a / recipe_b -------------------------------------------------------------------------------


def test_recipe_a_b_define_the_recipe():
    case = CASES_BY_NAME['fp8_gemm_nt']
    (a, b, d), _, _ = case.build('meta')
    deep_gemm.fp8_gemm_nt(a, b, d, recipe_a=(1, 128), recipe_b=(128, 128))  # = (1, 128, 128): valid
    deep_gemm.fp8_gemm_nt(a, b, d, None, (1, 128, 128), (1, 128), (128, 128))  # agreeing recipe is fine
    # (1, 1, 128) is the 1D1D recipe, which needs a float32 d: the error shows where the recipe landed.
    with pytest.raises(TypeError, match='d'):
        deep_gemm.fp8_gemm_nt(a, b, d, recipe_a=(1, 128), recipe_b=(1, 128))


@pytest.mark.parametrize('kwargs,message', [
    (dict(recipe=(1, 128, 128), recipe_a=(1, 128), recipe_b=(1, 128)), r'recipe \(1, 128, 128\) conflicts with recipe_a/recipe_b'),
    (dict(recipe_a=(1, 128)), 'recipe_a and recipe_b must be given together'),
    (dict(recipe_b=(128, 128)), 'recipe_a and recipe_b must be given together'),
    (dict(recipe_a=(1, 128), recipe_b=(128, 64)), 'recipe_a and recipe_b must have the same k granularity'),
])
def test_recipe_a_b_conflicts(kwargs, message):
    case = CASES_BY_NAME['fp8_gemm_nt']
    (a, b, d), _, _ = case.build('meta')
    with pytest.raises(ValueError, match=f'^fp8_gemm_nt: {message}'):
        deep_gemm.fp8_gemm_nt(a, b, d, **kwargs)
    # The traced path (torch.compile) applies the same rule in Python.
    with pytest.raises(ValueError, match=f'^fp8_gemm_nt: {message}'):
        _resolve_recipe('fp8_gemm_nt', kwargs.get('recipe'), kwargs.get('recipe_a'), kwargs.get('recipe_b'))


def test_recipe_a_b_must_be_pairs():
    case = CASES_BY_NAME['fp8_gemm_nt']
    (a, b, d), _, _ = case.build('meta')
    with pytest.raises(TypeError, match='^fp8_gemm_nt: recipe_a must be None or a pair of ints'):
        deep_gemm.fp8_gemm_nt(a, b, d, recipe_a=(1, 1, 128), recipe_b=(128, 128))
    assert _resolve_recipe('x', None, (1, 128), (128, 128)) == [1, 128, 128]
    assert _resolve_recipe('x', (1, 128, 128), None, None) == [1, 128, 128]


def test_recipe_a_b_on_grouped_ops():
    (a, b, d, layout), _, _ = CASES_BY_NAME['m_grouped_fp8_gemm_nt_contiguous'].build('meta')
    deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout, None, (1, 128), (128, 128), 'nk')
    with pytest.raises(ValueError, match='conflicts'):
        deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout, (1, 128, 128), (1, 128), (1, 128))
    (a, b, d, masked_m, expected_m), _, _ = CASES_BY_NAME['m_grouped_fp8_gemm_nt_masked'].build('meta')
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m, recipe_a=(1, 128), recipe_b=(128, 128))


def test_positional_compiled_dims_lands_in_its_slot():
    (a, b, d), _, _ = CASES_BY_NAME['fp8_gemm_nt'].build('meta')
    deep_gemm.fp8_gemm_nt(a, b, d, None, None, None, None, 'k')
    with pytest.raises(ValueError, match='compiled_dims'):
        deep_gemm.fp8_gemm_nt(a, b, d, None, None, None, None, 'x')


# ---- m-grouped contiguous: the nn forms and the new arguments ------------------------------------------


def test_m_grouped_nn_contiguous_validate_on_meta():
    G, M, N, K = 2, 256, 192, 512
    a = torch.empty(M, K, dtype=BF16, device='meta')
    d = torch.empty(M, N, dtype=BF16, device='meta')
    layout = torch.empty(M, dtype=I32, device='meta')
    deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a, torch.empty(G, K, N, dtype=BF16, device='meta'), d, layout)  # N-major B
    deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a, torch.empty(G, N, K, dtype=BF16, device='meta').transpose(1, 2), d, layout)
    with pytest.raises(ValueError, match='K'):
        deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a, torch.empty(G, N, K, dtype=BF16, device='meta'), d, layout)
    a8 = (torch.empty(M, K, dtype=FP8, device='meta'), torch.empty(M, K // 128, dtype=F32, device='meta'))
    b8 = (torch.empty(G, N, K, dtype=FP8, device='meta').transpose(1, 2),
          torch.empty(G, math.ceil(N / 128), K // 128, dtype=F32, device='meta').transpose(1, 2))
    deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, b8, d, layout)
    with pytest.raises(TypeError, match='^m_grouped_fp8_gemm_nn_contiguous: b must be a'):
        deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, b8[0], d, layout)


@pytest.mark.parametrize('name', ['m_grouped_fp8_gemm_nt_contiguous', 'm_grouped_bf16_gemm_nt_contiguous'])
def test_ensure_zero_padding_and_expected_m_arguments(name):
    case = CASES_BY_NAME[name]
    args, _, _ = case.build('meta')
    fn = getattr(deep_gemm, name)
    fn(*args, ensure_zero_padding=False)
    fn(*args, use_psum_layout=False, expected_m_for_psum_layout=64)
    with pytest.raises(ValueError, match=f'^{name}: expected_m_for_psum_layout must be positive or None; got 0'):
        fn(*args, expected_m_for_psum_layout=0)


@pytest.mark.parametrize('name', ['k_grouped_fp8_gemm_nt_contiguous', 'k_grouped_bf16_gemm_tn_contiguous'])
def test_k_grouped_psum_layout_not_implemented(name):
    args, kwargs, _ = CASES_BY_NAME[name].build('meta')
    fn = getattr(deep_gemm, name)
    fn(*args, **kwargs, use_psum_layout=False)
    with pytest.raises(NotImplementedError, match=f'^{name}: use_psum_layout=True is not implemented'):
        fn(*args, **kwargs, use_psum_layout=True)


# ---- UE8M0 packing ---------------------------------------------------------------------------------------


def _exponent_byte(v: float) -> int:
    return (struct.unpack('<I', struct.pack('<f', v))[0] >> 23) & 0xFF


def _pack_reference(sf: torch.Tensor) -> torch.Tensor:
    rows = sf.reshape(-1, sf.shape[-1]).tolist()
    width = math.ceil(sf.shape[-1] / 4)
    out = []
    for row in rows:
        words = []
        for j in range(width):
            word = 0
            for i in range(4):
                if 4 * j + i < len(row):
                    word |= _exponent_byte(row[4 * j + i]) << (8 * i)
            words.append(word - (1 << 32) if word >= 1 << 31 else word)
        out.append(words)
    return torch.tensor(out, dtype=torch.int32).reshape(*sf.shape[:-1], width)


def _pow2(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.exp2(torch.randint(-30, 30, shape, generator=g).float())


@pytest.mark.parametrize('shape', [(5, 8), (3, 7), (2, 3, 9), (1, 1)])
def test_pack_unpack_ue8m0(shape):
    sf = _pow2(shape, sum(shape))
    packed = pack_ue8m0_to_int(sf)
    assert_bitwise_equal(packed, _pack_reference(sf), 'pack')
    assert_bitwise_equal(unpack_ue8m0_from_int(packed)[..., :shape[-1]], sf, 'round trip')
    assert torch.all(unpack_ue8m0_from_int(packed)[..., shape[-1]:] == 0)


def test_pack_ue8m0_rejects_non_powers_of_two():
    with pytest.raises(ValueError, match='powers of two'):
        pack_ue8m0_to_int(torch.tensor([1.5, 2.0]))
    with pytest.raises(TypeError, match='float32'):
        pack_ue8m0_to_int(torch.tensor([1, 2]))
    assert torch.equal(ceil_to_ue8m0(torch.tensor([0.3, 1.0, 5.0])), torch.tensor([0.5, 1.0, 8.0]))


@pytest.mark.parametrize('shape', [(130, 8), (2, 33, 5)])
def test_mn_major_packed_ue8m0_layout(shape):
    sf = _pow2(shape, 7)
    out = get_mn_major_tma_aligned_packed_ue8m0_tensor(sf)
    mn, width = shape[-2], math.ceil(shape[-1] / 4)
    assert out.shape == (*shape[:-2], mn, width) and out.dtype == torch.int32
    assert out.stride(-2) == 1 and out.stride(-1) == (mn + 3) // 4 * 4
    assert_bitwise_equal(out.contiguous(), _pack_reference(sf))
    with pytest.raises(NotImplementedError, match='psum_layout'):
        get_mn_major_tma_aligned_packed_ue8m0_tensor(sf, psum_layout=torch.zeros(1))


def test_k_grouped_packed_ue8m0():
    ks, gran_k, mn = [256, 0, 640, 128], 128, 10
    blocks = [k // gran_k for k in ks]
    sf = _pow2((sum(blocks), mn), 3)
    out = get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, torch.tensor(ks, dtype=I32), ks, gran_k, 128)
    parts, start = [], 0
    for nb in blocks:
        parts.append(_pack_reference(sf[start:start + nb].t().contiguous()).t() if nb else torch.zeros(0, mn, dtype=torch.int32))
        start += nb
    assert_bitwise_equal(out.contiguous(), torch.cat(parts).contiguous())
    assert out.stride() == (12, 1)
    with pytest.raises(ValueError, match=r'ks_cpu\[1\] must be non-negative; got -128'):
        get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, None, [256, -128, 640, 128], gran_k, 128)
    with pytest.raises(NotImplementedError):
        get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, None, ks, gran_k, 128, use_psum_layout=True)


# ---- FP8 casts with gran_k ---------------------------------------------------------------------------------


def _cast_reference(x: torch.Tensor, block_rows: int, block_cols: int, use_ue8m0: bool):
    """Loops over blocks: amax (floored at 1e-4) / 448, rounded up to a power of two with use_ue8m0."""
    rows, cols = x.shape
    nr, nc = math.ceil(rows / block_rows), math.ceil(cols / block_cols)
    sf = torch.empty(nr, nc)
    q = torch.empty(rows, cols, dtype=FP8)
    for i in range(nr):
        for j in range(nc):
            blk = x[i * block_rows:(i + 1) * block_rows, j * block_cols:(j + 1) * block_cols].float()
            s = blk.abs().max().clamp(min=1e-4) / 448.0
            if use_ue8m0:
                s = torch.exp2(torch.ceil(torch.log2(s)))
            sf[i, j] = s
            q[i * block_rows:(i + 1) * block_rows, j * block_cols:(j + 1) * block_cols] = (blk / s).to(FP8)
    return q, sf


@pytest.mark.parametrize('gran_k', [32, 64, 128])
@pytest.mark.parametrize('use_ue8m0', [False, True])
def test_fp8_casts_with_gran_k(gran_k, use_ue8m0):
    x = torch.randn(37, 200, generator=torch.Generator().manual_seed(gran_k)) * 3
    q, sf = per_token_cast_to_fp8(x, use_ue8m0, gran_k)
    rq, rsf = _cast_reference(x, 1, gran_k, use_ue8m0)
    assert_bitwise_equal(q, rq, 'per_token q')
    assert_bitwise_equal(sf, rsf, 'per_token sf')
    q, sf = per_block_cast_to_fp8(x, use_ue8m0, gran_k)
    rq, rsf = _cast_reference(x, 128, gran_k, use_ue8m0)
    assert_bitwise_equal(q, rq, 'per_block q')
    assert_bitwise_equal(sf, rsf, 'per_block sf')
    q, sf = per_channel_cast_to_fp8(x, use_ue8m0, gran_k)
    rq, rsf = _cast_reference(x.t(), 1, gran_k, use_ue8m0)
    assert_bitwise_equal(q, rq.t().contiguous(), 'per_channel q')
    assert_bitwise_equal(sf, rsf.t().contiguous(), 'per_channel sf')
    if use_ue8m0:
        q2, packed = per_token_cast_to_fp8(x, True, gran_k, use_packed_ue8m0=True)
        assert_bitwise_equal(q2, per_token_cast_to_fp8(x, True, gran_k)[0])
        assert_bitwise_equal(packed, _pack_reference(per_token_cast_to_fp8(x, True, gran_k)[1]))


def test_fp8_cast_argument_errors():
    with pytest.raises(ValueError, match='use_packed_ue8m0=True needs use_ue8m0=True'):
        per_token_cast_to_fp8(torch.randn(4, 128), False, 128, True)
    with pytest.raises(ValueError, match='gran_k must be a positive int'):
        per_block_cast_to_fp8(torch.randn(4, 128), False, 0)


def test_per_custom_dims_cast():
    x = torch.randn(6, 5, 7, generator=torch.Generator().manual_seed(1))
    q, sf = per_custom_dims_cast_to_fp8(x, (1,), False)
    assert sf.shape == (5,)
    for c in range(5):
        s = x[:, c].abs().max().clamp(min=1e-4) / 448.0
        assert_bitwise_equal(sf[c:c + 1], s.reshape(1))
        assert_bitwise_equal(q[:, c], (x[:, c] / s).to(FP8))
    q, sf = per_custom_dims_cast_to_fp8(x, (0, 2), True)
    assert sf.shape == (6, 7) and bool(((sf.view(torch.int32) & 0x7FFFFF) == 0).all())


# ---- FP4 --------------------------------------------------------------------------------------------------

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_fp4_round_trip_exact_on_representable_values():
    g = torch.Generator().manual_seed(5)
    codes = torch.randint(0, 16, (8, 256), generator=g)
    values = torch.tensor([(-1 if c >= 8 else 1) * E2M1[c % 8] for c in codes.flatten().tolist()]).view(8, 256)
    values[:, ::128] = 6.0  # every block's amax is 6, so its scale is exactly 1
    packed, sf = per_token_cast_to_fp4(values, False)
    assert packed.dtype == torch.uint8 and packed.shape == (8, 128)
    assert torch.all(sf == 1.0)
    assert torch.equal(cast_back_from_fp4(packed, sf), values)
    # nibble order: element 2j in the low nibble of byte j
    low = packed[0, 0].item() & 0xF
    assert (-1 if low >= 8 else 1) * E2M1[low % 8] == values[0, 0].item()


def test_fp4_quantisation_error_and_packed_scales():
    x = torch.randn(16, 256, generator=torch.Generator().manual_seed(2))
    packed, sf = per_token_cast_to_fp4(x, True, 64, use_packed_ue8m0=True)
    back = cast_back_from_fp4(packed, sf, 64, use_packed_ue8m0=True)
    assert ((back - x).abs() <= x.abs().amax() / 4).all()  # half the largest E2M1 gap at scale amax/6
    assert deep_gemm.testing.calc_diff(back, x) < 0.05


def test_transpose_packed_fp4():
    x = torch.randn(6, 10, generator=torch.Generator().manual_seed(3))
    packed, sf = per_token_cast_to_fp4(x, False, 16)
    values = cast_back_from_fp4(packed, torch.ones_like(sf), 16)
    t = transpose_packed_fp4(packed)
    assert t.shape == (10, 3)
    assert torch.equal(cast_back_from_fp4(t, torch.ones(10, 1), 16), values.t())
    with pytest.raises(ValueError, match='even number of rows'):
        transpose_packed_fp4(packed[:5])


# ---- testing utilities ---------------------------------------------------------------------------------------


def test_testing_helpers():
    calls = []
    assert test_filter(lambda: False)(lambda: calls.append(1))() is None and calls == []
    test_filter(lambda: True)(lambda: calls.append(2))()
    assert calls == [2]
    os.environ['DG_TEST_COMPAT_VAR'] = 'x'
    try:
        assert ignore_env('DG_TEST_COMPAT_VAR', lambda: True)(lambda: os.getenv('DG_TEST_COMPAT_VAR'))() is None
        assert ignore_env('DG_TEST_COMPAT_VAR', lambda: False)(lambda: os.getenv('DG_TEST_COMPAT_VAR'))() == 'x'
        assert os.environ['DG_TEST_COMPAT_VAR'] == 'x'
    finally:
        del os.environ['DG_TEST_COMPAT_VAR']
    assert_bitwise_equal(torch.tensor([1.0, float('nan')]), torch.tensor([1.0, float('nan')]))
    with pytest.raises(AssertionError, match='lbl: 2 of 8 bytes differ'):
        assert_bitwise_equal(torch.tensor([1.0, 0.0]), torch.tensor([1.0, -1.5]), 'lbl')
    with pytest.raises(AssertionError, match='dtypes differ'):
        assert_bitwise_equal(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
