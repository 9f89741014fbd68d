"""deep_gemm.utils (FP8 casts, integer helpers) and deep_gemm.testing (calc_diff, count_bytes, the timers):
pure PyTorch, checked on CPU (the timers on a GPU)."""

import pytest
import torch

import deep_gemm
from deep_gemm.testing import calc_diff, count_bytes
from deep_gemm.utils import (align, ceil_div, ceil_to_ue8m0, dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8,
                             per_channel_cast_to_fp8, per_token_cast_to_fp8)


def test_integer_helpers():
    assert ceil_div(0, 128) == 0 and ceil_div(1, 128) == 1 and ceil_div(128, 128) == 1 and ceil_div(129, 128) == 2
    assert align(0, 4) == 0 and align(5, 4) == 8 and align(8, 4) == 8
    assert deep_gemm.ceil_div is ceil_div and deep_gemm.align is align


@pytest.mark.parametrize('m,k', [(128, 512), (7, 300), (1, 1), (33, 128)])
@pytest.mark.parametrize('use_ue8m0', [False, True])
def test_per_token_cast_round_trip(m, k, use_ue8m0):
    torch.manual_seed(0)
    x = torch.randn(m, k, dtype=torch.bfloat16) * 3
    x_fp8, sf = per_token_cast_to_fp8(x, use_ue8m0=use_ue8m0)
    assert x_fp8.shape == (m, k) and x_fp8.dtype == torch.float8_e4m3fn and x_fp8.is_contiguous()
    assert sf.shape == (m, ceil_div(k, 128)) and sf.dtype == torch.float32
    assert float(calc_diff(dequantize_per_token(x_fp8, sf), x)) < 1e-3
    if use_ue8m0:
        assert torch.equal(sf, ceil_to_ue8m0(sf))  # powers of two


@pytest.mark.parametrize('n,k', [(256, 512), (300, 200), (1, 1), (129, 129)])
@pytest.mark.parametrize('use_ue8m0', [False, True])
def test_per_block_cast_round_trip(n, k, use_ue8m0):
    torch.manual_seed(1)
    x = torch.randn(n, k, dtype=torch.bfloat16)
    x_fp8, sf = per_block_cast_to_fp8(x, use_ue8m0=use_ue8m0)
    assert x_fp8.shape == (n, k) and x_fp8.dtype == torch.float8_e4m3fn
    assert sf.shape == (ceil_div(n, 128), ceil_div(k, 128)) and sf.is_contiguous()
    assert float(calc_diff(dequantize_per_block(x_fp8, sf), x)) < 1e-3


def test_per_channel_cast_round_trip():
    x = torch.randn(300, 64)
    x_fp8, sf = per_channel_cast_to_fp8(x)
    assert sf.shape == (3, 64)
    ref = x_fp8.float() * sf.repeat_interleave(128, 0)[:300]
    assert float(calc_diff(ref, x)) < 1e-3


def test_cast_scales_are_amax_over_448():
    x = torch.zeros(2, 256)
    x[0, 5] = 448.0 * 2
    x[1, 200] = -7.0
    _, sf = per_token_cast_to_fp8(x)
    assert sf[0, 0] == 2.0 and sf[1, 1] == pytest.approx(7.0 / 448.0)
    assert sf[0, 1] == pytest.approx(1e-4 / 448.0)  # all-zero block: floor, no division by zero


def test_fp8_gemm_reference_accuracy():
    """The FP8 recipe itself (quantize A per token, B per block, multiply) stays within 1e-3 of BF16."""
    torch.manual_seed(2)
    a = torch.randn(64, 512, dtype=torch.bfloat16)
    b = torch.randn(256, 512, dtype=torch.bfloat16)
    a8, sfa = per_token_cast_to_fp8(a)
    b8, sfb = per_block_cast_to_fp8(b)
    ref = a.float() @ b.float().t()
    out = dequantize_per_token(a8, sfa) @ dequantize_per_block(b8, sfb).t()
    assert float(calc_diff(out, ref)) < 1e-3


def test_cast_errors():
    with pytest.raises(ValueError, match='2-D'):
        per_token_cast_to_fp8(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match='2-D'):
        per_block_cast_to_fp8(torch.randn(4))


def test_calc_diff():
    x = torch.randn(100, 100)
    assert float(calc_diff(x, x)) == pytest.approx(0.0, abs=1e-12)
    assert float(calc_diff(x, -x)) == pytest.approx(2.0)
    assert float(calc_diff(x, 2 * x)) == pytest.approx(1 - 4 / 5)
    assert float(calc_diff(torch.zeros(3), torch.zeros(3))) == 0.0
    assert calc_diff(x, x).dtype == torch.float64


def test_count_bytes():
    a = torch.empty(10, 20, dtype=torch.float8_e4m3fn)
    sf = torch.empty(10, 1)
    d = torch.empty(10, 5, dtype=torch.bfloat16)
    assert count_bytes(a) == 200
    assert count_bytes((a, sf), d, None) == 200 + 40 + 100
    with pytest.raises(TypeError):
        count_bytes(3)


def test_bench_rejects_no_runs():
    with pytest.raises(ValueError, match=r'^bench: num_tests must be positive; got 0'):
        deep_gemm.testing.bench(lambda: None, num_tests=0)


@pytest.mark.gpu
def test_bench_and_bench_kineto_time_a_kernel_of_known_length():
    """torch.cuda._sleep spins for a number of cycles: four times the cycles must take clearly longer, and
    both timers must agree on the order of magnitude (each run flushes L2 first: that is not counted)."""
    from deep_gemm.testing import bench, bench_kineto
    short, times = bench(lambda: torch.cuda._sleep(200_000), num_tests=5, return_all=True)
    long = bench(lambda: torch.cuda._sleep(800_000), num_tests=5)
    assert len(times) == 5 and all(t > 0 for t in times)
    assert 2.5 * short < long < 6 * short
    kineto = bench_kineto(lambda: torch.cuda._sleep(200_000), 'spin_kernel', num_tests=5)
    assert 0.5 * short < kineto < 2 * short
    with pytest.raises(RuntimeError, match='no kernel whose name contains'):
        bench_kineto(lambda: torch.cuda._sleep(1000), 'no_such_kernel', num_tests=2)
