"""M-grouped BF16 GEMMs in Triton (contiguous layout), DeepGEMM naming with a ``_tl`` suffix.

Layout (as DeepGEMM's ``m_grouped_*_contiguous``): the rows of ``a [M_total, K]`` are split into groups;
``m_indices [M_total]`` (int32) holds each row's group id and ``d[r] = a[r] @ B[m_indices[r]]`` in FP32
accumulation, rounded to ``d``'s dtype. A row whose id is ``-1`` is padding: its ``d`` row is written with
zeros (so ``d`` is fully defined and deterministic). Ids outside ``[0, G)`` are treated like ``-1``.

Any ``m_indices`` is computed correctly: groups need neither be contiguous nor aligned. Speed is tuned for
the MoE layout in which each group's rows are contiguous and start at multiples of 128
(``get_mk_alignment_for_contiguous_layout()``): then each tile of rows belongs to one group and runs one
pass over K; a tile that holds rows of several groups runs one pass per group present.

No host synchronisation: ``m_indices`` is only read on the device (safe to capture in a CUDA graph once
the autotuner has picked its config for the shape, i.e. after a first call outside the graph).
"""

from __future__ import annotations

import torch

from . import _common as C

__all__ = ["m_grouped_bf16_gemm_nt_contiguous_tl", "m_grouped_bf16_gemm_nn_contiguous_tl"]

_NT = "m_grouped_bf16_gemm_nt_contiguous_tl"
_NN = "m_grouped_bf16_gemm_nn_contiguous_tl"


def _check_common(op, a, b, d, m_indices):
    C.check_dtype(op, "a", a, (torch.bfloat16,))
    C.check_dtype(op, "b", b, (torch.bfloat16,))
    C.check_dtype(op, "d", d, (torch.bfloat16, torch.float32))
    C.check_dtype(op, "m_indices", m_indices, (torch.int32,))
    C.check_dim(op, "a", a, 2, "[M, K]")
    C.check_dim(op, "d", d, 2, "[M, N]")
    C.check_dim(op, "m_indices", m_indices, 1, "[M] (one group id per row of a)")
    m, k = a.shape
    if d.shape[0] != m:
        raise ValueError(f"{op}: d must have {m} rows like a (a is {tuple(a.shape)}); got shape {tuple(d.shape)}")
    if m_indices.shape[0] != m:
        raise ValueError(f"{op}: m_indices must have {m} entries, one per row of a; "
                         f"got shape {tuple(m_indices.shape)}")
    return m, k, d.shape[1]


def _check_layout_and_devices(op, a, b, d, m_indices, b_layout):
    C.check_inner_contiguous(op, "a", a, "[M, K], K-major")
    C.check_inner_contiguous(op, "b", b, b_layout)
    C.check_inner_contiguous(op, "d", d, "[M, N], N-major")
    C.check_inner_contiguous(op, "m_indices", m_indices, "[M]")
    C.check_no_internal_overlap(op, "d", d)
    C.check_no_overlap(op, "d", d, [("a", a), ("b", b), ("m_indices", m_indices)])
    C.require_triton(op)
    C.check_devices(op, [("a", a), ("b", b), ("d", d), ("m_indices", m_indices)])


def _launch(op, a, b, d, m_indices, b_k_major: bool, config=None):
    """Run the kernel (arguments already checked). ``config``: fixed meta-parameters (tests), else autotune."""
    m, k = a.shape
    n = d.shape[1]
    if m == 0 or n == 0:
        return d
    if k == 0:
        d.zero_()
        return d
    kn = C.kernels(op, a.device)
    if b_k_major:   # b [G, N, K]
        stride_bk, stride_bn = b.stride(2), b.stride(1)
    else:           # b [G, K, N]
        stride_bk, stride_bn = b.stride(1), b.stride(2)
    args = (a, b, d, m_indices, m, n, k, b.shape[0],
            a.stride(0), b.stride(0), stride_bk, stride_bn, d.stride(0))
    upcast = kn.INTERPRET
    if config is None and kn.m_grouped_kernel_tuned is not None:
        grid = lambda meta: (triton_cdiv(m, meta["BLOCK_M"]) * triton_cdiv(n, meta["BLOCK_N"]),)
        with torch.cuda.device(a.device):
            kn.m_grouped_kernel_tuned[grid](*args, B_K_MAJOR=b_k_major, UPCAST=upcast)
        return d
    meta = kn.interpret_config(m, n)
    if config is not None:
        meta.update(config)
    num_warps = meta.pop("num_warps", 4)
    num_stages = meta.pop("num_stages", 3)
    grid = (triton_cdiv(m, meta["BLOCK_M"]) * triton_cdiv(n, meta["BLOCK_N"]),)
    if a.device.type == "cuda":
        with torch.cuda.device(a.device):
            kn.m_grouped_kernel[grid](*args, B_K_MAJOR=b_k_major, UPCAST=upcast,
                                      num_warps=num_warps, num_stages=num_stages, **meta)
    else:
        kn.m_grouped_kernel[grid](*args, B_K_MAJOR=b_k_major, UPCAST=upcast, **meta)
    return d


