"""M-grouped BF16 GEMMs that gather the rows of ``a`` (DeepGEMM's ``a_fused`` variants), in Triton.

``d[r] = a[m_row_indices[r]] @ B[m_indices[r]]`` (FP32 accumulation, rounded to ``d``'s dtype): the MoE
expert GEMM fed straight from the token matrix, without first copying the tokens into the grouped
layout. ``a [T, K]`` holds the source rows (any ``T``); ``d`` has one row per entry of the mappings.
Output rows whose group id is outside ``[0, G)`` (``-1``: padding) or whose source row is outside
``[0, T)`` (``-1``) are written with zeros. Everything else (``b`` layouts, alignment, speed) is as in
:mod:`.m_grouped_gemm`, whose kernel this is.
"""

from __future__ import annotations

from typing import Sequence

import torch

from . import _common as C
from .m_grouped_gemm import check_m_grouped, run_m_grouped

__all__ = ["a_fused_m_grouped_bf16_gemm_nt_contiguous_tl", "a_fused_m_grouped_bf16_gemm_nn_contiguous_tl"]

_NT = "a_fused_m_grouped_bf16_gemm_nt_contiguous_tl"
_NN = "a_fused_m_grouped_bf16_gemm_nn_contiguous_tl"


def unpack_mappings(op: str, mappings: Sequence[torch.Tensor]):
    if isinstance(mappings, torch.Tensor) or not isinstance(mappings, (tuple, list)) or len(mappings) != 2:
        raise TypeError(f"{op}: mappings must be a pair (m_indices, m_row_indices) of int32 tensors; "
                        f"got {type(mappings).__name__}"
                        + (f" of length {len(mappings)}" if isinstance(mappings, (tuple, list)) else ""))
    m_indices, m_row_indices = mappings
    C.check_tensor(op, "m_indices", m_indices)
    C.check_tensor(op, "m_row_indices", m_row_indices)
    return m_indices, m_row_indices


def _a_fused_m_grouped(op: str, b_layout: str, a, b, d, mappings, config) -> torch.Tensor:
    """The nt / nn entries: the torch op under tracing, else check and run."""
    m_indices, m_row_indices = unpack_mappings(op, mappings)
    if C.tracing():
        C.torch_op(op)(a, b, d, m_indices, m_row_indices)
        return d
    return run_m_grouped(op, check_m_grouped(op, a, b, d, m_indices, m_row_indices, b_layout=b_layout), config)


def a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                                 mappings: Sequence[torch.Tensor], *, _config=None) -> torch.Tensor:
    """``d[r] = a[m_row_indices[r]] @ b[m_indices[r]].T`` with ``mappings = (m_indices, m_row_indices)``.

    Args:
        a: ``[T, K]`` bfloat16, K contiguous: the source rows.
        b: ``[G, N, K]`` bfloat16, K-major or MN-major (``[G, K, N]`` recognised from the shapes, as in
           :func:`~deep_gemm.legacy.m_grouped_gemm.m_grouped_bf16_gemm_nt_contiguous_tl`).
        d: ``[M, N]`` bfloat16 (or float32), N contiguous; written in full.
        mappings: ``(m_indices, m_row_indices)``, two int32 ``[M]`` tensors on the device: the group
           and the source row of ``a`` of every row of ``d`` (``-1``: a zero row).

    Returns ``d``. Raises before launching: ``TypeError`` (dtype, ``mappings`` not a pair), ``ValueError``
    (shape, stride, overlap), ``ImportError`` (Triton missing), ``RuntimeError`` (device).
    """
    return _a_fused_m_grouped(_NT, "nt", a, b, d, mappings, _config)


def a_fused_m_grouped_bf16_gemm_nn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                                 mappings: Sequence[torch.Tensor], *, _config=None) -> torch.Tensor:
    """``d[r] = a[m_row_indices[r]] @ b[m_indices[r]]`` with ``b [G, K, N]`` (N or K contiguous); otherwise
    as :func:`a_fused_m_grouped_bf16_gemm_nt_contiguous_tl`."""
    return _a_fused_m_grouped(_NN, "nn", a, b, d, mappings, _config)
