"""Shared helpers of ``deep_gemm.legacy``: Triton availability, interpreter detection, argument checks.

Nothing here imports Triton or ``deep_gemm._C`` at module import time, so ``import deep_gemm.legacy``
works on machines without Triton; the kernels module (``_kernels``) is imported on first use.

Checks follow the library's error rules (docs/architecture.md, "Errors and accuracy"): wrong dtype -> ``TypeError``; wrong shape, stride or overlap -> ``ValueError``;
wrong or mixed device -> ``RuntimeError``; a GPU too old for BF16 ``tl.dot`` -> ``NotImplementedError``.
Messages read ``"<op>: <what> must ...; got ..."``.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

import torch
from torch._subclasses.fake_tensor import FakeTensor

_TRITON_IMPORT_ERROR: Optional[BaseException] = None
_TRITON_CHECKED = False


def triton_available() -> bool:
    """True when ``import triton`` succeeds (the result is cached)."""
    global _TRITON_CHECKED, _TRITON_IMPORT_ERROR
    if not _TRITON_CHECKED:
        try:
            import triton  # noqa: F401
            import triton.language  # noqa: F401
        except Exception as exc:  # ImportError, or a broken installation
            _TRITON_IMPORT_ERROR = exc
        _TRITON_CHECKED = True
    return _TRITON_IMPORT_ERROR is None


def require_triton(op: str) -> None:
    """Raise ``ImportError`` with an actionable message when Triton cannot be imported."""
    if not triton_available():
        raise ImportError(
            f"{op}: deep_gemm.legacy needs Triton, which could not be imported "
            f"({type(_TRITON_IMPORT_ERROR).__name__}: {_TRITON_IMPORT_ERROR}); "
            f"install it with `pip install triton` (Triton >= 3.0)") from _TRITON_IMPORT_ERROR


def cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


# True while torch.compile / torch.export traces the caller (the public functions then call their
# ``torch.ops.deep_gemm`` op, which the graph can record, instead of launching). Bound directly: checked
# on every eager call.
tracing = torch.compiler.is_dynamo_compiling


def torch_op(name: str):
    """The ``torch.library`` op of a legacy function (registered by ``deep_gemm.legacy._ops``)."""
    return getattr(torch.ops.deep_gemm, name)


def interpreter_enabled() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    value = os.environ.get("TRITON_INTERPRET", "0").strip().lower()
    return value in ("1", "true", "on", "yes")


def kernels(op: str, device: torch.device):
    """The Triton kernels module, imported on first use (``TRITON_INTERPRET`` is read then, once)."""
    from . import _kernels
    if device.type == "cpu" and not _kernels.INTERPRET:
        raise RuntimeError(f"{op}: CPU tensors need the Triton interpreter, but the kernels were already "
                           f"compiled for the GPU in this process (set TRITON_INTERPRET=1 before the first "
                           f"call, in a fresh process)")
    return _kernels


# ---------------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------------

_DTYPE_NAMES = {
    torch.bfloat16: "bfloat16",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.int32: "int32",
    torch.int64: "int64",
}


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def check_tensor(op: str, name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor; got {type(t).__name__}")
    if t.layout != torch.strided:  # sparse / mkldnn: no strides or data pointer for the kernels
        raise ValueError(f"{op}: {name} must be a strided (dense) tensor; got layout {t.layout}")


def check_dtype(op: str, name: str, t: torch.Tensor, allowed: Sequence[torch.dtype]) -> None:
    check_tensor(op, name, t)
    if t.dtype not in allowed:
        want = " or ".join(dtype_name(d) for d in allowed)
        raise TypeError(f"{op}: {name} must have dtype {want}; got {dtype_name(t.dtype)}")


def check_dim(op: str, name: str, t: torch.Tensor, ndim: int, layout: str) -> None:
    if t.dim() != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D {layout}; got shape {tuple(t.shape)}")


def check_inner_contiguous(op: str, name: str, t: torch.Tensor, layout: str) -> None:
    """The last dimension must have unit stride (dimensions of size 1 have no stride constraint)."""
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(
            f"{op}: {name} must be contiguous in its last dimension ({layout}); "
            f"got shape {tuple(t.shape)} with strides {tuple(t.stride())}")


def _has_storage(t: torch.Tensor) -> bool:
    """False for meta tensors and FakeTensors (tracing), whose addresses mean nothing."""
    return t.device.type != "meta" and not isinstance(t, FakeTensor)


def _byte_span(t: torch.Tensor):
    if t.numel() == 0 or not _has_storage(t):
        return None
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + extent * t.element_size()


def check_no_overlap(op: str, out_name: str, out: torch.Tensor, others) -> None:
    """``out`` must not share memory with any of ``others`` (``(name, tensor)`` pairs)."""
    out_span = _byte_span(out)
    if out_span is None:
        return
    for name, t in others:
        if t is None:
            continue
        span = _byte_span(t)
        if span is None or t.device != out.device:
            continue
        if out_span[0] < span[1] and span[0] < out_span[1]:
            raise ValueError(f"{op}: {out_name} must not overlap {name} in memory")


def check_no_internal_overlap(op: str, name: str, t: torch.Tensor) -> None:
    """A written tensor must not map two indices onto one element (an ``expand``-ed view, or rows that
    overlap through ``as_strided``): the kernels' tiles would then race on, and overwrite, shared elements.
    The test is the sufficient one: with the dims sorted by stride, each stride must step past everything
    the smaller-stride dims span. (It rejects a few exotic interleaved layouts that do not overlap.)"""
    dims = sorted((stride, size) for size, stride in zip(t.shape, t.stride()) if size > 1)
    if t.numel() == 0:
        return
    span = 0  # elements covered by the dims seen so far, minus one
    for stride, size in dims:
        if stride <= span:
            what = "zero strides (broadcast views cannot be written)" if stride == 0 else "elements that overlap in memory"
            raise ValueError(f"{op}: {name} must not have {what}; got shape {tuple(t.shape)} with strides {tuple(t.stride())}")
        span += (size - 1) * stride


def check_devices(op: str, tensors) -> torch.device:
    """All tensors on one device; CUDA (or CPU under the Triton interpreter); BF16-capable GPU."""
    named = [(n, t) for n, t in tensors if t is not None]
    device = named[0][1].device
    for name, t in named[1:]:
        if t.device != device:
            raise RuntimeError(f"{op}: all tensors must be on one device; {named[0][0]} is on {device} "
                               f"but {name} is on {t.device}")
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if major < 8:
            raise NotImplementedError(
                f"{op}: the Triton BF16 kernels need compute capability 8.0 or newer; "
                f"{torch.cuda.get_device_name(device)} is sm_{major}{minor}")
    elif device.type == "cpu" and interpreter_enabled():
        pass
    else:
        raise RuntimeError(f"{op}: tensors must be on a CUDA device; got {device} "
                           f"(CPU tensors run only under the Triton interpreter, TRITON_INTERPRET=1)")
    return device
