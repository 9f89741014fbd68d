"""Scale-factor layouts the kernels read, and the contiguous-layout alignment knobs.

The FP32 layout helpers (:func:`get_tma_aligned_size`, :func:`get_mn_major_tma_aligned_tensor`) are what
the SM90 kernels use. The packed-UE8M0 helpers produce DeepGEMM's SM100 scale layout (four 8-bit
exponents per int32, MN-major); SM90 kernels do not read it, but code that prepares such scales runs
unchanged. They are plain PyTorch (any device)."""

from typing import Optional, Sequence

import torch

from .. import _C
from .math import align, ceil_div, pack_ue8m0_to_int

get_mk_alignment_for_contiguous_layout = _C.get_mk_alignment_for_contiguous_layout
get_theoretical_mk_alignment_for_contiguous_layout = _C.get_theoretical_mk_alignment_for_contiguous_layout
set_mk_alignment_for_contiguous_layout = _C.set_mk_alignment_for_contiguous_layout
# DeepGEMM's older names: one alignment serves the M-grouped (rows) and K-grouped (K) layouts.
get_m_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout
get_k_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout

_tracing = torch.compiler.is_dynamo_compiling


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``x`` rounded up to whole 16-byte TMA units of ``element_size``-byte elements
    (e.g. ``get_tma_aligned_size(130, 4) == 132``)."""
    if element_size <= 0 or 16 % element_size != 0:
        raise ValueError(f'get_tma_aligned_size: element_size must divide 16 (1, 2, 4, 8 or 16 bytes); got {element_size}')
    if x < 0:
        raise ValueError(f'get_tma_aligned_size: x must be non-negative; got {x}')
    unit = 16 // element_size
    return (x + unit - 1) // unit * unit


def get_mn_major_tma_aligned_tensor(sf: torch.Tensor) -> torch.Tensor:
    """FP32 scales ``sf`` (``[M, K']`` or ``[G, M, K']``) in the layout the SM90 kernels read: same
    shape, M-major (``stride(-2) == 1``), ``stride(-1) == align(M, 4)``, groups packed
    (``stride(0) == align(M, 4) * K'``), padding rows zero.

    Returns ``sf`` itself when it already has that layout (free), else a new tensor written by a JIT
    CUDA kernel on the current stream (CPU tensors: a torch fallback)."""
    if _tracing():
        return torch.ops.deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    return _C.get_mn_major_tma_aligned_tensor(sf)


def _mn_major_int32(packed: torch.Tensor) -> torch.Tensor:
    """``packed [.., MN, W]`` int32 copied MN-major with the MN stride padded to 4 (16 bytes)."""
    mn, w = packed.shape[-2:]
    amn = get_tma_aligned_size(mn, 4)
    lead = packed.shape[:-2]
    buf = torch.zeros((*lead, w, amn), dtype=torch.int32, device=packed.device)
    buf[..., :mn] = packed.transpose(-2, -1)
    return buf[..., :mn].transpose(-2, -1)


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: torch.Tensor, psum_layout: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Power-of-two FP32 scales ``sf [MN, K']`` (or ``[G, MN, K']``) as packed UE8M0: int32
    ``[.., MN, ceil(K'/4)]`` (four consecutive K' exponents per int, the first in the low byte), MN-major
    with ``stride(-1) == align(MN, 4)``. ``psum_layout`` (grouped rows given by end offsets) is not
    implemented: ``NotImplementedError``."""
    name = 'get_mn_major_tma_aligned_packed_ue8m0_tensor'
    if psum_layout is not None:
        raise NotImplementedError(f'{name}: psum_layout is not implemented in deep_gemm (SM90 kernels read FP32 scales)')
    if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32:
        raise TypeError(f'{name}: sf must be a float32 tensor; got {getattr(sf, "dtype", type(sf).__name__)}')
    if sf.dim() not in (2, 3):
        raise ValueError(f'{name}: sf must be 2-D [MN, K\'] or 3-D [G, MN, K\']; got shape {list(sf.shape)}')
    return _mn_major_int32(pack_ue8m0_to_int(sf))


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf: torch.Tensor, grouped_layout: torch.Tensor,
                                                           ks_cpu: Optional[Sequence[int]], gran_k: int,
                                                           k_alignment: Optional[int] = None, use_psum_layout: bool = False,
                                                           use_padded_sf_layout: bool = False) -> torch.Tensor:
    """Packed UE8M0 scales of a K-grouped operand. ``sf [Σ_g ceil(K_g/gran_k), MN]`` float32 (power-of-two
    values, each group's K-blocks one after another, ``ks_cpu`` the K of each group, any ``K_g >= 0``).

    Group ``g`` is stored as ``B_g`` blocks packed four per int32 in ``ceil(B_g/4)`` rows of its own (a last
    partial int is padded with zero bytes): ``B_g = ceil(K_g/gran_k)`` (the compact layout, the default), or with
    ``use_padded_sf_layout=True`` (sgl-deep-gemm 0.2.5) ``B_g = ceil(align(K_g, k_alignment)/gran_k)``, the
    blocks past the group's own ``ceil(K_g/gran_k)`` being zero bytes. Both give the same tensor when every ``K_g``
    is a multiple of ``k_alignment`` (DeepGEMM 2.6.1's calls, which take no such keyword). The groups are stacked:
    int32 ``[Σ_g ceil(B_g/4), MN]`` returned as its MN-major view (row stride ``align(MN, 4)``).
    ``grouped_layout`` (the device copy of ``ks_cpu``) is read only when ``ks_cpu`` is None (sgl-deep-gemm
    0.2.5's form; one device-to-host copy). ``k_alignment=None`` is :func:`get_mk_alignment_for_contiguous_layout`.
    ``use_psum_layout=True`` raises ``NotImplementedError``. SM90 kernels read FP32 scales, not this layout."""
    name = 'get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor'
    if use_psum_layout:
        raise NotImplementedError(f'{name}: use_psum_layout=True is not implemented in deep_gemm')
    if not isinstance(use_padded_sf_layout, bool):
        raise TypeError(f'{name}: use_padded_sf_layout must be a bool; got {type(use_padded_sf_layout).__name__}')
    if k_alignment is None:
        k_alignment = get_mk_alignment_for_contiguous_layout()
    if ks_cpu is None:
        if not isinstance(grouped_layout, torch.Tensor):
            raise ValueError(f'{name}: give ks_cpu (each group\'s K) or grouped_layout (their int tensor); got neither')
        ks_cpu = grouped_layout.tolist()
    if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.dim() != 2:
        raise ValueError(f'{name}: sf must be a 2-D float32 tensor [sum(ceil(K_g/gran_k)), MN]; got '
                         f'{getattr(sf, "dtype", None)} {list(getattr(sf, "shape", []))}')
    if gran_k <= 0 or k_alignment <= 0:
        raise ValueError(f'{name}: gran_k and k_alignment must be positive; got {gran_k}, {k_alignment}')
    for g, k in enumerate(ks_cpu):
        if k < 0:
            raise ValueError(f'{name}: ks_cpu[{g}] must be non-negative; got {k}')
    blocks = [ceil_div(k, gran_k) for k in ks_cpu]
    if sum(blocks) != sf.shape[0]:
        raise ValueError(f'{name}: sf must have sum(ceil(K_g/gran_k)) = {sum(blocks)} rows; got shape {list(sf.shape)}')
    stored = [ceil_div(align(k, k_alignment), gran_k) for k in ks_cpu] if use_padded_sf_layout else blocks
    mn = sf.shape[1]
    parts = []
    for chunk, n in zip(torch.split(sf, blocks, dim=0), stored):
        if n > chunk.shape[0]:  # the padding blocks: zero bytes (an FP32 0.0 has exponent 0)
            chunk = torch.cat([chunk, chunk.new_zeros((n - chunk.shape[0], mn))], dim=0)
        parts.append(pack_ue8m0_to_int(chunk.t()).t())
    packed = torch.cat(parts, dim=0) if parts else sf.new_zeros((0, mn), dtype=torch.int32)
    # [W, MN] with MN contiguous is MN-major already; pad its row stride to 16 bytes for TMA.
    buf = torch.zeros((packed.shape[0], get_tma_aligned_size(mn, 4)), dtype=torch.int32, device=sf.device)
    buf[:, :mn] = packed
    return buf[:, :mn]
