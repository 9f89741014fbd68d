"""Float references of the paged MQA-logits ops (deep_gemm.fp8_paged_mqa_logits, get_paged_mqa_logits_metadata),
shared by tests/python/test_paged_mqa_logits*.py and benchmarks/bench_paged_mqa_logits.py. Device-agnostic
(CPU in CI, CUDA in the GPU tests)."""

import torch

BLOCK_KV = 64


def pack_kv_cache(x: torch.Tensor):
    """bf16/float [num_blocks, 64, 1, D] -> (uint8 kv cache [num_blocks, 64, 1, D + 4], float32 dequantised copy).

    Per kv row: scale = max(amax|row|, 1e-4) / 448, FP8 e4m3 codes of row / scale. A page stores the 64 rows' codes
    (64 * D bytes) and then the 64 float32 scales."""
    num_blocks, rows, heads, dim = x.shape
    assert heads == 1 and rows == BLOCK_KV
    xf = x.float()
    scale = xf.abs().amax(dim=3, keepdim=True).clamp(min=1e-4) / 448.0
    codes = (xf * (1.0 / scale)).to(torch.float8_e4m3fn)
    page = torch.empty((num_blocks, rows * (dim + 4)), dtype=torch.uint8, device=x.device)
    page[:, :rows * dim] = codes.view(torch.uint8).reshape(num_blocks, rows * dim)
    page[:, rows * dim:] = scale.reshape(num_blocks, rows).contiguous().view(torch.uint8).reshape(num_blocks, rows * 4)
    return page.view(num_blocks, rows, 1, dim + 4), codes.float() * scale


def unpack_kv_cache(kv_cache: torch.Tensor):
    """uint8 [num_blocks, 64, 1, D + 4] -> (float32 codes [num_blocks, 64, D], float32 scales [num_blocks, 64])."""
    num_blocks, rows, _, row_bytes = kv_cache.shape
    dim = row_bytes - 4
    flat = kv_cache.reshape(num_blocks, rows * row_bytes)
    codes = flat[:, :rows * dim].contiguous().view(torch.float8_e4m3fn).float().view(num_blocks, rows, dim)
    scales = flat[:, rows * dim:].contiguous().view(torch.float32).view(num_blocks, rows)
    return codes, scales


def row_lengths(context_lens: torch.Tensor, next_n: int) -> torch.Tensor:
    """int64 [B, next_n]: how many leading kv positions row (b, t) attends."""
    lens = context_lens.long()
    if lens.dim() == 2:
        return lens
    return lens[:, None] - next_n + 1 + torch.arange(next_n, device=lens.device)[None, :]


def ref_paged_mqa_logits(q: torch.Tensor, kv_cache: torch.Tensor, weights: torch.Tensor, context_lens: torch.Tensor,
                         block_table: torch.Tensor, max_context_len: int, magnitude: bool = False) -> torch.Tensor:
    """float32 [B * next_n, max_context_len]; -inf outside each row's range. q: [B, next_n, H, D] (any float dtype,
    FP8 included: its values are used exactly). magnitude=True gives instead sum_h |w_h| * (|q_h| . |k|) * scale,
    the scale of the rounding error an FP32-accumulated evaluation of the same sum can make."""
    batch, next_n, heads, dim = q.shape
    codes, scales = unpack_kv_cache(kv_cache)
    lens = row_lengths(context_lens, next_n).clamp(0, max_context_len)
    out = torch.full((batch * next_n, max_context_len), float('-inf'), dtype=torch.float32, device=q.device)
    for b in range(batch):
        n = int(lens[b].max())
        if n == 0:
            continue
        pages = block_table[b, :(n + BLOCK_KV - 1) // BLOCK_KV].long()
        kv = codes[pages].reshape(-1, dim)[:n]                     # [n, D]
        sf = scales[pages].reshape(-1)[:n]                         # [n]
        w = weights[b * next_n:(b + 1) * next_n].float()           # [next_n, H]
        if magnitude:
            score = torch.einsum('thd,nd->thn', q[b].float().abs(), kv.abs())
            logit = (score * w.abs()[:, :, None]).sum(dim=1) * sf
        else:
            score = torch.einsum('thd,nd->thn', q[b].float(), kv)  # [next_n, H, n]
            logit = (score.relu() * w[:, :, None]).sum(dim=1) * sf  # [next_n, n]
        for t in range(next_n):
            m = int(lens[b, t])
            out[b * next_n + t, :m] = logit[t, :m]
    return out


def ref_schedule(context_lens: torch.Tensor, num_sms: int) -> torch.Tensor:
    """The schedule get_paged_mqa_logits_metadata promises, built with plain Python integers."""
    lens = context_lens.tolist()
    longest = [max(x) if isinstance(x, list) else x for x in lens]
    pages = [max(0, x + BLOCK_KV - 1) // BLOCK_KV if x > 0 else 0 for x in longest]
    units = [(b, j) for b, p in enumerate(pages) for j in range(p)]
    total = len(units)
    rows = []
    for i in range(num_sms + 1):
        start = i * total // num_sms
        rows.append(list(units[start]) if start < total else [len(pages), 0])
    return torch.tensor(rows, dtype=torch.int32)
