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

def einsum(expr, a, b, d, c=None, use_cublaslt=False, epilogue=None):
    """BF16 einsum into ``d`` in place (DeepGEMM's SM90 forms; docs/einsum.md).

    - ``'bmk,bnk->mn'``: ``a`` ``[S, M, K]``, ``b`` ``[S, N, K]`` bfloat16; ``d`` ``[M, N]`` float32 with an
      optional float32 ``c`` (which may be ``d``), or bfloat16 without ``c``: ``d = c + sum_s a[s] @ b[s].T``.
    - ``'bhr,hdr->bhd'``: ``z[:, h] = x[:, h] @ y[h].T`` with ``x`` ``[B, H, R]``, ``y`` ``[H, D, R]``,
      ``z`` ``[B, H, D]``; ``'bhd,hdr->bhr'``: ``z[:, h] = x[:, h] @ y[h]`` (``z`` ``[B, H, R]``). ``y`` may be a
      strided slice such as ``fy[:, :, :r]`` when TMA can address it (16-byte aligned base and strides).

    One SM90 BF16 GEMM kernel launch (FP32 accumulation). ``use_cublaslt=True`` runs a loop of
    :func:`cublaslt_gemm_nt` / :func:`cublaslt_gemm_nn` calls instead (one per batch or head).
    ``epilogue`` (DeepGEMM 2.8) must be ``None``. DeepGEMM 2.8 has ``epilogue`` as the 6th positional parameter,
    where 2.6 (and this function) has ``use_cublaslt``: a 6th positional argument that is neither a bool, an int nor
    ``None`` is taken for a 2.8 epilogue and rejected like one."""
    if use_cublaslt is None:
        use_cublaslt = False
    elif not isinstance(use_cublaslt, (bool, int)):
        epilogue, use_cublaslt = use_cublaslt, False
    if epilogue is not None:
        raise ValueError(f'einsum: epilogue must be None (the only epilogue supported on SM90); got {epilogue!r}')
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
    ``None``, and ``d`` a tensor: an epilogue or a ``(d, sfd)`` FP8 output (``use_128x4_sfd_layout``) is SM100-only."""
    if epilogue is not None:
        raise ValueError(f'fp8_einsum: epilogue must be None; other epilogues are SM100-only; got {epilogue!r}')
    if isinstance(d, (tuple, list)):
        raise ValueError('fp8_einsum: d given as a (d, sfd) pair (an FP8 output with scales) is SM100-only; pass a bfloat16 d')
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


def tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits=None):
    """Not implemented here."""
    _unavailable('tf32_hc_prenorm_gemm', _NOT_ON_SM90)


# ---- attention indexer (DeepSeek-V3.2) ------------------------------------------------------------------

def fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0):
    """Not implemented here."""
    _unavailable('fp8_mqa_logits', _NOT_ON_SM90)


def fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0,
                       logits_dtype=torch.float32):
    """Not implemented here."""
    _unavailable('fp8_fp4_mqa_logits', _NOT_ON_SM90)


def get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms, indices=None):
    """Not implemented here."""
    _unavailable('get_paged_mqa_logits_metadata', _NOT_ON_SM90)


def fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits=False,
                         indices=None):
    """Not implemented here."""
    _unavailable('fp8_paged_mqa_logits', _NOT_ON_SM90)


def fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits=False,
                             logits_dtype=torch.float32, indices=None):
    """Not implemented here."""
    _unavailable('fp8_fp4_paged_mqa_logits', _NOT_ON_SM90)


__all__ = [name for name in dir() if not name.startswith('_') and name not in ('Optional', 'Sequence', 'torch')]
