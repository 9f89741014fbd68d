"""Float references of the paged MQA-logits ops (deep_gemm.fp8_paged_mqa_logits, get_paged_mqa_logits_metadata),
shared by tests/python/test_paged_mqa_logits*.py and benchmarks/bench_paged_mqa_logits.py. Device-agnostic
(CPU in CI, CUDA in the GPU tests)."""

import torch

BLOCK_KV = 64  # positions per schedule unit (the kernel's kv tile); a cache block holds 64 or 32 rows
BLOCK_SIZES = (64, 32)


def pack_kv_cache(x: torch.Tensor):
    """bf16/float [num_blocks, R, 1, D] -> (uint8 kv cache [num_blocks, R, 1, D + 4], float32 dequantised copy), R the
    block size (64 or 32).

    Per kv row: scale = max(amax|row|, 1e-4) / 448, FP8 e4m3 codes of row / scale. A block stores the R rows' codes
    (R * D bytes) and then the R float32 scales."""
    num_blocks, rows, heads, dim = x.shape
    assert heads == 1 and rows in BLOCK_SIZES
    codes, scale = quantize_rows(x.reshape(-1, dim))
    page = torch.empty((num_blocks, rows * (dim + 4)), dtype=torch.uint8, device=x.device)
    page[:, :rows * dim] = codes.view(torch.uint8).reshape(num_blocks, rows * dim)
    page[:, rows * dim:] = scale.view(torch.uint8).reshape(num_blocks, rows * 4)
    return page.view(num_blocks, rows, 1, dim + 4), (codes.float() * scale[:, None]).view(x.shape)


def quantize_rows(x: torch.Tensor):
    """[n, D] -> (e4m3 codes [n, D], float32 scales [n]): scale = max(amax|row|, 1e-4) / 448, codes of row / scale."""
    xf = x.float()
    scale = xf.abs().amax(dim=1).clamp(min=1e-4) / 448.0
    return (xf * (1.0 / scale[:, None])).to(torch.float8_e4m3fn), scale


def unpack_kv_cache(kv_cache: torch.Tensor):
    """uint8 [num_blocks, R, 1, D + 4] -> (float32 codes [num_blocks, R, D], float32 scales [num_blocks, R])."""
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
    the scale of the rounding error an FP32-accumulated evaluation of the same sum can make. Position p of batch b is
    row p % R of block block_table[b, p // R], R = kv_cache.shape[1]."""
    batch, next_n, heads, dim = q.shape
    block_kv = kv_cache.shape[1]
    codes, scales = unpack_kv_cache(kv_cache)
    lens = row_lengths(context_lens, next_n).clamp(0, max_context_len)
    out = torch.full((batch * next_n, max_context_len), float('-inf'), dtype=torch.float32, device=q.device)
    for b in range(batch):
        n = int(lens[b].max())
        if n == 0:
            continue
        pages = block_table[b, :(n + block_kv - 1) // block_kv].long()
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
