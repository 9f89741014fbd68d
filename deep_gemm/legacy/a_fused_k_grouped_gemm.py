"""K-grouped BF16 GEMM that gathers the rows of ``a`` (DeepGEMM's ``a_fused`` variant), in Triton.

The weight-gradient GEMM of a MoE layer fed straight from the token matrix. With ``handle = (k_indices,
k_start, k_end)`` (int32 device tensors) and ``G`` groups::

    a [T, M]        bfloat16, M contiguous   (source rows, any T)
    b [K, N]        bfloat16, N contiguous   (K positions, grouped: group g owns [k_start[g], k_end[g]))
    d [G, M, N]     float32 (or bfloat16), N contiguous
    d[g] (+)= sum over k in [k_start[g], k_end[g]) of  a[k_indices[k]]^T  b[k]      (FP32 accumulation)

``acc=True`` adds to ``d``, ``acc=False`` overwrites it. A ``k_indices`` entry outside ``[0, T)`` (``-1``:
padding) contributes nothing; group ranges are clamped to ``[0, K]`` (an empty range leaves ``d[g]`` as
it is with ``acc``, zeros without). Nothing is read back to the host.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .k_grouped_gemm import fused_k_grouped

__all__ = ["a_fused_k_grouped_bf16_gemm_tn_contiguous_tl"]

_TN = "a_fused_k_grouped_bf16_gemm_tn_contiguous_tl"


def a_fused_k_grouped_bf16_gemm_tn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                                 handle: Sequence[torch.Tensor], acc: bool,
                                                 *, _config=None) -> torch.Tensor:
    """``d[g] (+)= a[k_indices[k_g]].T @ b[k_g]`` over each group's K range (see the module docstring).

    Returns ``d``. Raises before launching: ``TypeError`` (dtype, ``handle`` not a triple, ``acc`` not a
    bool), ``ValueError`` (shape, stride, overlap), ``ImportError`` (Triton missing), ``RuntimeError``
    (device).
    """
    return fused_k_grouped(_TN, "a", a, b, d, handle, acc, _config)
