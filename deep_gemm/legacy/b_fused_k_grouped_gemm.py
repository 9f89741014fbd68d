"""K-grouped BF16 GEMM that gathers the rows of ``b`` (DeepGEMM's ``b_fused`` variant), in Triton.

As :mod:`.a_fused_k_grouped_gemm` with the roles of the operands swapped::

    a [K, M]        bfloat16, M contiguous   (K positions, grouped: group g owns [k_start[g], k_end[g]))
    b [T, N]        bfloat16, N contiguous   (source rows, any T)
    d [G, M, N]     float32 (or bfloat16), N contiguous
    d[g] (+)= sum over k in [k_start[g], k_end[g]) of  a[k]^T  b[k_indices[k]]
"""

from __future__ import annotations

from typing import Sequence

import torch

from .k_grouped_gemm import fused_k_grouped

__all__ = ["b_fused_k_grouped_bf16_gemm_tn_contiguous_tl"]

_TN = "b_fused_k_grouped_bf16_gemm_tn_contiguous_tl"


def b_fused_k_grouped_bf16_gemm_tn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                                 handle: Sequence[torch.Tensor], acc: bool,
                                                 *, _config=None) -> torch.Tensor:
    """``d[g] (+)= a[k_g].T @ b[k_indices[k_g]]`` over each group's K range (see the module docstring).

    Returns ``d``. Raises before launching: ``TypeError`` (dtype, ``handle`` not a triple, ``acc`` not a
    bool), ``ValueError`` (shape, stride, overlap), ``ImportError`` (Triton missing), ``RuntimeError``
    (device).
    """
    return fused_k_grouped(_TN, "b", a, b, d, handle, acc, _config)
