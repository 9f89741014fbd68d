"""M-grouped BF16 GEMMs in Triton (contiguous layout), DeepGEMM naming with a ``_tl`` suffix.

Layout (as DeepGEMM's ``m_grouped_*_contiguous``): the rows of ``a [M_total, K]`` are split into groups;
``m_indices [M_total]`` (int32) holds each row's group id and ``d[r] = a[r] @ B[m_indices[r]]`` in FP32
accumulation, rounded to ``d``'s dtype. A row whose id is ``-1`` is padding: its ``d`` row is written with
zeros (so ``d`` is fully defined and deterministic). Ids outside ``[0, G)`` are treated like ``-1``.

``b`` may be K-major (K contiguous) or MN-major (N contiguous) in either entry point: ``nt`` reads
``b [G, N, K]``, ``nn`` reads ``b [G, K, N]``, and the memory order of each group's matrix is taken from
the strides (``b.mT.contiguous().mT`` is the MN-major view of a ``[G, N, K]`` weight).

Any ``m_indices`` is computed correctly: groups need neither be contiguous nor aligned. Speed is tuned for
the MoE layout in which each group's rows are contiguous and start at multiples of 128
(``get_mk_alignment_for_contiguous_layout()``): then each tile of rows belongs to one group and runs one
pass over K; a tile that holds rows of several groups runs one pass per group present.

No host synchronisation: ``m_indices`` is only read on the device (safe to capture in a CUDA graph once
the autotuner has picked its config for the shape, i.e. after a first call outside the graph).

The row-gathering variants (``a_fused``) live in :mod:`.a_fused_m_grouped_gemm` and share this code.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from . import _common as C

__all__ = ["m_grouped_bf16_gemm_nt_contiguous_tl", "m_grouped_bf16_gemm_nn_contiguous_tl"]

_NT = "m_grouped_bf16_gemm_nt_contiguous_tl"
_NN = "m_grouped_bf16_gemm_nn_contiguous_tl"


class Plan(NamedTuple):
    """A checked m-grouped call: ``b_nk`` is ``b`` viewed as ``[G, N, K]`` (no copy)."""
    a: torch.Tensor
    b_nk: torch.Tensor
    d: torch.Tensor
    m_indices: torch.Tensor
    m_row_indices: Optional[torch.Tensor]
    b_k_major: bool


def _b_major(op: str, b_nk: torch.Tensor, b: torch.Tensor) -> bool:
    """True for a K-major ``[G, N, K]`` view (stride 1 along K), False for MN-major (stride 1 along N)."""
    n, k = b_nk.shape[1], b_nk.shape[2]
    if k <= 1 or b_nk.stride(2) == 1:
        return True
    if n <= 1 or b_nk.stride(1) == 1:
        return False
    raise ValueError(f"{op}: b must be contiguous along K (K-major) or along N (MN-major) in each group; "
                     f"got shape {tuple(b.shape)} with strides {tuple(b.stride())}")


def check_m_grouped(op: str, a, b, d, m_indices, m_row_indices=None, *, b_layout: str) -> Plan:
    """All argument checks that need no device (shapes, dtypes, strides, overlap). ``b_layout``: ``"nt"``
    (``b [G, N, K]``, or ``[G, K, N]`` recognised from the shapes), ``"nn"`` (``b [G, K, N]``).
    ``m_row_indices`` (``a_fused``): the row of ``a`` each output row reads; ``d`` then has one row per
    entry of ``m_indices`` and ``a`` any number of rows."""
    for name, t in (("a", a), ("b", b), ("d", d), ("m_indices", m_indices)):
        C.check_tensor(op, name, t)
    C.check_dtype(op, "a", a, (torch.bfloat16,))
    C.check_dtype(op, "b", b, (torch.bfloat16,))
    C.check_dtype(op, "d", d, (torch.bfloat16, torch.float32))
    C.check_dtype(op, "m_indices", m_indices, (torch.int32,))
    if m_row_indices is not None:
        C.check_dtype(op, "m_row_indices", m_row_indices, (torch.int32,))
    C.check_dim(op, "a", a, 2, "[M, K]")
    C.check_dim(op, "d", d, 2, "[M, N]")
    C.check_dim(op, "m_indices", m_indices, 1, "[M] (one group id per row of d)")
    k, m, n = a.shape[1], d.shape[0], d.shape[1]
    if m_row_indices is None and a.shape[0] != m:
        raise ValueError(f"{op}: d must have {a.shape[0]} rows like a (a is {tuple(a.shape)}); "
                         f"got shape {tuple(d.shape)}")
    if m_indices.shape[0] != m:
        raise ValueError(f"{op}: m_indices must have {m} entries, one per row of d; got shape {tuple(m_indices.shape)}")
    if m_row_indices is not None:
        C.check_dim(op, "m_row_indices", m_row_indices, 1, "[M] (the row of a for each row of d)")
        if m_row_indices.shape[0] != m:
            raise ValueError(f"{op}: m_row_indices must have {m} entries like m_indices; "
                             f"got shape {tuple(m_row_indices.shape)}")

    if b_layout == "nt":
        C.check_dim(op, "b", b, 3, "[G, N, K]")
        inner = tuple(b.shape[1:])
        if inner == (n, k):
            b_nk = b
        elif inner == (k, n):       # [G, K, N] handed to nt: read as the nn layout
            b_nk = b.mT
        else:
            raise ValueError(f"{op}: b must have shape [G, N, K] = [G, {n}, {k}] (N from d, K from a; "
                             f"[G, {k}, {n}] is accepted too); got {tuple(b.shape)}")
    else:
        C.check_dim(op, "b", b, 3, "[G, K, N]")
        if tuple(b.shape[1:]) != (k, n):
            raise ValueError(f"{op}: b must have shape [G, K, N] = [G, {k}, {n}] (K from a, N from d); "
                             f"got {tuple(b.shape)}")
        b_nk = b.mT
    b_k_major = _b_major(op, b_nk, b)

    C.check_inner_contiguous(op, "a", a, "[M, K], K-major")
    C.check_inner_contiguous(op, "d", d, "[M, N], N-major")
    C.check_inner_contiguous(op, "m_indices", m_indices, "[M]")
    if m_row_indices is not None:
        C.check_inner_contiguous(op, "m_row_indices", m_row_indices, "[M]")
    C.check_no_internal_overlap(op, "d", d)
    C.check_no_overlap(op, "d", d, [("a", a), ("b", b), ("m_indices", m_indices), ("m_row_indices", m_row_indices)])
    return Plan(a, b_nk, d, m_indices, m_row_indices, b_k_major)


def run_m_grouped(op: str, plan: Plan, config=None) -> torch.Tensor:
    """Device checks, then the kernel. ``config``: fixed meta-parameters (tests), else autotuning."""
    a, b_nk, d, m_indices, rows, b_k_major = plan
    C.require_triton(op)
    C.check_devices(op, [("a", a), ("b", b_nk), ("d", d), ("m_indices", m_indices), ("m_row_indices", rows)])
    m, n = d.shape
    k = a.shape[1]
    if m == 0 or n == 0:
        return d
    if k == 0 or a.shape[0] == 0:   # nothing to multiply (or no row to gather): every row is zero
        d.zero_()
        return d
    kn = C.kernels(op, d.device)
    gather = rows is not None
    m_bucket = max(0, ((m + 127) // 128 - 1).bit_length())
    config = dict(config or {})
    use_tma = config.pop("TMA", None)
    if use_tma is None:
        use_tma = d.device.type == "cuda" and tma_eligible(plan)
    elif use_tma and not tma_eligible(plan):
        raise ValueError(f"{op}: _config asks for TMA, but the operands do not allow it")

    def grid(meta):
        return (C.cdiv(m, meta["BLOCK_M"]) * C.cdiv(n, meta["BLOCK_N"]),)

    def run(tuned, kernel, args, consts, set_blocks=None):
        """The autotuned kernel, or with fixed meta-parameters (``config``, or the interpreter's)."""
        if not config and tuned is not None:
            kn.launch(tuned, grid, args, consts, d.device)
            return
        meta = dict(kn.interpret_config(m, n), **config)
        if set_blocks is not None:
            set_blocks(meta)
        kn.launch(kernel, grid, args, dict(consts, **meta), d.device)

    if use_tma:
        a_desc, b_desc, d_desc, d_tma = _tma_descriptors(plan)
        args = (a_desc, b_desc, d_desc, a, b_nk, d, m_indices, m, n, k, b_nk.shape[0], m_bucket,
                a.stride(0), b_nk.stride(0), b_nk.stride(2), b_nk.stride(1), d.stride(0))
        run(kn.m_grouped_tma_kernel_tuned, kn.m_grouped_tma_kernel, args,
            dict(B_K_MAJOR=b_k_major, D_TMA=d_tma, UPCAST=kn.INTERPRET),
            lambda meta: kn.set_tma_blocks(dict(meta, a_desc=a_desc, b_desc=b_desc, d_desc=d_desc,
                                                B_K_MAJOR=b_k_major)))
    else:
        args = (a, b_nk, d, m_indices, rows if gather else m_indices, m, n, k, b_nk.shape[0], a.shape[0], m_bucket,
                a.stride(0), b_nk.stride(0), b_nk.stride(2), b_nk.stride(1), d.stride(0))
        run(kn.m_grouped_kernel_tuned, kn.m_grouped_kernel, args,
            dict(B_K_MAJOR=b_k_major, A_GATHER=gather, UPCAST=kn.INTERPRET))
    return d


# TMA (the tensor memory accelerator) needs 16-byte aligned bases and row strides. An MN-major b is read
# as [G*K, N] blocks, which must not run into the next group: K a multiple of every BLOCK_K candidate.
TMA_MN_MAJOR_K_MULTIPLE = 128


def _aligned(t: torch.Tensor, *strides: int) -> bool:
    return t.data_ptr() % 16 == 0 and all((s * t.element_size()) % 16 == 0 for s in strides)


def tma_eligible(plan: Plan) -> bool:
    """Whether the TMA kernel can run this call: no row gather, and operands TMA can describe as 2-D."""
    a, b_nk, _, _, rows, b_k_major = plan
    if rows is not None or not _aligned(a, a.stride(0)):
        return False
    num_groups, n, k = b_nk.shape
    if b_k_major:   # [G*N, K]: groups packed one after another, K contiguous
        return b_nk.stride(2) == 1 and (num_groups == 1 or b_nk.stride(0) == n * b_nk.stride(1)) and \
            _aligned(b_nk, b_nk.stride(1))
    return (b_nk.stride(1) == 1 and (num_groups == 1 or b_nk.stride(0) == k * b_nk.stride(2))
            and k % TMA_MN_MAJOR_K_MULTIPLE == 0 and _aligned(b_nk, b_nk.stride(2)))


def _tma_descriptors(plan: Plan):
    """Host-side descriptors (block shapes are set per config before the launch), and whether d is stored
    through its descriptor. When d's rows are not 16-byte aligned, a stand-in descriptor (over a) fills
    the argument and the kernel stores through pointers."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    a, b_nk, d, _, _, b_k_major = plan
    num_groups, n, k = b_nk.shape
    a_desc = TensorDescriptor(a, [a.shape[0], k], [a.stride(0), 1], [16, 16])
    if b_k_major:
        b_desc = TensorDescriptor(b_nk, [num_groups * n, k], [b_nk.stride(1), 1], [16, 16])
    else:
        b_desc = TensorDescriptor(b_nk, [num_groups * k, n], [b_nk.stride(2), 1], [16, 16])
    d_tma = (d.shape[1] == 1 or d.stride(1) == 1) and _aligned(d, d.stride(0))
    if d_tma:
        d_desc = TensorDescriptor(d, list(d.shape), [d.stride(0), 1], [16, 16])
    else:
        d_desc = TensorDescriptor(a, [a.shape[0], k], [a.stride(0), 1], [16, 16])
    return a_desc, b_desc, d_desc, d_tma


def m_grouped_bf16_gemm_nt_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                         m_indices: torch.Tensor, *, _config=None) -> torch.Tensor:
    """``d[r] = a[r] @ b[m_indices[r]].T`` — M-grouped BF16 GEMM, contiguous layout, Triton.

    Args:
        a: ``[M, K]`` bfloat16, K contiguous.
        b: ``[G, N, K]`` bfloat16 (the "nt" layout: each group's weight is ``[N, K]``), K-major (K
           contiguous) or MN-major (N contiguous, e.g. ``w.mT.contiguous().mT``). Accepted as well:
           ``[G, K, N]``, recognised from the shapes when ``b.shape[1:]`` is ``(K, N)`` but not ``(N, K)``;
           this is computed exactly as :func:`m_grouped_bf16_gemm_nn_contiguous_tl`. When ``N == K`` both
           readings fit and ``b`` is read as ``[G, N, K]``. Any other shape raises ``ValueError``. (This is
           what makes the documented call with ``a [1024, 256]``, ``b [1, 256, 1024]``, ``d [1024, 1024]``
           valid: with ``K = 256`` from ``a`` and ``N = 1024`` from ``d``, ``b`` can only be ``[G, K, N]``.)
        d: ``[M, N]`` bfloat16 (or float32), N contiguous; written in full (padding rows get zeros).
        m_indices: ``[M]`` int32, the group of each row of ``a``; ``-1`` marks padding rows.

    Returns ``d``. Raises before launching: ``TypeError`` (dtype), ``ValueError`` (shape, stride,
    overlap), ``ImportError`` (Triton missing), ``RuntimeError`` (device), ``NotImplementedError``
    (GPU older than sm_80).
    """
    if C.tracing():
        C.torch_op(_NT)(a, b, d, m_indices)
        return d
    return run_m_grouped(_NT, check_m_grouped(_NT, a, b, d, m_indices, b_layout="nt"), _config)


def m_grouped_bf16_gemm_nn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                         m_indices: torch.Tensor, *, _config=None) -> torch.Tensor:
    """``d[r] = a[r] @ b[m_indices[r]]`` — M-grouped BF16 GEMM with ``b [G, K, N]``.

    Same as :func:`m_grouped_bf16_gemm_nt_contiguous_tl` except that ``b`` must be ``[G, K, N]`` (N
    contiguous, or K contiguous: the MN-major view of an ``nt`` weight); no shape inference: a ``[G, N, K]``
    weight raises ``ValueError`` unless ``N == K``.
    """
    if C.tracing():
        C.torch_op(_NN)(a, b, d, m_indices)
        return d
    return run_m_grouped(_NN, check_m_grouped(_NN, a, b, d, m_indices, b_layout="nn"), _config)
