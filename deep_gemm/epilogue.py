"""The epilogue classes of sgl-deep-gemm 0.2.5 and DeepGEMM 2.8.1, for the ``epilogue=`` argument of the GEMMs.

What each one means on SM90 in deep_gemm (docs/compat_2_8.md, "epilogue="):

- :class:`Identity`: the plain store ``D = A @ B (+ C)``, the same as ``epilogue=None`` (or kind ``0``).
- :class:`Alpha`: ``D = alpha * A @ B (+ C)``, the same as ``alpha=``; taken where ``alpha=`` is, the dense
  ``fp8_gemm_*`` and ``bf16_gemm_*``. Giving both ``alpha=`` and ``Alpha`` raises ``ValueError``.
- :class:`FP8CastWithClamp` (0.2.5) and :class:`FP8Quantization` (2.8.1's name): an FP8 output ``D`` with
  its scales ``sfd`` written by the GEMM's epilogue. The SM90 kernels of deep_gemm store BF16 / FP32 only:
  ``NotImplementedError`` (DeepGEMM runs them on SM100).
- :class:`BF16StochasticRounding`: stochastic rounding of the BF16 store, SM100 in DeepGEMM:
  ``NotImplementedError``.

Any of them is rejected before any compile or launch."""

from typing import Optional

import torch


class Epilogue:
    """Base class of the GEMM epilogues; an instance of it is the plain store, as :class:`Identity`."""

    # Why deep_gemm cannot run this epilogue on SM90 (None: it can).
    _unsupported: Optional[str] = None

    def __repr__(self) -> str:
        fields = ', '.join(f'{k}={v!r}' for k, v in vars(self).items() if not isinstance(v, torch.Tensor))
        return f'{type(self).__name__}({fields})'


class Identity(Epilogue):
    """``D = A @ B (+ C)``: the plain store."""


class Alpha(Epilogue):
    """``D = alpha * A @ B (+ C)`` (C is not scaled)."""

    def __init__(self, alpha: float) -> None:
        self.alpha = float(alpha)


_FP8_OUTPUT = ('an FP8 output D with scales sfd written by the GEMM epilogue, which the SM90 kernels of deep_gemm '
               'lack (they store bfloat16 or float32; DeepGEMM runs this epilogue on SM100)')


class FP8CastWithClamp(Epilogue):
    """The product rounded to BF16, optionally clamped to ``[-clamp_value, clamp_value]``, then cast to FP8 with
    the scales ``sfd`` (``clamped_count``: a one-element uint32 counter of clamped values). Needs SM100."""

    _unsupported = _FP8_OUTPUT

    def __init__(self, sfd: torch.Tensor, clamp_value: Optional[float] = None,
                 clamped_count: Optional[torch.Tensor] = None) -> None:
        self.sfd, self.clamp_value, self.clamped_count = sfd, clamp_value, clamped_count


class FP8Quantization(Epilogue):
    """DeepGEMM 2.8.1's name for the FP8 output epilogue: ``D`` cast to FP8 with the scales ``sfd``. Needs SM100."""

    _unsupported = _FP8_OUTPUT

    def __init__(self, sfd: torch.Tensor) -> None:
        self.sfd = sfd


class BF16StochasticRounding(Epilogue):
    """Stochastic rounding of the BF16 output. Needs SM100."""

    _unsupported = 'stochastic rounding of the bfloat16 store, which the SM90 kernels of deep_gemm lack (SM100 in DeepGEMM)'


def resolve(op: str, epilogue, alpha=None, takes_alpha: bool = False):
    """The ``alpha`` a call means once its ``epilogue`` is read: ``alpha`` itself for no epilogue (``None``, kind
    ``0``, :class:`Identity` or the base :class:`Epilogue`), the class's value for :class:`Alpha` (where ``takes_alpha``). Anything else raises
    before any compile: ``NotImplementedError`` naming what is missing (or for an object that is no epilogue),
    ``ValueError`` for ``alpha=`` with :class:`Alpha`."""
    if epilogue is None or (isinstance(epilogue, int) and not isinstance(epilogue, bool) and epilogue == 0):
        return alpha  # DeepGEMM 2.8's wrappers pass epilogue=None as kind 0
    if not isinstance(epilogue, Epilogue):
        raise NotImplementedError(f'{op}: epilogue must be None (or kind 0), or Identity / Alpha of deep_gemm.epilogue: the plain '
                                  f'D = alpha * A @ B (+ C) store is the only epilogue on SM90 in deep_gemm; got {epilogue!r}')
    if epilogue._unsupported is not None:
        raise NotImplementedError(f'{op}: epilogue {type(epilogue).__name__} needs {epilogue._unsupported}')
    if not isinstance(epilogue, Alpha):
        return alpha  # Identity, or the base class (0.2.5's kind 0): the plain store
    if not takes_alpha:
        raise NotImplementedError(f'{op}: epilogue Alpha is taken by the dense fp8_gemm_* and bf16_gemm_* on SM90 in deep_gemm '
                                  f'(as alpha=); {op} has no alpha scaling')
    if alpha is not None:
        raise ValueError(f'{op}: give alpha= or epilogue=Alpha(...), not both; got alpha={alpha!r} and {epilogue!r}')
    return epilogue.alpha
