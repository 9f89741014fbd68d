"""MQA logits of the sparse-attention indexer (DeepSeek V3.2 / V4, GLM-5): DeepGEMM's ``fp8_mqa_logits`` /
``fp8_fp4_mqa_logits`` (v2.6.1 and v2.8.1 call forms) and ``get_mqa_logits_metadata`` (v2.8.1), run by the
fused SM90 kernel ``deep_gemm/include/deep_gemm/impls/sm90_fp8_mqa_logits.cuh``. See docs/mqa_logits.md."""

import numbers
from typing import Tuple

import torch

from . import _C

_tracing = torch.compiler.is_dynamo_compiling
_c_fp8_mqa_logits = _C._fp8_mqa_logits_unpacked
_c_get_mqa_logits_metadata = _C.get_mqa_logits_metadata


def _is_int(value) -> bool:
    """An integer that is not a bool (Python, NumPy or a symbolic int under torch.compile)."""
    return isinstance(value, (numbers.Integral, torch.SymInt)) and not isinstance(value, bool)


def _pair(op: str, value, name: str) -> Tuple:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f'{op}: {name} must be a pair {"(q, None)" if name == "q" else "(kv, kv_scales)"}; got {type(value).__name__}')
    return value[0], value[1]


def _run(*args):
    """The op with the arguments of its schema (csrc/python/op_table.hpp): the C entry, or torch.ops while Dynamo traces."""
    return torch.ops.deep_gemm.fp8_mqa_logits(*args) if _tracing() else _c_fp8_mqa_logits(*args)


def _shifted_form(op: str, sixth, seventh, eighth, schedule_meta):
    """(clean_logits, max_seqlen_k, logits_dtype, schedule_meta) of a call whose sixth positional argument is an int
    ``max_seqlen_k``: v2.8.1's ``(…, max_seqlen_k, logits_dtype, schedule_meta)`` or 0.2.5's ``(…, max_seqlen_k,
    schedule_meta)``. ``seventh`` / ``eighth`` are what landed in the max_seqlen_k / logits_dtype parameters
    (their defaults 0 / torch.float32 when not given)."""
    logits_dtype = torch.float32
    if isinstance(seventh, torch.dtype):  # v2.8.1: the 7th is logits_dtype, the 8th (if any) schedule_meta
        if isinstance(eighth, torch.dtype) and eighth is not torch.float32:
            raise TypeError(f'{op}: logits_dtype given twice ({seventh} and {eighth})')
        logits_dtype, later = seventh, (None if isinstance(eighth, torch.dtype) else eighth)
    elif seventh is None or isinstance(seventh, torch.Tensor):  # 0.2.5: the 7th is schedule_meta
        logits_dtype, later = eighth, seventh
    elif _is_int(seventh) and seventh == 0:  # not given (its default)
        logits_dtype, later = eighth, None
    elif _is_int(seventh):
        raise TypeError(f'{op}: max_seqlen_k given twice: {sixth} (6th positional, the v2.8.1 / 0.2.5 form) and {seventh}')
    else:
        raise TypeError(f'{op}: after an int max_seqlen_k (6th positional) the 7th argument must be a torch.dtype (v2.8.1 '
                        f'logits_dtype) or a tensor or None (0.2.5 schedule_meta); got {type(seventh).__name__}')
    if later is not None and not isinstance(later, torch.Tensor):
        raise TypeError(f'{op}: schedule_meta must be a tensor or None; got {type(later).__name__}')
    if later is not None:
        if schedule_meta is not None:
            raise TypeError(f'{op}: schedule_meta given twice')
        schedule_meta = later
    return True, sixth, logits_dtype, schedule_meta


def fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0):
    """DeepGEMM v2.6.1's FP8 MQA logits with FP32 output: :func:`fp8_fp4_mqa_logits` with ``q`` a plain FP8
    tensor ``[S, H, D]`` (not a pair)."""
    kv_fp, kv_sf = _pair('fp8_mqa_logits', kv, 'kv')
    return _run(q, None, kv_fp, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, bool(clean_logits), int(max_seqlen_k),
                torch.float32, None)


def fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0,
                       logits_dtype=torch.float32, schedule_meta=None):
    """``logits[i, j] = sum_h weights[i, h] * relu(q[i, h] . kv[j]) * kv_scales[j]`` for
    ``ks[i] <= j < ke[i]`` (``ks``/``ke`` = ``cu_seq_len_k_start``/``cu_seq_len_k_end``), one fused kernel.

    - ``q``: ``(q_fp8, None)``, ``q_fp8`` float8_e4m3fn ``[S, H, D]`` contiguous, ``H`` in {32, 64}, ``D`` in
      {32, 64, 128}. An FP4 pair ``(q, q_sf)`` is SM100-only: NotImplementedError.
    - ``kv``: ``(kv_fp8 [S_kv, D] float8_e4m3fn, unit inner stride, 16-byte rows; kv_scales [S_kv] float32)``.
    - ``weights``: float32 ``[S, H]`` (unit stride along H). ``ks``/``ke``: int32 ``[S]`` contiguous; the
      kernel clamps them to ``[0, S_kv]`` (``ke <= ks``: an empty range).
    - ``max_seqlen_k == 0``: logits ``[S, S_kv]``, column ``j`` is kv row ``j``. ``max_seqlen_k > 0``
      ("compressed"): logits ``[S, max_seqlen_k]``, column ``c`` is kv row ``ks[i] + c`` for
      ``c < ke[i] - ks[i]``.
    - ``clean_logits``: every other element is ``-inf``; without it those are not written (they hold
      whatever the fresh allocation held). Unlike DeepGEMM (which refuses it), compressed logits may be clean.
    - ``logits_dtype``: torch.float32 or torch.bfloat16. Returns a contiguous tensor.

    Call forms, told apart by the type of the positional arguments (docs/compat_2_8.md, "Positional clashes
    between dialects"):

    - DeepGEMM v2.6.1 ``(q, kv, weights, ks, ke, clean_logits=True, max_seqlen_k=0, logits_dtype=torch.float32)``;
    - v2.8.1 ``(q, kv, weights, ks, ke, max_seqlen_k, logits_dtype=torch.float32, schedule_meta=None)``;
    - sgl-deep-gemm 0.2.5 ``(q, kv, weights, ks, ke, max_seqlen_k, schedule_meta=None)``.

    A sixth positional argument that is a ``bool`` is v2.6.1's ``clean_logits``; an ``int`` is ``max_seqlen_k``
    (v2.8.1 / 0.2.5). Then the seventh is ``logits_dtype`` when it is a ``torch.dtype`` (v2.8.1, and the eighth,
    if any, ``schedule_meta``) and ``schedule_meta`` when it is a tensor or None (0.2.5). The v2.8.1 and 0.2.5 forms
    have no ``clean_logits``: it is True (``-inf`` outside the ranges, what their callers mask with). A value of
    another type raises ``TypeError``. ``schedule_meta`` (from :func:`get_mqa_logits_metadata`) is accepted and
    not read."""
    op = 'fp8_fp4_mqa_logits'
    if _is_int(clean_logits):
        # v2.8.1 / 0.2.5 positional form: (..., max_seqlen_k, ...) landed in clean_logits, the rest one slot to the left.
        clean_logits, max_seqlen_k, logits_dtype, schedule_meta = _shifted_form(op, clean_logits, max_seqlen_k, logits_dtype,
                                                                               schedule_meta)
    if not isinstance(clean_logits, bool):
        raise TypeError(f'{op}: clean_logits must be a bool (or, in the v2.8.1 / 0.2.5 form, the 6th argument an int max_seqlen_k); '
                        f'got {type(clean_logits).__name__}')
    if not _is_int(max_seqlen_k):
        raise TypeError(f'{op}: max_seqlen_k must be an int; got {type(max_seqlen_k).__name__}')
    q_fp, q_sf = _pair(op, q, 'q')
    kv_fp, kv_sf = _pair(op, kv, 'kv')
    return _run(q_fp, q_sf, kv_fp, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits, max_seqlen_k, logits_dtype,
                schedule_meta)


def get_mqa_logits_metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads) -> torch.Tensor:
    """DeepGEMM v2.8.1's schedule for :func:`fp8_fp4_mqa_logits`. Here: int32 ``[ceil(S / (256 / num_heads)), 2]``,
    per CTA of the kernel (``256 / num_heads`` consecutive queries) the kv rows ``[start, end)`` it computes: the
    union of its queries' ranges clamped to ``[0, num_kv_tokens]`` (``[0, 0]`` when all are empty). The kernel
    derives the same ranges itself, so passing the result as ``schedule_meta`` is optional and changes nothing."""
    metadata = torch.ops.deep_gemm.get_mqa_logits_metadata if _tracing() else _c_get_mqa_logits_metadata
    return metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads)
