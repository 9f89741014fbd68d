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


def _run(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits: bool, max_seqlen_k: int, logits_dtype, schedule_meta):
    if _tracing():
        return torch.ops.deep_gemm.fp8_mqa_logits(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits, max_seqlen_k, logits_dtype,
                                                  schedule_meta)
    return _c_fp8_mqa_logits(q, q_sf, kv, kv_sf, weights, ks, ke, clean_logits, max_seqlen_k, logits_dtype, schedule_meta)


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

    Call forms: DeepGEMM v2.6.1 ``(q, kv, weights, ks, ke, clean_logits=True, max_seqlen_k=0,
    logits_dtype=torch.float32)`` and v2.8.1 ``(q, kv, weights, ks, ke, max_seqlen_k, logits_dtype=torch.float32,
    schedule_meta=None)``: a sixth positional argument that is an ``int`` but not a ``bool`` is v2.8.1's
    ``max_seqlen_k`` (then the seventh is ``logits_dtype`` and the eighth ``schedule_meta``). The v2.8.1 form
    has no ``clean_logits``: it is True (``-inf`` outside the ranges, what v2.8.1 callers mask with).
    ``schedule_meta`` (from :func:`get_mqa_logits_metadata`) is accepted and not read."""
    op = 'fp8_fp4_mqa_logits'
    if _is_int(clean_logits):
        # v2.8.1 positional form: (..., max_seqlen_k, logits_dtype, schedule_meta) landed one slot to the left.
        positional_max = clean_logits
        if isinstance(max_seqlen_k, torch.dtype):
            if logits_dtype is not torch.float32 and isinstance(logits_dtype, torch.dtype):
                raise TypeError(f'{op}: logits_dtype given twice ({max_seqlen_k} and {logits_dtype})')
            seventh, eighth = max_seqlen_k, logits_dtype
            logits_dtype = seventh
            if eighth is None or isinstance(eighth, torch.Tensor):
                if schedule_meta is not None and eighth is not None:
                    raise TypeError(f'{op}: schedule_meta given twice')
                schedule_meta = eighth if eighth is not None else schedule_meta
        elif max_seqlen_k != 0:
            raise TypeError(f'{op}: max_seqlen_k given twice: {positional_max} (6th positional, the v2.8.1 form) and {max_seqlen_k}')
        max_seqlen_k, clean_logits = positional_max, True
    if not isinstance(clean_logits, bool):
        raise TypeError(f'{op}: clean_logits must be a bool (or, in the v2.8.1 form, the 6th argument an int max_seqlen_k); '
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
    if _tracing():
        return torch.ops.deep_gemm.get_mqa_logits_metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads)
    return _c_get_mqa_logits_metadata(cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads)
