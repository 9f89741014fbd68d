"""Float reference of deep_gemm.tf32_hc_prenorm_gemm (the arithmetic of
deep_gemm/include/deep_gemm/impls/sm90_tf32_hc_prenorm_gemm.cuh), in float64 on any device.

- ``a`` (bfloat16) is exact in TF32 and in float64.
- ``b`` (float32) is used at TF32 precision: ``tf32_round`` rounds it to nearest, ties away from zero, as the
  kernel does (cvt.rna.tf32.f32) and as torch's TF32 matmul did on an H100. ``tf32_truncate`` (the low 13
  mantissa bits dropped, what a TF32 wgmma does with raw FP32 data) is kept to show how far apart the two are.
- The products and sums are then exact enough in float64 that the kernel's FP32 accumulation is the only
  difference left (a relative error around 1e-6, calc_diff around 1e-12).
- With ``num_splits`` the partial sums follow the kernel's split layout (``split_ranges``).
"""
from typing import List, Optional, Tuple

import torch

BLOCK_K = 64


def tf32_round(x: torch.Tensor) -> torch.Tensor:
    """float32 -> float32 holding x rounded to TF32 (1 + 10 significant bits, float32's exponent range and
    subnormal spacing), to nearest with ties away from zero; infinities and NaN unchanged, values past the
    largest TF32 number by half a unit or more become infinities. Computed on magnitudes in float64, where
    every step is exact (tests/python/test_hc_prenorm_gemm.py checks it against the bit formula)."""
    assert x.dtype == torch.float32
    x64 = x.double()
    mag = x64.abs()
    _, exp = torch.frexp(mag)  # mag = mant * 2^exp, mant in [0.5, 1); float32 normals have exp >= -125
    ulp = torch.exp2((exp.clamp(min=-125) - 11).double())  # TF32 spacing; subnormals share 2^-136
    rounded = torch.floor(mag / ulp + 0.5) * ulp
    out = torch.copysign(rounded, x64).float()  # beyond float32's range: inf
    return torch.where(torch.isfinite(x), out, x)


def tf32_truncate(x: torch.Tensor) -> torch.Tensor:
    """float32 -> float32 with the low 13 mantissa bits cleared (toward zero): what a TF32 wgmma makes of FP32
    data given to it as is. Not the kernel's arithmetic (it rounds: ``tf32_round``)."""
    assert x.dtype == torch.float32
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).view(x.shape)


def split_ranges(k: int, num_splits: int) -> List[Tuple[int, int]]:
    """[start, end) columns of each split: 64-wide K blocks dealt out evenly, the first nkb % S splits one
    block more (empty splits possible when S > nkb); the last block is clipped at k."""
    nkb = (k + BLOCK_K - 1) // BLOCK_K
    q, r = divmod(nkb, num_splits)
    ranges = []
    for s in range(num_splits):
        first = s * q + min(s, r)
        count = q + (1 if s < r else 0)
        ranges.append((min(first * BLOCK_K, k), min((first + count) * BLOCK_K, k)))
    return ranges


def hc_prenorm_reference(a: torch.Tensor, b: torch.Tensor, num_splits: Optional[int] = None,
                         b_rounding=tf32_round) -> Tuple[torch.Tensor, torch.Tensor]:
    """(d, sqr_sum) in float64: [m, n] and [m], or [S, m, n] and [S, m] partials with num_splits=S."""
    a64 = a.double()
    b64 = b_rounding(b.float()).double()
    if num_splits is None:
        return a64 @ b64.T, (a64 * a64).sum(-1)
    ds, ss = [], []
    for lo, hi in split_ranges(a.shape[1], num_splits):
        ds.append(a64[:, lo:hi] @ b64[:, lo:hi].T)
        ss.append((a64[:, lo:hi] * a64[:, lo:hi]).sum(-1))
    return torch.stack(ds), torch.stack(ss)
