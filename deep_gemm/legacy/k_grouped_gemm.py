"""K-grouped BF16 GEMM in Triton (contiguous layout), DeepGEMM naming with a ``_tl`` suffix.

Layout (as DeepGEMM's ``k_grouped_*_tn_contiguous``, the weight-gradient GEMM of a MoE layer): ``G``
problems share M and N and differ in K; their K slices are concatenated along the first dimension::

    a [sum(ks), M]   bfloat16, M contiguous      (group g owns rows  off[g] : off[g] + ks[g])
    b [sum(ks), N]   bfloat16, N contiguous
    d [G, M, N]      float32,  N contiguous
    d[g] = c[g] + a[off[g]:off[g+1]].T @ b[off[g]:off[g+1]]      (c optional; FP32 accumulation)

``c`` may be ``d`` itself (in-place accumulation ``d += ...``); otherwise it must not overlap ``d``.
A group with ``ks[g] == 0`` gets ``d[g] = c[g]`` (or zeros).
"""

from __future__ import annotations

import numbers
from typing import Optional, Sequence

import torch

from . import _common as C

__all__ = ["k_grouped_bf16_gemm_tn_contiguous_tl"]

_TN = "k_grouped_bf16_gemm_tn_contiguous_tl"


def _same_view(x: torch.Tensor, y: torch.Tensor) -> bool:
    return (x.data_ptr() == y.data_ptr() and x.shape == y.shape and x.stride() == y.stride()
            and x.dtype == y.dtype and x.device == y.device)


def check_k_grouped(op: str, a, b, d, ks, ks_tensor, c):
    """Checks that need no device (see the public function for the arguments); returns
    ``(ks as ints, c is d)``."""
    C.check_dtype(op, "a", a, (torch.bfloat16,))
    C.check_dtype(op, "b", b, (torch.bfloat16,))
    C.check_dtype(op, "d", d, (torch.float32,))
    if c is not None:
        C.check_dtype(op, "c", c, (torch.float32,))
    if ks_tensor is not None:
        C.check_dtype(op, "ks_tensor", ks_tensor, (torch.int32,))
    if isinstance(ks, torch.Tensor) or not isinstance(ks, (list, tuple)):
        raise TypeError(f"{op}: ks must be a list or tuple of ints (host values); got {type(ks).__name__}")
    for x in ks:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise TypeError(f"{op}: ks must contain ints; got {type(x).__name__}")

    C.check_dim(op, "a", a, 2, "[sum(ks), M]")
    C.check_dim(op, "b", b, 2, "[sum(ks), N]")
    C.check_dim(op, "d", d, 3, "[G, M, N]")
    num_groups, m, n = d.shape
    total_k = a.shape[0]
    if a.shape[1] != m:
        raise ValueError(f"{op}: a must have shape [sum(ks), M] with M = {m} (from d); got {tuple(a.shape)}")
    if tuple(b.shape) != (total_k, n):
        raise ValueError(f"{op}: b must have shape [sum(ks), N] = [{total_k}, {n}] (sum(ks) from a, N from d); "
                         f"got {tuple(b.shape)}")
    if len(ks) != num_groups:
        raise ValueError(f"{op}: ks must have one entry per group (G = {num_groups} from d); got {len(ks)}")
    ks = [int(x) for x in ks]
    if any(x < 0 for x in ks):
        raise ValueError(f"{op}: ks must be non-negative; got {list(ks)}")
    if sum(ks) != total_k:
        raise ValueError(f"{op}: sum(ks) must equal a.shape[0] = {total_k}; got {sum(ks)}")
    if ks_tensor is not None:
        C.check_dim(op, "ks_tensor", ks_tensor, 1, "[G]")
        if ks_tensor.shape[0] != num_groups:
            raise ValueError(f"{op}: ks_tensor must have {num_groups} entries; got shape {tuple(ks_tensor.shape)}")
    c_is_d = False
    if c is not None:
        if tuple(c.shape) != tuple(d.shape):
            raise ValueError(f"{op}: c must have the shape of d {tuple(d.shape)}; got {tuple(c.shape)}")
        c_is_d = _same_view(c, d)
        C.check_inner_contiguous(op, "c", c, "[G, M, N], N-major")
    C.check_inner_contiguous(op, "a", a, "[sum(ks), M], M-major")
    C.check_inner_contiguous(op, "b", b, "[sum(ks), N], N-major")
    C.check_inner_contiguous(op, "d", d, "[G, M, N], N-major")
    C.check_no_internal_overlap(op, "d", d)
    others = [("a", a), ("b", b), ("ks_tensor", ks_tensor)]
    if c is not None and not c_is_d:
        others.append(("c", c))
    C.check_no_overlap(op, "d", d, others)
    return ks, c_is_d


