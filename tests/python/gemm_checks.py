"""Checks of a GEMM output against its float reference that see local errors, for the GPU tests.

calc_diff over a whole output averages a local error away: one zeroed 128x128 tile of a 4096x7168 output
scores ~3e-4, under the old 1e-3 bar, and so does a 1-row group computed with the wrong expert. These helpers
check each 128x128 tile (its largest error) and each group on its own, with bars set from the output dtype.
They are pure torch (any device); tests/python/test_gemm_checks.py shows on CPU that a dropped or doubled C,
one zeroed tile and one swapped group fail them.

Bars (the reference is built from the same dequantized operands, so only the kernel's own error counts):
- BF16 output: rounding to bfloat16 alone gives calc_diff ~1.4e-6 and an element error up to 2^-9 of its
  value; the bars are calc_diff 1e-5 and, per tile, a largest error of 2^-7 times the largest |ref| of the output.
- FP32 output (the 1D1D kernel): a correct result scored calc_diff ~3e-16 on a GPU (FP32
  accumulation, reference in float64); the bars are 1e-12 and, per tile, 1e-5 times the largest |ref|.
"""
import torch

from deep_gemm.testing import calc_diff

TILE = 128
DIFF_BAR = {torch.bfloat16: 1e-5, torch.float32: 1e-12}
TILE_BAR = {torch.bfloat16: 2.0 ** -7, torch.float32: 1e-5}
# FP8 operands into an FP32 output. The FP8 tensor cores add products with fewer mantissa bits than FP32, so the
# float32 bars above (an exact FP32 accumulation's) cannot hold: on an H100 the FP8 1D1D kernel gave calc_diff
# 3.4e-9 to 8.7e-9 against the float64 product of the dequantized operands (element errors ~4e-3 on values of
# RMS 32, K 1024). A zeroed tile (error = the tile's max |ref|) or a dropped K block still lands far above these.
FP8_INTO_FP32_BARS = dict(diff_bar=1e-7, tile_bar=2.0 ** -10)


def scaled_like(ref: torch.Tensor, generator: torch.Generator = None, dtype=torch.float32) -> torch.Tensor:
    """Random C with the spread (RMS) of the product `ref`, so that dropping or doubling C moves the result by
    as much as the product itself (C of spread 1 beside a product of spread sqrt(K) hides both)."""
    rms = float(ref.double().pow(2).mean().sqrt()) or 1.0
    c = torch.randn(ref.shape, device=ref.device, dtype=torch.float32, generator=generator) * rms
    return c.to(dtype)


def tile_max_errors(out: torch.Tensor, ref: torch.Tensor, tile: int = TILE) -> torch.Tensor:
    """[ceil(M / tile), ceil(N / tile)]: the largest |out - ref| in each tile of a 2-D output, in FP32 or
    wider (NaN or an infinity in `out` counts as an infinite error)."""
    assert out.dim() == 2 and out.shape == ref.shape, (out.shape, ref.shape)
    dtype = torch.promote_types(torch.promote_types(out.dtype, ref.dtype), torch.float32)
    err = (out.to(dtype) - ref.to(dtype)).abs()
    err = torch.nan_to_num(err, nan=float('inf'))
    m, n = err.shape
    err = torch.nn.functional.pad(err, (0, -n % tile, 0, -m % tile))
    return err.reshape(err.shape[0] // tile, tile, err.shape[1] // tile, tile).amax(dim=(1, 3))


def assert_tiles_close(out: torch.Tensor, ref: torch.Tensor, rel: float, what: str, tile: int = TILE) -> None:
    """Every tile's largest error at most `rel` times the largest |ref| of the whole output."""
    if out.numel() == 0:
        return
    scale = float(ref.abs().max()) or 1.0
    errors = tile_max_errors(out, ref, tile) / scale
    worst = float(errors.max())
    if not worst <= rel:
        i, j = divmod(int(errors.argmax()), errors.shape[1])
        bad = int((~(errors <= rel)).sum())
        raise AssertionError(f'{what}: tile ({i}, {j}) (rows {i * tile}.., columns {j * tile}..) has a largest error '
                             f'of {worst:.3g} x max|ref|, over {rel:.3g}; {bad} of {errors.numel()} tiles over the bar')


def assert_gemm_close(out: torch.Tensor, ref: torch.Tensor, what: str, diff_bar: float = None,
                      tile_bar: float = None) -> None:
    """No NaN, calc_diff under the dtype's bar, and every 128x128 tile within the dtype's per-tile bar. A 3-D
    output (one matrix per group: masked, K-grouped) is checked matrix by matrix."""
    assert out.shape == ref.shape, f'{what}: shape {tuple(out.shape)} vs reference {tuple(ref.shape)}'
    if out.dim() == 3:
        for index in range(out.shape[0]):
            assert_gemm_close(out[index], ref[index], f'{what} [{index}]', diff_bar, tile_bar)
        return
    assert not torch.isnan(out).any(), f'{what}: {int(torch.isnan(out).sum())} NaN (unwritten elements)'
    if out.numel() == 0:
        return
    diff_bar = DIFF_BAR[out.dtype] if diff_bar is None else diff_bar
    tile_bar = TILE_BAR[out.dtype] if tile_bar is None else tile_bar
    diff = float(calc_diff(out.double(), ref.double()))
    assert diff < diff_bar, f'{what}: calc_diff {diff:.3g}, over {diff_bar:.3g}'
    assert_tiles_close(out, ref, tile_bar, what)


def assert_groups_close(out: torch.Tensor, ref: torch.Tensor, row_group: torch.Tensor, what: str, **bars) -> None:
    """Contiguous M-grouped output: the rows of each group checked on their own (assert_gemm_close), so that one
    group computed with the wrong expert fails however small it is. `row_group` [M] holds each row's group,
    -1 for padding rows (not checked here)."""
    assert row_group.shape == out.shape[:1], (row_group.shape, out.shape)
    groups = sorted(int(g) for g in torch.unique(row_group) if int(g) >= 0)
    for g in groups:
        rows = row_group == g
        assert_gemm_close(out[rows], ref[rows], f'{what} group {g} ({int(rows.sum())} rows)', **bars)
