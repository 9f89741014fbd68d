"""DeepGEMM 2.8 call forms: ``alpha=`` and ``epilogue=`` on the GEMMs, :func:`use_deterministic_algorithms`
and :func:`shutdown` (docs/compat_2_8.md).

The generated GEMM wrappers (deep_gemm/_wrappers.py) take the extra keywords last, after DeepGEMM
2.6.1's parameters, so positional calls of the older form bind as before; they call into this module only
when ``alpha`` or ``epilogue`` is given, so a call without them costs what it did.

``alpha`` (``D = alpha * A @ B (+ C)``):
- ``None`` or ``1.0``: the call runs exactly as without it (same kernel, same arguments).
- FP8 GEMMs: ``alpha`` is folded into B's scale factors (``sfb * alpha``, one FP32 rounding per scale,
  exact for powers of two), which the kernel already multiplies into every K block's partial sum during
  promotion, so no kernel or generated source changes and C is not scaled.
- BF16 GEMMs: the call runs through cuBLASLt with ``alpha`` applied in cuBLASLt's epilogue (our BF16
  kernel has no runtime scale). Validated as the plain ``bf16_gemm_*`` call (same rules, errors under its
  name), so alpha changes no acceptance; a ``c`` of another dtype than ``d`` is first rounded to ``d``'s dtype.
"""

import atexit
import numbers

import torch

from . import _C
from .epilogue import resolve as _resolve_epilogue

# The wrappers' layout letters -> api::CublasLtLayout (csrc/apis/cublaslt.hpp).
_LAYOUTS = {'nt': 0, 'nn': 1, 'tn': 2, 'tt': 3}

_deterministic = False


def _alpha_value(op: str, alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f'{op}: alpha must be a real number or None; got {type(alpha).__name__}')
    return float(alpha)


def fp8_scaled_b(op: str, b, alpha, epilogue):
    """``b`` with its scales multiplied by ``alpha`` (``b`` itself when alpha is None or 1); an ``Alpha`` epilogue
    (deep_gemm.epilogue) gives alpha."""
    alpha = _resolve_epilogue(op, epilogue, alpha, takes_alpha=True)
    if alpha is None:
        return b
    value = _alpha_value(op, alpha)
    if value == 1.0:
        return b
    if not (isinstance(b, (tuple, list)) and len(b) == 2 and isinstance(b[1], torch.Tensor)):
        raise TypeError(f'{op}: b must be a (tensor, scales) pair; got {type(b).__name__}')
    if b[1].dtype != torch.float32:  # as the op itself requires: scaling must not turn packed scales into floats
        raise TypeError(f'{op}: sfb must have dtype float32 to take alpha; got {str(b[1].dtype).replace("torch.", "")}')
    return (b[0], b[1] * value)


def bf16_scaled(op: str, a, b, d, c, alpha, epilogue) -> bool:
    """Runs ``d = c + alpha * (a @ b)`` through cuBLASLt and returns True; False (nothing done) when alpha is
    None or 1, so the caller runs its kernel. An ``Alpha`` epilogue (deep_gemm.epilogue) gives alpha."""
    alpha = _resolve_epilogue(op, epilogue, alpha, takes_alpha=True)
    if alpha is None:
        return False
    value = _alpha_value(op, alpha)
    if value == 1.0:
        return False
    from ._compat025 import get_compile_mode
    if get_compile_mode():  # set_compile_mode(1): nothing is launched, and cuBLASLt has no kernel of ours to build
        return True
    layout = _LAYOUTS[op[-2:]]
    if torch.compiler.is_dynamo_compiling():
        torch.ops.deep_gemm._cublaslt_gemm_scaled(layout, a, b, d, c, value)
    else:
        _C._cublaslt_gemm_scaled(layout, a, b, d, c, value)
    return True


def grouped_epilogue(op: str, epilogue) -> None:
    """The grouped FP8 GEMMs take ``epilogue`` (DeepGEMM 2.8, sgl-deep-gemm 0.2.5) but no ``alpha``."""
    _resolve_epilogue(op, epilogue)


def use_deterministic_algorithms(enabled: bool) -> None:
    """DeepGEMM 2.8's switch for bitwise run-to-run reproducible results. Every SM90 kernel of deep_gemm is
    already deterministic, so this only records the choice (:func:`get_deterministic_algorithms`):

    - no kernel accumulates floating-point values with atomics; each output element is summed by one thread
      in a fixed K order;
    - FP8 split-K (small dense ``fp8_gemm_nt`` problems) writes each unit's partial tile to its own workspace
      slot; the unit that finishes last (found with an integer atomic counter) adds the partials in split
      order 0, 1, ..., so the sum does not depend on which unit finishes last;
    - the config choice (tiles, split-K) is a function of the shape, the SM count and the knobs, so the same
      call on the same GPU model runs the same kernel;
    - cuBLASLt (``cublaslt_gemm_*``, BF16 with ``alpha``) is used with one cached algorithm per shape and
      layout and a fixed workspace, for which cuBLASLt documents bitwise reproducible results on one GPU
      architecture and SM count.
    Results can differ between GPU models or SM counts (another config) and between library versions."""
    global _deterministic
    if not isinstance(enabled, bool):
        raise TypeError(f'use_deterministic_algorithms: enabled must be a bool; got {type(enabled).__name__}')
    _deterministic = enabled


def get_deterministic_algorithms() -> bool:
    """The value last given to :func:`use_deterministic_algorithms` (False by default); every kernel is
    deterministic either way."""
    return _deterministic


def shutdown() -> None:
    """Releases deep_gemm's cuBLASLt handles, workspaces and cached plans, after waiting for the devices
    that used them (DeepGEMM 2.8). Registered with :mod:`atexit`; safe to call more than once. The ops keep
    working afterwards: the next cuBLASLt call creates its handle and workspace again. Do not call it while
    other threads run GEMMs. JIT-compiled kernels stay loaded (the CUDA driver unloads them at exit)."""
    _C._cublaslt_shutdown()


atexit.register(shutdown)


def wrapper_extras(name: str):
    """The 2.8 keywords of a generated GEMM wrapper (after all of its 2.6.1 parameters) and the lines that
    handle them before the call: ``(params, prelude)``, both empty for ops that take none."""
    if name in ('fp8_gemm_nt', 'fp8_gemm_nn', 'fp8_gemm_tn', 'fp8_gemm_tt'):
        return ['alpha: Optional[float] = None', 'epilogue=None'], (
            f'    if alpha is not None or epilogue is not None:\n'
            f'        b = _compat28.fp8_scaled_b({name!r}, b, alpha, epilogue)\n')
    if name.startswith('bf16_gemm_'):
        return ['alpha: Optional[float] = None', 'epilogue=None'], (
            f'    if (alpha is not None or epilogue is not None) and _compat28.bf16_scaled({name!r}, a, b, d, c, alpha, epilogue):\n'
            f'        return\n')
    if name in ('m_grouped_fp8_gemm_nt_contiguous', 'm_grouped_fp8_gemm_nt_masked', 'k_grouped_fp8_gemm_nt_contiguous'):
        return ['epilogue=None'], f'    if epilogue is not None:\n        _compat28.grouped_epilogue({name!r}, epilogue)\n'
    return [], ''
