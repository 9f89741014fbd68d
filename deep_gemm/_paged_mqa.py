"""Paged MQA logits of the sparse-attention indexer (DeepSeek V3.2 / V4, GLM-5): DeepGEMM's
``get_paged_mqa_logits_metadata``, ``fp8_paged_mqa_logits`` and ``fp8_fp4_paged_mqa_logits`` on SM90, in both
the DeepGEMM 2.6 and 2.8 call forms. The kernel is ``deep_gemm/include/deep_gemm/impls/
sm90_fp8_paged_mqa_logits.cuh``; semantics and the schedule layout are in ``docs/paged_mqa_logits.md``."""

from typing import Optional

import torch

from . import _C

_tracing = torch.compiler.is_dynamo_compiling
_c_metadata = _C.get_paged_mqa_logits_metadata
_c_logits = _C._fp8_paged_mqa_logits


def get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms, indices=None):
    """Schedule of :func:`fp8_paged_mqa_logits`: int32 ``[num_sms + 1, 2]`` on ``context_lens``' device.

    ``context_lens``: int32 ``[B]`` or ``[B, next_n]`` (contiguous); ``block_kv`` 64 or 32 (the kv cache's block
    size; the result is the same for both); ``num_sms`` in ``[1, 65536]`` (any count works with the logits op, e.g.
    vLLM's ``num_sms // 2`` for next_n 4); ``indices`` (varlen rows) is SM100-only in DeepGEMM and raises
    ``NotImplementedError``. Batch ``b`` has ``ceil(max_t context_lens[b, t] / 64)`` tiles of 64 positions
    (``context_lens[b]`` for 1-D lengths; negative lengths count 0); the work units ``(b, tile)`` are numbered
    batch-major, and row ``i < num_sms`` holds ``(batch, tile)``
    of unit ``floor(i * total / num_sms)``, the first unit of SM ``i``; row ``num_sms`` is ``(B, 0)``. Built
    with tensor ops on the tensor's device: no host synchronisation, so it can be captured in a CUDA graph.
    """
    metadata = torch.ops.deep_gemm.get_paged_mqa_logits_metadata if _tracing() else _c_metadata
    return metadata(context_lens, block_kv, num_sms, indices)


def _split_q(op: str, q):
    if isinstance(q, (tuple, list)):
        if len(q) != 2:
            raise ValueError(f'{op}: q must be a tensor or a pair (q, q_sf); got a sequence of length {len(q)}')
        return q[0], q[1]
    return q, None


def _logits_bf16(op: str, logits_dtype) -> bool:
    if logits_dtype == torch.float32:
        return False
    if logits_dtype == torch.bfloat16:
        return True
    raise TypeError(f'{op}: logits_dtype must be torch.float32 or torch.bfloat16; got {logits_dtype}')


def _one_indices(op: str, positional, keyword):
    """``indices`` given positionally (a tensor, None, or a dtype parameter's default when not given) or by keyword."""
    if isinstance(positional, torch.dtype):
        positional = None
    if positional is not None and not isinstance(positional, torch.Tensor):
        raise TypeError(f'{op}: indices must be a tensor or None; got {type(positional).__name__}')
    if positional is not None and keyword is not None:
        raise TypeError(f'{op}: indices given twice')
    return keyword if positional is None else positional


def _run(op, q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, logits_dtype, indices):
    if not isinstance(clean_logits, bool):
        raise TypeError(f'{op}: clean_logits must be a bool (or the 8th argument a torch.dtype logits_dtype, DeepGEMM 2.8.1, or a '
                        f'tensor or None indices, sgl-deep-gemm 0.2.5); got {type(clean_logits).__name__}')
    bf16 = _logits_bf16(op, logits_dtype)
    q, q_sf = _split_q(op, q)
    if q_sf is not None:
        raise NotImplementedError(f'{op}: FP4 q (a (q, q_sf) pair with scales) is SM100-only in DeepGEMM; on SM90 pass (q_fp8, None)')
    logits = torch.ops.deep_gemm.fp8_paged_mqa_logits if _tracing() else _c_logits
    return logits(q, None, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, bf16, indices)


def fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits=False,
                         indices=None):
    """Paged MQA logits with float32 output (DeepGEMM's 2.6 name; see :func:`fp8_fp4_paged_mqa_logits`)."""
    return _run('fp8_paged_mqa_logits', q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits,
                torch.float32, indices)


def fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits=False,
                             logits_dtype=torch.float32, indices=None):
    """Paged MQA logits: ``logits[b * next_n + t, p] = sum_h weights[b * next_n + t, h] * relu(q[b, t, h] . kv(p)) * sf(p)``
    for the kv positions ``p`` of row ``(b, t)``, one fused kernel (no ``[rows, H, ctx]`` intermediate).

    - ``q``: float8_e4m3fn ``[B, next_n, H, 128]`` contiguous, or the pair ``(q, None)`` (FP4 q with scales is
      SM100-only: ``NotImplementedError``). ``H`` is 32 or 64 and ``next_n`` 1, 2 or 4.
    - ``kv_cache``: uint8 (or float8_e4m3fn) ``[num_blocks, R, 1, 132]``, ``R`` 64 or 32: each block (page) holds
      ``R`` rows of 128 FP8 bytes, then the ``R`` float32 scales ``sf`` (DeepGEMM's fused layout); block stride a
      multiple of 16 bytes.
    - ``weights``: float32 ``[B * next_n, H]``; ``block_table``: int32 ``[B, max_blocks]``; token ``p`` of batch
      ``b`` is row ``p % R`` of block ``block_table[b, p // R]``.
    - ``context_lens``: int32 ``[B]``: row ``(b, t)`` sees ``p <= context_lens[b] - next_n + t``; or ``[B, next_n]``:
      row ``(b, t)`` sees ``p < context_lens[b, t]``.
    - ``schedule_meta``: :func:`get_paged_mqa_logits_metadata` of the same ``context_lens`` (with either
      ``block_kv``, any ``num_sms`` up to 65536); its row count - 1 is the number of CTAs.
    - Returns contiguous ``[B * next_n, max_context_len]`` logits of ``logits_dtype`` (float32 or bfloat16).
      Positions outside a row's range are ``-inf`` with ``clean_logits``, left unwritten otherwise.

    Device data is clamped by the kernel: lengths to ``[0, min(max_context_len, R * max_blocks)]``, block
    indices to ``[0, num_blocks)``, schedule entries to the batch range; bad values give wrong logits, never
    an access outside the tensors.

    Call forms, told apart by the type of the 8th positional argument (docs/compat_2_8.md, "Positional clashes
    between dialects"): a ``bool`` is DeepGEMM 2.6.1's ``clean_logits`` (the signature above); a ``torch.dtype`` is
    2.8.1's ``logits_dtype`` in ``(…, max_context_len, logits_dtype=torch.float32, indices=None)`` (the 9th, if any,
    is ``indices``); a tensor or None is sgl-deep-gemm 0.2.5's ``indices`` in ``(…, max_context_len, indices=None)``.
    The 2.8.1 and 0.2.5 forms clean nothing. Another type raises ``TypeError``; ``indices`` other than None raises
    ``NotImplementedError`` on SM90 (as in DeepGEMM and 0.2.5, whose SM90 paths reject it).
    """
    op = 'fp8_fp4_paged_mqa_logits'
    if isinstance(clean_logits, torch.dtype):
        # 2.8.1 positional form: (…, max_context_len, logits_dtype, indices).
        if isinstance(logits_dtype, torch.dtype) and logits_dtype != torch.float32:
            raise TypeError(f'{op}: logits_dtype given twice ({clean_logits} positionally, {logits_dtype} by keyword)')
        indices = _one_indices(op, logits_dtype, indices)
        clean_logits, logits_dtype = False, clean_logits
    elif clean_logits is None or isinstance(clean_logits, torch.Tensor):
        # 0.2.5 positional form: (…, max_context_len, indices); logits_dtype only by keyword.
        if not isinstance(logits_dtype, torch.dtype):
            raise TypeError(f'{op}: in the 0.2.5 form (8th argument indices) logits_dtype must be a torch.dtype, given by keyword; '
                            f'got {type(logits_dtype).__name__}')
        indices = _one_indices(op, clean_logits, indices)
        clean_logits = False
    elif not isinstance(logits_dtype, torch.dtype):
        raise TypeError(f'{op}: logits_dtype must be a torch.dtype; got {type(logits_dtype).__name__}')
    return _run(op, q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits, logits_dtype,
                indices)


__all__ = ['get_paged_mqa_logits_metadata', 'fp8_paged_mqa_logits', 'fp8_fp4_paged_mqa_logits']
