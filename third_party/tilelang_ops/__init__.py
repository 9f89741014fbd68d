"""DeepGEMM's ``tilelang_ops`` import path, backed by deep_gemm's own JIT kernels (no TileLang).

``swiglu_apply_weight_to_fp8`` and ``apply_weight_to_fp8`` are :func:`deep_gemm.swiglu_apply_weight_to_fp8`
and :func:`deep_gemm.apply_weight_to_fp8`; see their docstrings for the exact arithmetic and layouts."""

from .swiglu_apply_weight_to_fp8 import apply_weight_to_fp8, swiglu_apply_weight_to_fp8

__all__ = ['swiglu_apply_weight_to_fp8', 'apply_weight_to_fp8']
