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
            values are not checked against ``ks`` (that would synchronise).
        c: optional ``[G, M, N]`` float32 accumulator, or ``d`` itself.

    Returns ``d``. Raises before launching: ``TypeError`` (dtype, ``ks`` type), ``ValueError`` (shape,
    stride, overlap, ``ks`` values), ``ImportError`` (Triton missing), ``RuntimeError`` (device).
    """
    op = _TN
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
    C.require_triton(op)
    C.check_devices(op, [("a", a), ("b", b), ("d", d), ("c", c), ("ks_tensor", ks_tensor)])

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

    kn = C.kernels(op, d.device)
    has_c = c is not None
    c_arg = c if has_c else d
    args = (a, b, c_arg, d, offsets, m, n, a.stride(0), b.stride(0),
            c_arg.stride(0), c_arg.stride(1), d.stride(0), d.stride(1))
    upcast = kn.INTERPRET

    def cdiv(x, y):
        return (x + y - 1) // y

    if _config is None and kn.k_grouped_kernel_tuned is not None:
        grid = lambda meta: (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), num_groups)
        with torch.cuda.device(d.device):
            kn.k_grouped_kernel_tuned[grid](*args, HAS_C=has_c, UPCAST=upcast)
        return d
    meta = kn.interpret_config(m, n)
    if _config is not None:
        meta.update(_config)
    num_warps = meta.pop("num_warps", 4)
    num_stages = meta.pop("num_stages", 3)
    grid = (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), num_groups)
    if d.device.type == "cuda":
        with torch.cuda.device(d.device):
            kn.k_grouped_kernel[grid](*args, HAS_C=has_c, UPCAST=upcast,
                                      num_warps=num_warps, num_stages=num_stages, **meta)
    else:
        kn.k_grouped_kernel[grid](*args, HAS_C=has_c, UPCAST=upcast, **meta)
    return d
