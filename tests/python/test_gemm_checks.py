"""The GPU tests' output checks (gemm_checks.py) on CPU: a correct result passes, and each bug the old
whole-output calc_diff < 1e-3 could not see fails: a dropped or doubled C, one zeroed 128x128 tile, one
group computed with another group's weights."""
import pytest
import torch

from deep_gemm.testing import calc_diff
from gemm_checks import (DIFF_BAR, FP8_INTO_FP32_BARS, assert_gemm_close, assert_groups_close, assert_tiles_close, scaled_like,
                         tile_max_errors)


def _product(m, n, k, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g)
    return a.double() @ b.double().t(), g


def test_correct_bf16_and_fp32_outputs_pass():
    ref, _ = _product(300, 520, 1152, 1)
    out = ref.to(torch.bfloat16)  # what a correct kernel with BF16 output can at best give
    assert float(calc_diff(out.double(), ref)) < DIFF_BAR[torch.bfloat16] / 5  # ~1.4e-6: the bar is 5x+ the rounding
    assert_gemm_close(out, ref, 'bf16')
    assert_gemm_close(ref.float(), ref, 'fp32')
    assert_gemm_close(torch.empty(0, 8, dtype=torch.bfloat16), torch.empty(0, 8, dtype=torch.float64), 'empty')


def test_nan_fails():
    ref, _ = _product(64, 64, 128, 2)
    out = ref.to(torch.bfloat16)
    out[5, 7] = float('nan')
    with pytest.raises(AssertionError, match='1 NaN'):
        assert_gemm_close(out, ref, 'nan')


@pytest.mark.parametrize('drop_or_double', [0.0, 2.0])
def test_dropped_or_doubled_c_fails(drop_or_double):
    product, g = _product(256, 384, 1152, 3)
    # The old tests: C of spread 1 beside a product of spread sqrt(K) ~ 34; the whole-output 1e-3 bar
    # cannot see C dropped or doubled.
    old_c = torch.randn(product.shape, generator=g, dtype=torch.float64)
    wrong = (product + drop_or_double * old_c).to(torch.bfloat16)
    assert float(calc_diff(wrong.double(), product + old_c)) < 1e-3
    # C with the product's spread: dropping or doubling it fails, keeping it passes.
    c = scaled_like(product, g).double()
    assert_gemm_close((product + c).to(torch.bfloat16), product + c, 'c kept')
    with pytest.raises(AssertionError, match='calc_diff'):
        assert_gemm_close((product + drop_or_double * c).to(torch.bfloat16), product + c, 'c dropped or doubled')


def test_one_zeroed_tile_fails_where_whole_output_calc_diff_passes():
    g = torch.Generator().manual_seed(4)
    ref = torch.randn(4096, 7168, generator=g)  # the shape; a product's values are random like this
    out = ref.to(torch.bfloat16)
    out[1024:1152, 2048:2176] = 0
    assert float(calc_diff(out, ref)) < 1e-3  # the old bar passes it
    with pytest.raises(AssertionError, match=r'tile \(8, 16\) \(rows 1024\.\., columns 2048\.\.\).* 1 of 1792 tiles'):
        assert_tiles_close(out, ref, 2.0 ** -7, 'one zeroed tile')


def test_ragged_last_tile_is_checked():
    ref, _ = _product(200, 300, 256, 5)
    errors = tile_max_errors(ref.float(), ref)
    assert errors.shape == (2, 3)
    out = ref.to(torch.bfloat16)
    out[199, 299] = -out[199, 299] * 3  # one element of the partial corner tile
    with pytest.raises(AssertionError, match=r'tile \(1, 2\)'):
        assert_gemm_close(out, ref, 'corner', diff_bar=1.0)


def test_one_swapped_group_fails_where_whole_output_calc_diff_passes():
    """A 1-row group computed with the next group's weights."""
    g = torch.Generator().manual_seed(6)
    sizes, n, k = [384, 1, 640], 512, 512
    row_group = torch.cat([torch.full((s,), i) for i, s in enumerate(sizes)] + [torch.full((64,), -1)])
    a = torch.randn(row_group.numel(), k, generator=g, dtype=torch.float64)
    w = torch.randn(len(sizes), n, k, generator=g, dtype=torch.float64)
    ref = torch.zeros(row_group.numel(), n, dtype=torch.float64)
    for i in range(len(sizes)):
        ref[row_group == i] = a[row_group == i] @ w[i].t()
    out = ref.to(torch.bfloat16)
    assert_groups_close(out, ref, row_group, 'correct')
    out[row_group == 1] = (a[row_group == 1] @ w[2].t()).to(torch.bfloat16)
    valid = row_group >= 0
    assert float(calc_diff(out[valid].double(), ref[valid])) < 1e-3  # the old single-number check passes it
    with pytest.raises(AssertionError, match=r'group 1 \(1 rows\): calc_diff'):
        assert_groups_close(out, ref, row_group, 'swapped')


def test_3d_output_checked_matrix_by_matrix():
    ref = torch.randn(3, 256, 256, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    out = ref.to(torch.bfloat16)
    out[2, 128:, :128] = 0
    with pytest.raises(AssertionError, match=r'masked \[2\]: tile \(1, 0\)'):
        assert_gemm_close(out, ref, 'masked', diff_bar=1.0)
    out = ref.to(torch.bfloat16)
    out[1] *= 2  # one whole matrix wrong: its own calc_diff sees it
    with pytest.raises(AssertionError, match=r'masked \[1\]: calc_diff'):
        assert_gemm_close(out, ref, 'masked')


def test_fp8_into_fp32_bars_pass_accumulation_noise_and_fail_real_bugs():
    """FP8_INTO_FP32_BARS: noise three times the H100's FP8 accumulation error passes (calc_diff ~7e-8 against
    the measured 3.4e-9 to 8.7e-9), a zeroed tile and one dropped K block of eight fail."""
    g = torch.Generator().manual_seed(11)
    a = torch.randn(256, 1024, generator=g, dtype=torch.float64)
    b = torch.randn(384, 1024, generator=g, dtype=torch.float64)
    ref = a @ b.t()
    noisy = ref + 3 * 1.25e-4 * ref.pow(2).mean().sqrt() * torch.randn(ref.shape, generator=g, dtype=torch.float64)
    assert_gemm_close(noisy.float(), ref, 'fp8 noise', **FP8_INTO_FP32_BARS)
    zeroed = noisy.float().clone()
    zeroed[128:256, 256:384] = 0
    with pytest.raises(AssertionError, match='tile'):
        assert_gemm_close(zeroed, ref, 'zeroed tile', **FP8_INTO_FP32_BARS)
    dropped = ref - a[:, 512:640] @ b[:, 512:640].t()
    with pytest.raises(AssertionError):
        assert_gemm_close(dropped.float(), ref, 'dropped K block', **FP8_INTO_FP32_BARS)