def run_k_grouped(op: str, a, b, d, c, k_start, k_end, k_idx, gather: int, k_total: int, src_rows: int,
                  config=None) -> torch.Tensor:
    """Launch the k-grouped kernel (arguments checked, devices checked, problem not empty). ``c``: the
    accumulator or None (may be ``d``); ``k_start``/``k_end``: int32 ``[G]`` device tensors; ``k_idx``:
    the gather index (``gather`` 1: rows of ``a``, 2: rows of ``b``) or None."""
    num_groups, m, n = d.shape
    kn = C.kernels(op, d.device)
    has_c = c is not None
    c_arg = c if has_c else d
    args = (a, b, c_arg, d, k_start, k_end, k_idx if k_idx is not None else k_start, m, n, k_total, src_rows,
            a.stride(0), b.stride(0), c_arg.stride(0), c_arg.stride(1), d.stride(0), d.stride(1))
    consts = dict(GATHER=gather, HAS_C=has_c, UPCAST=kn.INTERPRET)

    def grid(meta):
        return (C.cdiv(m, meta["BLOCK_M"]) * C.cdiv(n, meta["BLOCK_N"]), num_groups)

    if config is None and kn.k_grouped_kernel_tuned is not None:
        kn.launch(kn.k_grouped_kernel_tuned, grid, args, consts, d.device)
        return d
    meta = kn.interpret_config(m, n)
    if config is not None:
        meta.update(config)
    kn.launch(kn.k_grouped_kernel, grid, args, dict(consts, **meta), d.device)
    return d


def run_plain_k_grouped(op, a, b, d, ks, ks_tensor, c, c_is_d, config):
    C.require_triton(op)
    C.check_devices(op, [("a", a), ("b", b), ("d", d), ("c", c), ("ks_tensor", ks_tensor)])
    num_groups, m, n = d.shape
    total_k = a.shape[0]
    if num_groups == 0 or m == 0 or n == 0:
        return d
    if total_k == 0:  # nothing to multiply: d = c, or zeros (no kernel compiled)
        if c is None:
            d.zero_()
        elif not c_is_d:
            d.copy_(c)
        return d
    if ks_tensor is not None:
        offsets = torch.zeros(num_groups + 1, dtype=torch.int32, device=d.device)
        offsets[1:] = torch.cumsum(ks_tensor, dim=0, dtype=torch.int32)
    else:
        host, acc = [0], 0
        for x in ks:
            acc += x
            host.append(acc)
        offsets = torch.tensor(host, dtype=torch.int32).to(d.device, non_blocking=True)
    return run_k_grouped(op, a, b, d, c, offsets[:-1], offsets[1:], None, 0, total_k, 0, config)


def k_grouped_bf16_gemm_tn_contiguous_tl(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                         ks: Sequence[int], ks_tensor: Optional[torch.Tensor] = None,
                                         c: Optional[torch.Tensor] = None, *, _config=None) -> torch.Tensor:
    """``d[g] = (c[g] +) a_g.T @ b_g`` for K-slices ``a_g``/``b_g`` of ``a [sum(ks), M]``/``b [sum(ks), N]``.

    Args:
        a: ``[sum(ks), M]`` bfloat16, M contiguous (each group's ``[K_g, M]`` slice is A^T, "t").
        b: ``[sum(ks), N]`` bfloat16, N contiguous.
        d: ``[G, M, N]`` float32, N contiguous. Written in full.
        ks: host sequence of ``G`` non-negative ints, the K of each group.
        ks_tensor: optional int32 ``[G]`` tensor on the device holding the same values as ``ks``; when
            given, the group offsets are computed from it on the device (no host-to-device copy). Its
            values are not checked against ``ks`` (that would synchronise); the kernel clamps every
            group's range to ``[0, sum(ks)]``, so wrong values give wrong sums, never stray accesses.
        c: optional ``[G, M, N]`` float32 accumulator, or ``d`` itself.

    Returns ``d``. Raises before launching: ``TypeError`` (dtype, ``ks`` type), ``ValueError`` (shape,
    stride, overlap, ``ks`` values), ``ImportError`` (Triton missing), ``RuntimeError`` (device).
    """
    if C.tracing():
        C.torch_op(_TN)(a, b, d, list(ks) if isinstance(ks, (list, tuple)) else ks, ks_tensor, c)
        return d
    ks, c_is_d = check_k_grouped(_TN, a, b, d, ks, ks_tensor, c)
    return run_plain_k_grouped(_TN, a, b, d, ks, ks_tensor, c, c_is_d, _config)


# ---------------------------------------------------------------------------------------------------
# The gathering variants (a_fused / b_fused modules): group ranges and row indices on the device
# ---------------------------------------------------------------------------------------------------

