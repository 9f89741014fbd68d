"""Integer helpers and FP8 casts used to prepare inputs for the FP8 GEMMs (reference implementations in
plain PyTorch: they run on any device, CPU included)."""

from typing import Sequence, Tuple

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


def _check_gran_k(op: str, gran_k: int) -> None:
    if not isinstance(gran_k, int) or gran_k <= 0:
        raise ValueError(f'{op}: gran_k must be a positive int; got {gran_k!r}')


def per_token_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [M, K]`` to FP8 E4M3 with one scale per row per ``gran_k`` columns (the A operand's
    ``(1, gran_k)`` granularity).

    Returns ``(x_fp8 [M, K] float8_e4m3fn, sf [M, ceil(K/gran_k)] float32)`` with
    ``x ~= x_fp8.float() * sf.repeat_interleave(gran_k, 1)[:, :K]``. ``sf`` is row-major (K-major); the
    GEMMs convert it to the M-major TMA-aligned layout, or pass it through
    :func:`deep_gemm.get_mn_major_tma_aligned_tensor` once yourself. ``use_ue8m0`` rounds the scales up to
    powers of two; ``use_packed_ue8m0`` (needs ``use_ue8m0``) returns them as :func:`pack_ue8m0_to_int` of
    that (int32 ``[M, ceil(K/gran_k/4)]``).
    """
    op = 'per_token_cast_to_fp8'
    if x.dim() != 2:
        raise ValueError(f'{op}: x must be 2-D [M, K]; got shape {list(x.shape)}')
    _check_gran_k(op, gran_k)
    if use_packed_ue8m0 and not use_ue8m0:
        raise ValueError(f'{op}: use_packed_ue8m0=True needs use_ue8m0=True; got use_ue8m0={use_ue8m0}')
    m, k = x.shape
    padded_k = align(k, gran_k)
    padded = x.new_zeros((m, padded_k))
    padded[:, :k] = x
    blocks = padded.view(m, padded_k // gran_k, gran_k).float()
    sf = _scales(blocks.abs().amax(dim=2), use_ue8m0)
    x_fp8 = (blocks / sf.unsqueeze(2)).to(torch.float8_e4m3fn).view(m, padded_k)
    return x_fp8[:, :k].contiguous(), pack_ue8m0_to_int(sf) if use_packed_ue8m0 else sf


def per_block_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [N, K]`` to FP8 E4M3 with one scale per 128 x ``gran_k`` block (the B operand's
    ``(128, gran_k)`` granularity).

    Returns ``(x_fp8 [N, K] float8_e4m3fn, sf [ceil(N/128), ceil(K/gran_k)] float32)``, ``sf`` contiguous.
    """
    op = 'per_block_cast_to_fp8'
    if x.dim() != 2:
        raise ValueError(f'{op}: x must be 2-D [N, K]; got shape {list(x.shape)}')
    _check_gran_k(op, gran_k)
    n, k = x.shape
    pn, pk = align(n, 128), align(k, gran_k)
    padded = x.new_zeros((pn, pk))
    padded[:n, :k] = x
    blocks = padded.view(pn // 128, 128, pk // gran_k, gran_k).float()
    sf = _scales(blocks.abs().amax(dim=(1, 3), keepdim=True), use_ue8m0)
    x_fp8 = (blocks / sf).to(torch.float8_e4m3fn).view(pn, pk)
    return x_fp8[:n, :k].contiguous(), sf.view(pn // 128, pk // gran_k)


def per_channel_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [K, MN]`` (an MN-major operand) with one scale per ``gran_k`` rows per column.

    Returns ``(x_fp8 [K, MN], sf [ceil(K/gran_k), MN] float32)``: the scale layout of the K-grouped GEMM.
    """
    op = 'per_channel_cast_to_fp8'
    if x.dim() != 2:
        raise ValueError(f'{op}: x must be 2-D [K, MN]; got shape {list(x.shape)}')
    _check_gran_k(op, gran_k)
    k, mn = x.shape
    pk = align(k, gran_k)
    padded = x.new_zeros((pk, mn))
    padded[:k] = x
    blocks = padded.view(pk // gran_k, gran_k, mn).float()
    sf = _scales(blocks.abs().amax(dim=1), use_ue8m0)
    x_fp8 = (blocks / sf.unsqueeze(1)).to(torch.float8_e4m3fn).view(pk, mn)
    return x_fp8[:k].contiguous(), sf


def per_custom_dims_cast_to_fp8(x: torch.Tensor, dims: Sequence[int], use_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x`` with one scale per index of the dimensions ``dims`` (the amax runs over all other
    dimensions). Returns ``(x_fp8 (x's shape), sf float32 [x.shape[d] for d in dims])``."""
    op = 'per_custom_dims_cast_to_fp8'
    dims = list(dims)
    n = x.dim()
    # Checked before any normalisation: `d % n` would quietly turn an out-of-range dim into another one.
    if any(isinstance(d, bool) or not isinstance(d, int) or not -n <= d < n for d in dims):
        raise ValueError(f'{op}: dims must be dimensions of x, ints in [{-n}, {n}) (x has shape {list(x.shape)}); got {dims}')
    dims = [d % n for d in dims]
    if len(set(dims)) != len(dims):
        raise ValueError(f'{op}: dims must be distinct dimensions of x (shape {list(x.shape)}); got {list(dims)}')
    reduce = [d for d in range(x.dim()) if d not in dims]
    xf = x.float()
    amax = xf.abs().amax(dim=reduce, keepdim=True) if reduce else xf.abs()
    sf = _scales(amax, use_ue8m0)
    x_fp8 = (xf / sf).to(torch.float8_e4m3fn)
    return x_fp8, sf.reshape([x.shape[d] for d in sorted(dims)])


def pack_ue8m0_to_int(x: torch.Tensor) -> torch.Tensor:
    """Packs power-of-two float32 scales ``x [..., K']`` as UE8M0 (the 8 exponent bits of each value):
    int32 ``[..., ceil(K'/4)]``, value ``4*j + i`` in byte ``i`` (bits ``8i..8i+7``) of int ``j``; a last
    partial int is padded with zero bytes. Mantissa bits must be zero (use :func:`ceil_to_ue8m0`)."""
    op = 'pack_ue8m0_to_int'
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() < 1:
        raise TypeError(f'{op}: x must be a float32 tensor with at least one dimension; got '
                        f'{getattr(x, "dtype", type(x).__name__)}')
    bits = x.contiguous().view(torch.int32)
    if bool(((bits & ~0x7F800000) != 0).any()):
        raise ValueError(f'{op}: x must hold positive powers of two (sign and mantissa bits zero)')
    exps = (bits >> 23) & 0xFF
    k = x.shape[-1]
    pad = align(k, 4) - k
    if pad:
        exps = torch.nn.functional.pad(exps, (0, pad))
    exps = exps.view(*x.shape[:-1], align(k, 4) // 4, 4)
    return exps[..., 0] | (exps[..., 1] << 8) | (exps[..., 2] << 16) | (exps[..., 3] << 24)


def unpack_ue8m0_from_int(packed_sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_ue8m0_to_int`: int32 ``[..., W]`` -> float32 ``[..., 4*W]`` (``2**(e - 127)``
    for each byte ``e``; zero bytes give 0, the padding of a partial last int)."""
    op = 'unpack_ue8m0_from_int'
    if not isinstance(packed_sf, torch.Tensor) or packed_sf.dtype != torch.int32 or packed_sf.dim() < 1:
        raise TypeError(f'{op}: packed_sf must be an int32 tensor with at least one dimension; got '
                        f'{getattr(packed_sf, "dtype", type(packed_sf).__name__)}')
    shifts = torch.tensor([0, 8, 16, 24], dtype=torch.int32, device=packed_sf.device)
    exps = (packed_sf.unsqueeze(-1) >> shifts) & 0xFF
    return (exps << 23).view(torch.float32).reshape(*packed_sf.shape[:-1], packed_sf.shape[-1] * 4)


def dequantize_per_token(x_fp8: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`per_token_cast_to_fp8` (float32 result)."""
    k = x_fp8.shape[-1]
    return x_fp8.float() * sf.float().repeat_interleave(128, dim=-1)[..., :k]


def dequantize_per_block(x_fp8: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`per_block_cast_to_fp8` (float32 result)."""
    n, k = x_fp8.shape[-2:]
    full = sf.float().repeat_interleave(128, dim=-2).repeat_interleave(128, dim=-1)
    return x_fp8.float() * full[..., :n, :k]


# ---- FP4 (E2M1) helpers: values packed two per byte, the even element in the low nibble ----------------

FP4_E2M1_MAX = 6.0
_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # codes 0..7; bit 3 is the sign


def _e2m1_codes(x: torch.Tensor) -> torch.Tensor:
    """Nearest E2M1 code (uint8 0..15) of each float32 value (ties go to the smaller magnitude)."""
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=x.device)
    mag = x.abs().clamp(max=FP4_E2M1_MAX)
    code = (mag.unsqueeze(-1) - table).abs().argmin(dim=-1).to(torch.uint8)
    return code | ((x < 0).to(torch.uint8) << 3)


def _e2m1_values(codes: torch.Tensor) -> torch.Tensor:
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=codes.device)
    mag = table[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -mag, mag)


def _pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def _unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    return torch.stack((packed & 0xF, packed >> 4), dim=-1).flatten(-2)


def per_token_cast_to_fp4(x: torch.Tensor, use_ue8m0: bool, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantizes ``x [M, K]`` (K even) to FP4 E2M1 with one scale per row per ``gran_k`` columns
    (``amax / 6``). Returns ``(packed uint8 [M, K/2], sf float32 [M, ceil(K/gran_k)])``; ``use_ue8m0``
    and ``use_packed_ue8m0`` as in :func:`per_token_cast_to_fp8`. Pure PyTorch (SM90 has no FP4 GEMM)."""
    op = 'per_token_cast_to_fp4'
    if x.dim() != 2 or x.shape[1] % 2 != 0:
        raise ValueError(f'{op}: x must be 2-D [M, K] with K even; got shape {list(x.shape)}')
    _check_gran_k(op, gran_k)
    if use_packed_ue8m0 and not use_ue8m0:
        raise ValueError(f'{op}: use_packed_ue8m0=True needs use_ue8m0=True; got use_ue8m0={use_ue8m0}')
    m, k = x.shape
    pk = align(k, gran_k)
    padded = x.new_zeros((m, pk))
    padded[:, :k] = x
    blocks = padded.view(m, pk // gran_k, gran_k).float()
    sf = blocks.abs().amax(dim=2).clamp(min=_AMAX_FLOOR) / FP4_E2M1_MAX
    if use_ue8m0:
        sf = ceil_to_ue8m0(sf)
    codes = _e2m1_codes(blocks / sf.unsqueeze(2)).view(m, pk)[:, :k]
    return _pack_nibbles(codes).contiguous(), pack_ue8m0_to_int(sf) if use_packed_ue8m0 else sf


def transpose_packed_fp4(a: torch.Tensor) -> torch.Tensor:
    """``[R, C/2]`` packed FP4 (uint8) -> the packed form of its transpose, ``[C, R/2]`` (R even)."""
    if a.dim() != 2 or a.dtype != torch.uint8 or a.shape[0] % 2 != 0:
        raise ValueError(f'transpose_packed_fp4: a must be a 2-D uint8 tensor with an even number of rows; got '
                         f'{a.dtype} {list(a.shape)}')
    return _pack_nibbles(_unpack_nibbles(a).t().contiguous()).contiguous()


def cast_back_from_fp4(packed: torch.Tensor, sf: torch.Tensor, gran_k: int = 128, use_packed_ue8m0: bool = False) -> torch.Tensor:
    """Inverse of :func:`per_token_cast_to_fp4`: float32 ``[M, K]`` from ``packed [M, K/2]`` and its scales
    (``sf [M, ceil(K/gran_k)]``, or packed UE8M0 int32 with ``use_packed_ue8m0``)."""
    _check_gran_k('cast_back_from_fp4', gran_k)
    values = _e2m1_values(_unpack_nibbles(packed))
    k = values.shape[-1]
    if use_packed_ue8m0:
        sf = unpack_ue8m0_from_int(sf)
    return values * sf.float().repeat_interleave(gran_k, dim=-1)[..., :k]