def triton_cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def m_grouped_bf16_gemm_nt_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                         m_indices: torch.Tensor, *, _config=None) -> torch.Tensor:
    """``d[r] = a[r] @ b[m_indices[r]].T`` — M-grouped BF16 GEMM, contiguous layout, Triton.

    Args:
        a: ``[M, K]`` bfloat16, K contiguous.
        b: ``[G, N, K]`` bfloat16 (the "nt" layout: each group's weight is ``[N, K]``, K contiguous).
           Accepted as well: ``[G, K, N]`` (N contiguous), recognised from the shapes when ``b.shape[1:]``
           is ``(K, N)`` but not ``(N, K)``; this is computed exactly as
           :func:`m_grouped_bf16_gemm_nn_contiguous_tl`. When ``N == K`` both readings fit and ``b`` is
           read as ``[G, N, K]``. Any other shape raises ``ValueError``. (This is what makes the
           documented call with ``a [1024, 256]``, ``b [1, 256, 1024]``, ``d [1024, 1024]`` valid: with
           ``K = 256`` from ``a`` and ``N = 1024`` from ``d``, ``b`` can only be ``[G, K, N]``.)
        d: ``[M, N]`` bfloat16 (or float32), N contiguous; written in full (padding rows get zeros).
        m_indices: ``[M]`` int32, the group of each row of ``a``; ``-1`` marks padding rows.

    Returns ``d``. Raises before launching: ``TypeError`` (dtype), ``ValueError`` (shape, stride,
    overlap), ``ImportError`` (Triton missing), ``RuntimeError`` (device), ``NotImplementedError``
    (GPU older than sm_80).
    """
    op = _NT
    C.check_tensor(op, "a", a)
    C.check_tensor(op, "b", b)
    C.check_tensor(op, "d", d)
    C.check_tensor(op, "m_indices", m_indices)
    m, k, n = _check_common(op, a, b, d, m_indices)
    C.check_dim(op, "b", b, 3, "[G, N, K]")
    inner = tuple(b.shape[1:])
    if inner == (n, k):
        b_k_major, layout = True, "[G, N, K], K-major"
    elif inner == (k, n):
        b_k_major, layout = False, "[G, K, N] (read as the nn layout), N-major"
    else:
        raise ValueError(f"{op}: b must have shape [G, N, K] = [G, {n}, {k}] (N from d, K from a; "
                         f"[G, {k}, {n}] is accepted too); got {tuple(b.shape)}")
    _check_layout_and_devices(op, a, b, d, m_indices, layout)
    return _launch(op, a, b, d, m_indices, b_k_major, _config)


def m_grouped_bf16_gemm_nn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                         m_indices: torch.Tensor, *, _config=None) -> torch.Tensor:
    """``d[r] = a[r] @ b[m_indices[r]]`` — M-grouped BF16 GEMM with ``b [G, K, N]`` (N contiguous).

    Same as :func:`m_grouped_bf16_gemm_nt_contiguous_tl` except that ``b`` must be ``[G, K, N]``
    (no shape inference: a ``[G, N, K]`` weight raises ``ValueError`` unless ``N == K``).
    """
    op = _NN
    C.check_tensor(op, "a", a)
    C.check_tensor(op, "b", b)
    C.check_tensor(op, "d", d)
    C.check_tensor(op, "m_indices", m_indices)
    m, k, n = _check_common(op, a, b, d, m_indices)
    C.check_dim(op, "b", b, 3, "[G, K, N]")
    if tuple(b.shape[1:]) != (k, n):
        raise ValueError(f"{op}: b must have shape [G, K, N] = [G, {k}, {n}] (K from a, N from d); "
                         f"got {tuple(b.shape)}")
    _check_layout_and_devices(op, a, b, d, m_indices, "[G, K, N], N-major")
    return _launch(op, a, b, d, m_indices, False, _config)