def unpack_handle(op: str, handle):
    if isinstance(handle, torch.Tensor) or not isinstance(handle, (tuple, list)) or len(handle) != 3:
        raise TypeError(f"{op}: handle must be a triple (k_indices, k_start, k_end) of int32 tensors; "
                        f"got {type(handle).__name__}"
                        + (f" of length {len(handle)}" if isinstance(handle, (tuple, list)) else ""))
    for name, t in zip(("k_indices", "k_start", "k_end"), handle):
        C.check_tensor(op, name, t)
    return tuple(handle)


def check_fused_k_grouped(op: str, a, b, d, k_indices, k_start, k_end, acc, gathered: str) -> None:
    """Checks that need no device. ``gathered``: ``"a"`` (a is ``[T, M]``, b ``[K, N]``) or ``"b"`` (a is
    ``[K, M]``, b ``[T, N]``); ``k_indices`` has one entry per K position."""
    C.check_dtype(op, "a", a, (torch.bfloat16,))
    C.check_dtype(op, "b", b, (torch.bfloat16,))
    C.check_dtype(op, "d", d, (torch.float32, torch.bfloat16))
    for name, t in (("k_indices", k_indices), ("k_start", k_start), ("k_end", k_end)):
        C.check_dtype(op, name, t, (torch.int32,))
    if not isinstance(acc, bool):
        raise TypeError(f"{op}: acc must be a bool; got {type(acc).__name__}")
    a_rows = "T" if gathered == "a" else "K"
    b_rows = "T" if gathered == "b" else "K"
    C.check_dim(op, "a", a, 2, f"[{a_rows}, M]")
    C.check_dim(op, "b", b, 2, f"[{b_rows}, N]")
    C.check_dim(op, "d", d, 3, "[G, M, N]")
    for name, t in (("k_indices", k_indices), ("k_start", k_start), ("k_end", k_end)):
        C.check_dim(op, name, t, 1, "a 1-D tensor")
    num_groups, m, n = d.shape
    if a.shape[1] != m:
        raise ValueError(f"{op}: a must have shape [{a_rows}, M] with M = {m} (from d); got {tuple(a.shape)}")
    if b.shape[1] != n:
        raise ValueError(f"{op}: b must have shape [{b_rows}, N] with N = {n} (from d); got {tuple(b.shape)}")
    positions = b.shape[0] if gathered == "a" else a.shape[0]
    plain = "b" if gathered == "a" else "a"
    if k_indices.shape[0] != positions:
        raise ValueError(f"{op}: k_indices must have one entry per row of {plain} ({positions}); "
                         f"got shape {tuple(k_indices.shape)}")
    for name, t in (("k_start", k_start), ("k_end", k_end)):
        if t.shape[0] != num_groups:
            raise ValueError(f"{op}: {name} must have one entry per group (G = {num_groups} from d); "
                             f"got shape {tuple(t.shape)}")
    C.check_inner_contiguous(op, "a", a, f"[{a_rows}, M], M-major")
    C.check_inner_contiguous(op, "b", b, f"[{b_rows}, N], N-major")
    C.check_inner_contiguous(op, "d", d, "[G, M, N], N-major")
    for name, t in (("k_indices", k_indices), ("k_start", k_start), ("k_end", k_end)):
        C.check_inner_contiguous(op, name, t, "1-D")
    C.check_no_internal_overlap(op, "d", d)
    C.check_no_overlap(op, "d", d, [("a", a), ("b", b), ("k_indices", k_indices), ("k_start", k_start),
                                    ("k_end", k_end)])


def run_fused_k_grouped(op: str, a, b, d, k_indices, k_start, k_end, acc: bool, gathered: str,
                        config=None) -> torch.Tensor:
    C.require_triton(op)
    C.check_devices(op, [("a", a), ("b", b), ("d", d), ("k_indices", k_indices), ("k_start", k_start),
                         ("k_end", k_end)])
    num_groups, m, n = d.shape
    positions = k_indices.shape[0]
    src_rows = a.shape[0] if gathered == "a" else b.shape[0]
    if num_groups == 0 or m == 0 or n == 0:
        return d
    if positions == 0 or src_rows == 0:   # every product is zero: d unchanged (acc) or zeros
        if not acc:
            d.zero_()
        return d
    return run_k_grouped(op, a, b, d, d if acc else None, k_start, k_end, k_indices, 1 if gathered == "a" else 2,
                         positions, src_rows, config)


def fused_k_grouped(op: str, gathered: str, a, b, d, handle, acc, config=None) -> torch.Tensor:
    """The public a_fused / b_fused K-grouped entry: the torch op under tracing, else check and run."""
    k_indices, k_start, k_end = unpack_handle(op, handle)
    if C.tracing():
        C.torch_op(op)(a, b, d, k_indices, k_start, k_end, acc)
        return d
    check_fused_k_grouped(op, a, b, d, k_indices, k_start, k_end, acc, gathered)
    return run_fused_k_grouped(op, a, b, d, k_indices, k_start, k_end, acc, gathered, config)
