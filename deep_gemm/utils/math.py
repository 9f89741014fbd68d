"""Integer helpers and FP8 casts used to prepare inputs for the FP8 GEMMs (reference implementations in
plain PyTorch: they run on any device, CPU included)."""

from typing import Tuple

import torch

FP8_E4M3_MAX = 448.0
_AMAX_FLOOR = 1e-4  # keeps all-zero blocks from producing zero (then infinite) scales


def ceil_div(x: int, y: int) -> int:
    """``ceil(x / y)`` for non-negative integers."""
    return (x + y - 1) // y


def align(x: int, y: int) -> int:
    """``x`` rounded up to a multiple of ``y``."""
    return ceil_div(x, y) * y


def ceil_to_ue8m0(x: torch.Tensor) -> torch.Tensor:
    """Rounds positive scales up to the next power of two (the UE8M0 format: exponent only)."""
    return torch.exp2(torch.ceil(torch.log2(x.abs())))


def _scales(amax: torch.Tensor, use_ue8m0: bool) -> torch.Tensor:
    sf = amax.clamp(min=_AMAX_FLOOR) / FP8_E4M3_MAX
    return ceil_to_ue8m0(sf) if use_ue8m0 else sf


def per_token_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [M, K]`` to FP8 E4M3 with one scale per row per 128 columns (the A operand's
    ``(1, 128)`` granularity).

    Returns ``(x_fp8 [M, K] float8_e4m3fn, sf [M, ceil(K/128)] float32)`` with
    ``x ~= x_fp8.float() * sf.repeat_interleave(128, 1)[:, :K]``. ``sf`` is row-major (K-major); the
    GEMMs convert it to the M-major TMA-aligned layout, or pass it through
    :func:`deep_gemm.get_mn_major_tma_aligned_tensor` once yourself.
    """
    if x.dim() != 2:
        raise ValueError(f'per_token_cast_to_fp8: x must be 2-D [M, K]; got shape {list(x.shape)}')
    m, k = x.shape
    padded_k = align(k, 128)
    padded = x.new_zeros((m, padded_k))
    padded[:, :k] = x
    blocks = padded.view(m, padded_k // 128, 128).float()
    sf = _scales(blocks.abs().amax(dim=2), use_ue8m0)
    x_fp8 = (blocks / sf.unsqueeze(2)).to(torch.float8_e4m3fn).view(m, padded_k)
    return x_fp8[:, :k].contiguous(), sf


def per_block_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [N, K]`` to FP8 E4M3 with one scale per 128x128 block (the B operand's
    ``(128, 128)`` granularity).

    Returns ``(x_fp8 [N, K] float8_e4m3fn, sf [ceil(N/128), ceil(K/128)] float32)``, ``sf`` contiguous.
    """
    if x.dim() != 2:
        raise ValueError(f'per_block_cast_to_fp8: x must be 2-D [N, K]; got shape {list(x.shape)}')
    n, k = x.shape
    pn, pk = align(n, 128), align(k, 128)
    padded = x.new_zeros((pn, pk))
    padded[:n, :k] = x
    blocks = padded.view(pn // 128, 128, pk // 128, 128).float()
    sf = _scales(blocks.abs().amax(dim=(1, 3), keepdim=True), use_ue8m0)
    x_fp8 = (blocks / sf).to(torch.float8_e4m3fn).view(pn, pk)
    return x_fp8[:n, :k].contiguous(), sf.view(pn // 128, pk // 128)


def per_channel_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [K, MN]`` (an MN-major operand) with one scale per 128 rows per column.

    Returns ``(x_fp8 [K, MN], sf [ceil(K/128), MN] float32)``: the scale layout of the K-grouped GEMM.
    """
    if x.dim() != 2:
        raise ValueError(f'per_channel_cast_to_fp8: x must be 2-D [K, MN]; got shape {list(x.shape)}')
    k, mn = x.shape
    pk = align(k, 128)
    padded = x.new_zeros((pk, mn))
    padded[:k] = x
    blocks = padded.view(pk // 128, 128, mn).float()
    sf = _scales(blocks.abs().amax(dim=1), use_ue8m0)
    x_fp8 = (blocks / sf.unsqueeze(1)).to(torch.float8_e4m3fn).view(pk, mn)
    return x_fp8[:k].contiguous(), sf


def dequantize_per_token(x_fp8: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`per_token_cast_to_fp8` (float32 result)."""
    k = x_fp8.shape[-1]
    return x_fp8.float() * sf.float().repeat_interleave(128, dim=-1)[..., :k]


def dequantize_per_block(x_fp8: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`per_block_cast_to_fp8` (float32 result)."""
    n, k = x_fp8.shape[-2:]
    full = sf.float().repeat_interleave(128, dim=-2).repeat_interleave(128, dim=-1)
    return x_fp8.float() * full[..., :n, :k]
