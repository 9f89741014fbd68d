"""Float reference of the MQA-logits ops (deep_gemm.fp8_mqa_logits / fp8_fp4_mqa_logits), row by row:

    logits[i, j] = sum_h w[i, h] * relu(q[i, h] . kv[j]) * s[j]      for b_i <= j < e_i

with [b_i, e_i) = cu_seq_len_k_start / _end clamped to [0, S_kv] (e_i >= b_i). Dense: column j; compressed
(max_seqlen_k > 0): column j - b_i, for columns below max_seqlen_k. Computed in float64 on the FP8 values
as stored (the kernel multiplies exact FP8 products and accumulates in FP32).

Returns (logits, written, bound): float64 [S, cols] with -inf where clean_logits puts -inf (NaN where the
op leaves the element unwritten), the bool mask of elements that hold a value, and per element
sum_h |w| * sum_d |q kv| * |s|, the scale of any rounding error (for tolerances)."""
import torch


def clamp_ranges(ks: torch.Tensor, ke: torch.Tensor, seq_len_kv: int):
    b = ks.long().clamp(0, seq_len_kv)
    e = torch.maximum(ke.long().clamp(0, seq_len_kv), b)
    return b, e


def mqa_logits_ref(q, kv, kv_sf, weights, ks, ke, clean_logits=True, max_seqlen_k=0):
    q64, kv64 = q.double(), kv.double()
    s64, w64 = kv_sf.double(), weights.double()
    seq_len, seq_len_kv = q.shape[0], kv.shape[0]
    cols = max_seqlen_k if max_seqlen_k > 0 else seq_len_kv
    fill = float('-inf') if clean_logits else float('nan')
    logits = torch.full((seq_len, cols), fill, dtype=torch.float64)
    bound = torch.zeros(seq_len, cols, dtype=torch.float64)
    written = torch.zeros(seq_len, cols, dtype=torch.bool)
    b, e = clamp_ranges(ks.cpu(), ke.cpu(), seq_len_kv)
    for i in range(seq_len):
        lo, hi = int(b[i]), int(e[i])
        if max_seqlen_k > 0:
            hi = min(hi, lo + max_seqlen_k)
        if hi <= lo:
            continue
        score = q64[i] @ kv64[lo:hi].T                                  # [H, n]
        value = (score.clamp_min(0) * w64[i][:, None]).sum(0) * s64[lo:hi]
        mag = (w64[i].abs()[:, None] * (q64[i].abs() @ kv64[lo:hi].abs().T)).sum(0) * s64[lo:hi].abs()
        c0 = 0 if max_seqlen_k > 0 else lo
        logits[i, c0:c0 + hi - lo] = value
        bound[i, c0:c0 + hi - lo] = mag
        written[i, c0:c0 + hi - lo] = True
    return logits, written, bound
