"""Float reference of fp8_gemm_nt_skip_head_mid: D = A @ B.T on the dequantised FP8 operands, written into a
head-split layout. With head_splits (left, mid, right) and N = num_heads * (left + right) computed columns,
head h's computed columns go to d[:, h * (left + mid + right) + ...]: the first `left` at offset 0, the
other `right` at offset left + mid; the `mid` columns of each head are left as they were."""

import torch


def head_split_columns(num_heads: int, head_splits) -> torch.Tensor:
    """The d column of every computed column, in order (one explicit formula per column)."""
    left, mid, right = head_splits
    cols = []
    for h in range(num_heads):
        for j in range(left + right):
            cols.append(h * (left + mid + right) + (j if j < left else j + mid))
    return torch.tensor(cols, dtype=torch.long)


def skip_head_mid_reference(computed: torch.Tensor, d: torch.Tensor, head_splits) -> torch.Tensor:
    """A copy of `d` (float64) with the computed [M, N] product placed by head (slicing per head)."""
    left, mid, right = head_splits
    m, n = computed.shape
    num_heads = n // (left + right)
    out = d.double().clone()
    heads_out = out.view(m, num_heads, left + mid + right)
    heads_in = computed.double().view(m, num_heads, left + right)
    heads_out[:, :, :left] = heads_in[:, :, :left]
    heads_out[:, :, left + mid:] = heads_in[:, :, left:]
    return out
