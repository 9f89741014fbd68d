"""DeepGEMM's names outside the GEMM op table, and the recipe_a/recipe_b rule of the traced (torch.compile)
path.

- ``einsum``, ``fp8_einsum``, ``tf32_hc_prenorm_gemm`` and the MQA-logits ops of the sparse-attention indexer
  (``_mqa_logits.py``, ``_paged_mqa.py``): Python wrappers that call their C++ entries in eager mode and
  ``torch.ops.deep_gemm.*`` while Dynamo traces (docs/einsum.md, docs/hc_prenorm_gemm.md,
  docs/mqa_logits.md, docs/paged_mqa_logits.md).
- ``k_grouped_fp8_gemm_tn_contiguous``: SM100-only in DeepGEMM too. It keeps DeepGEMM's exact signature, so
  code written against DeepGEMM imports and binds its arguments unchanged, then raises
  ``NotImplementedError`` naming the SM90 op to use instead."""

from typing import Optional

import torch

from .epilogue import Identity

_SM100 = 'needs SM100 (Blackwell); it does not run on SM90 (Hopper)'


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
                                     use_psum_layout=False, use_padded_sf_layout=False, epilogue=None):
    """SM100 only in DeepGEMM; on SM90 use :func:`deep_gemm.k_grouped_fp8_gemm_nt_contiguous`."""
    _unavailable('k_grouped_fp8_gemm_tn_contiguous', _SM100 + '; use k_grouped_fp8_gemm_nt_contiguous')


# ---- einsum and fp8_einsum (docs/einsum.md) -------------------------------------------------------------

def einsum(expr, a, b, d, c=None, use_cublaslt=False, epilogue=None):
    """BF16 einsum into ``d`` in place (DeepGEMM's SM90 forms; docs/einsum.md).

    - ``'bmk,bnk->mn'``: ``a`` ``[S, M, K]``, ``b`` ``[S, N, K]`` bfloat16; ``d`` ``[M, N]`` float32 with an
      optional float32 ``c`` (which may be ``d``), or bfloat16 without ``c``: ``d = c + sum_s a[s] @ b[s].T``.
    - ``'bhr,hdr->bhd'``: ``z[:, h] = x[:, h] @ y[h].T`` with ``x`` ``[B, H, R]``, ``y`` ``[H, D, R]``,
      ``z`` ``[B, H, D]``; ``'bhd,hdr->bhr'``: ``z[:, h] = x[:, h] @ y[h]`` (``z`` ``[B, H, R]``). ``y`` may be a
      strided slice such as ``fy[:, :, :r]`` when TMA can address it (16-byte aligned base and strides).

    One SM90 BF16 GEMM kernel launch (FP32 accumulation). ``use_cublaslt=True`` runs a loop of
    :func:`cublaslt_gemm_nt` / :func:`cublaslt_gemm_nn` calls instead (one per batch or head).
    ``epilogue`` (DeepGEMM 2.8) must be ``None`` or ``deep_gemm.epilogue.Identity()``. DeepGEMM 2.8 has ``epilogue`` as the 6th positional parameter,
    where 2.6 (and this function) has ``use_cublaslt``: a 6th positional argument that is neither a bool, an int nor
    ``None`` is taken for a 2.8 epilogue and rejected like one."""
    if use_cublaslt is None:
        use_cublaslt = False
    elif not isinstance(use_cublaslt, (bool, int)):
        epilogue, use_cublaslt = use_cublaslt, False
    if epilogue is not None and not isinstance(epilogue, Identity):
        raise ValueError(f'einsum: epilogue must be None or Identity (the only epilogue supported on SM90); got {epilogue!r}')
    if not isinstance(expr, str):
        raise TypeError(f'einsum: expr must be a str; got {type(expr).__name__}')
    if torch.compiler.is_dynamo_compiling():
        return torch.ops.deep_gemm.einsum(expr, a, b, d, c, bool(use_cublaslt))
    from . import _C
    _C._einsum(expr, a, b, d, c, bool(use_cublaslt))


def fp8_einsum(expr, a, b, d, c=None, recipe=(1, 128, 128), epilogue=None, use_128x4_sfd_layout=False):
    """FP8 einsum into ``d`` in place; on SM90 only ``'bhr,hdr->bhd'`` (docs/einsum.md):
    ``z[:, h] = (x[:, h] * sx) @ (y[h] * sy).T`` with ``a = (x, sx)``: ``x`` float8_e4m3fn ``[B, H, R]`` and
    ``sx`` float32 ``[B, H, ceil(R / 128)]`` (per token and 128 channels, e.g. ``per_token_cast_to_fp8`` of
    ``x.view(-1, R)``), ``b = (y, sy)``: ``y`` float8_e4m3fn ``[H, D, R]`` and ``sy`` float32
    ``[H, ceil(D / 128), ceil(R / 128)]`` (per 128x128 block), ``d`` bfloat16 ``[B, H, D]``; ``recipe`` (1, 128, 128).

    One SM90 FP8 1D2D kernel launch (after one transposing copy of ``sx``). DeepGEMM 2.8's ``epilogue`` must be
    ``None`` or ``Identity()``, and ``d`` a tensor or sgl-deep-gemm 0.2.5's ``(d, None)``: another epilogue or a
    ``(d, sfd)`` FP8 output (``use_128x4_sfd_layout``) is SM100-only."""
    if epilogue is not None and not isinstance(epilogue, Identity):
        raise ValueError(f'fp8_einsum: epilogue must be None or Identity; other epilogues are SM100-only; got {epilogue!r}')
    if isinstance(d, (tuple, list)):  # sgl-deep-gemm 0.2.5's (d, sfd): sfd None is a plain bfloat16 d
        if len(d) != 2 or d[1] is not None:
            raise ValueError('fp8_einsum: d given as a (d, sfd) pair with scales (an FP8 output) is SM100-only; pass a bfloat16 d '
                             'or (d, None)')
        d = d[0]
    if not isinstance(expr, str):
        raise TypeError(f'fp8_einsum: expr must be a str; got {type(expr).__name__}')
    for name, pair in (('a', a), ('b', b)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f'fp8_einsum: {name} must be a (tensor, scales) pair; got {type(pair).__name__}')
    recipe = [int(v) for v in recipe]
    if torch.compiler.is_dynamo_compiling():
        return torch.ops.deep_gemm.fp8_einsum(expr, a[0], a[1], b[0], b[1], d, c, recipe)
    from . import _C
    _C._fp8_einsum(expr, a[0], a[1], b[0], b[1], d, c, recipe)


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
