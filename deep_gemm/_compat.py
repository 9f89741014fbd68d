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


def fp8_gemm_nt_skip_head_mid(a, b, d, head_splits, recipe=None, compiled_dims='nk', disable_ue8m0_cast=False):
    """SM100 only."""
    _unavailable('fp8_gemm_nt_skip_head_mid', _SM100)


# ---- DeepGEMM SM90 ops that deep_gemm does not implement (yet) -----------------------------------------

def einsum(expr, a, b, d, c=None, use_cublaslt=False):
    """Not implemented here."""
    _unavailable('einsum', _NOT_ON_SM90)


def fp8_einsum(expr, a, b, d, c=None, recipe=(1, 128, 128)):
    """Not implemented here."""
    _unavailable('fp8_einsum', _NOT_ON_SM90)


def tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits=None):
    """Not implemented here."""
    _unavailable('tf32_hc_prenorm_gemm', _NOT_ON_SM90)


# ---- attention indexer (DeepSeek-V3.2) ------------------------------------------------------------------

# The dense MQA logits are real (the fused SM90 kernel, deep_gemm/_mqa_logits.py).
from ._mqa_logits import fp8_fp4_mqa_logits, fp8_mqa_logits, get_mqa_logits_metadata  # noqa: E402,F401


# Paged MQA logits: real SM90 kernels (deep_gemm/_paged_mqa.py).
from ._paged_mqa import fp8_fp4_paged_mqa_logits, fp8_paged_mqa_logits, get_paged_mqa_logits_metadata  # noqa: E402,F401


__all__ = [name for name in dir() if not name.startswith('_') and name not in ('Optional', 'Sequence', 'torch')]
