"""Float references of deep_gemm.einsum / fp8_einsum, written as loops of 2-D matmuls in float64 (one per batch
or head), so that they are independent of torch.einsum, which test_einsum.py checks them against."""
import torch


def bmk_bnk_mn(a, b, c=None):
    """d [M, N] = c + sum_s a[s] @ b[s].T (float64)."""
    out = torch.zeros(a.shape[1], b.shape[1], dtype=torch.float64, device=a.device)
    for s in range(a.shape[0]):
        out += a[s].double() @ b[s].double().T
    return out if c is None else out + c.double()


def bhr_hdr_bhd(x, y):
    """z [B, H, D]: z[:, h] = x[:, h] @ y[h].T (float64)."""
    return torch.stack([x[:, h].double() @ y[h].double().T for h in range(x.shape[1])], dim=1)


def bhd_hdr_bhr(x, y):
    """z [B, H, R]: z[:, h] = x[:, h] @ y[h] (float64)."""
    return torch.stack([x[:, h].double() @ y[h].double() for h in range(x.shape[1])], dim=1)


def dequant_per_token(x_fp8, sx, block=128):
    """x [..., K] from FP8 values and float32 scales [..., ceil(K / block)] (one per token per block)."""
    k = x_fp8.shape[-1]
    return x_fp8.double() * sx.double().repeat_interleave(block, dim=-1)[..., :k]


def dequant_per_block(y_fp8, sy, block=128):
    """y [..., N, K] from FP8 values and float32 scales [..., ceil(N / block), ceil(K / block)]."""
    n, k = y_fp8.shape[-2:]
    s = sy.double().repeat_interleave(block, dim=-2)[..., :n, :].repeat_interleave(block, dim=-1)[..., :k]
    return y_fp8.double() * s
