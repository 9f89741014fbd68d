"""DeepGEMM names that have no SM90 implementation in deep_gemm, and the recipe_a/recipe_b rule of the
traced (torch.compile) path.

Each function below keeps DeepGEMM's exact signature so code written against DeepGEMM imports and binds
its arguments unchanged, then raises ``NotImplementedError`` that says why: either the op needs SM100
in DeepGEMM too, or deep_gemm has not implemented it for SM90."""

from typing import Optional

import torch

_SM100 = 'needs SM100 (Blackwell); it does not run on SM90 (Hopper)'
_NOT_ON_SM90 = 'is not implemented on SM90 in deep_gemm'


def _unavailable(name: str, why: str):
    raise NotImplementedError(f'{name}: {why}')


def _resolve_recipe(op: str, recipe, recipe_a, recipe_b) -> Optional[list]:
    """The one recipe ``(g_mn_a, g_mn_b, g_k)`` meant by DeepGEMM's ``recipe`` / ``recipe_a`` / ``recipe_b``
    (the C++ fast path applies the same rule, csrc/python/fast_args.cpp)."""
    if recipe_a is None and recipe_b is None:
        return None if recipe is None else list(recipe)
    if recipe_a is None or recipe_b is None:
        raise ValueError(f'{op}: recipe_a and recipe_b must be given together; got recipe_a={recipe_a}, recipe_b={recipe_b}')
    if len(recipe_a) != 2 or len(recipe_b) != 2:
        raise TypeError(f'{op}: recipe_a and recipe_b must be pairs (mn granularity, k granularity); got {recipe_a}, {recipe_b}')
    if recipe_a[1] != recipe_b[1]:
        raise ValueError(f'{op}: recipe_a and recipe_b must have the same k granularity; got {recipe_a[1]} and {recipe_b[1]}')
    merged = [int(recipe_a[0]), int(recipe_b[0]), int(recipe_a[1])]
    if recipe is not None and list(recipe) != merged:
        raise ValueError(f'{op}: recipe {tuple(recipe)} conflicts with recipe_a/recipe_b, which give {tuple(merged)}')
    return merged


# ---- SM100-only GEMMs ----------------------------------------------------------------------------------

def k_grouped_fp8_gemm_tn_contiguous(a, b, d, ks_cpu, grouped_layout, c=None, recipe=(1, 1, 128), compiled_dims='mn',
                                     use_psum_layout=False):
    """SM100 only in DeepGEMM; on SM90 use :func:`deep_gemm.k_grouped_fp8_gemm_nt_contiguous`."""
    _unavailable('k_grouped_fp8_gemm_tn_contiguous', _SM100 + '; use k_grouped_fp8_gemm_nt_contiguous')


# ---- DeepGEMM SM90 ops that deep_gemm does not implement (yet) -----------------------------------------

def einsum(expr, a, b, d, c=None, use_cublaslt=False):
    """Not implemented here."""
    _unavailable('einsum', _NOT_ON_SM90)


def fp8_einsum(expr, a, b, d, c=None, recipe=(1, 128, 128)):
    """Not implemented here."""
    _unavailable('fp8_einsum', _NOT_ON_SM90)


from ._C import tf32_hc_prenorm_gemm as _c_tf32_hc_prenorm_gemm  # noqa: E402


def tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits=None):
    """TF32 ``d = a @ b.T`` and ``sqr_sum = (a.float() ** 2).sum(-1)`` in one pass over ``a``, written in place.

    - ``a``: bfloat16 ``[m, k]``; ``b``: float32 ``[n, k]`` with ``1 <= n <= 64``. Both K-major (unit stride
      along k) with 16-byte aligned starts and row strides (``k`` a multiple of 8 for a contiguous ``a``).
    - ``num_splits=None``: ``d`` float32 ``[m, n]`` and ``sqr_sum`` float32 ``[m]`` receive the full sums.
    - ``num_splits=S`` (1..1024): K is cut into S ranges of 64-wide blocks (``nkb = ceil(k / 64)``; split ``s``
      starts at block ``s * (nkb // S) + min(s, nkb % S)``, the first ``nkb % S`` splits get one block more,
      an empty split is written as zeros); ``d`` ``[S, m, n]`` and ``sqr_sum`` ``[S, m]`` receive the partial
      sums, and their sums over dim 0 are the results.
    - Arithmetic: ``a`` is exact in TF32; ``b`` is used at TF32 precision (its low 13 mantissa bits dropped,
      as the tensor core reads FP32 data); products are accumulated in FP32 by the tensor core, the squares
      in FP32. The result is deterministic for a given shape and GPU.
    - ``d`` needs unit stride along n, ``sqr_sum`` unit stride along m (other strides free, no overlap).

    See docs/hc_prenorm_gemm.md for the kernel.
    """
    if torch.compiler.is_dynamo_compiling():
        torch.ops.deep_gemm.tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits)
    else:
        _c_tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits)


# ---- attention indexer (DeepSeek-V3.2) ------------------------------------------------------------------

# The dense MQA logits are real (the fused SM90 kernel, deep_gemm/_mqa_logits.py).
from ._mqa_logits import fp8_fp4_mqa_logits, fp8_mqa_logits, get_mqa_logits_metadata  # noqa: E402,F401


# Paged MQA logits: real SM90 kernels (deep_gemm/_paged_mqa.py).
from ._paged_mqa import fp8_fp4_paged_mqa_logits, fp8_paged_mqa_logits, get_paged_mqa_logits_metadata  # noqa: E402,F401


__all__ = [name for name in dir() if not name.startswith('_') and name not in ('Optional', 'Sequence', 'torch')]
