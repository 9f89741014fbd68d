"""One small fp8_gemm_nt through whichever deep_gemm is on PYTHONPATH (the peer's, in scripts/peer_probe/run.sh),
compared with a float matmul of the same FP8 values."""
import torch

import deep_gemm

print('deep_gemm from', deep_gemm.__file__, flush=True)
m, n, k = 256, 512, 1024
a = torch.randn(m, k, device='cuda').to(torch.float8_e4m3fn)
b = torch.randn(n, k, device='cuda').to(torch.float8_e4m3fn)
sfa, sfb = torch.ones(m, k // 128, device='cuda'), torch.ones(n // 128, k // 128, device='cuda')
d = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
torch.cuda.synchronize()
want = a.float() @ b.float().t()
print('max abs difference from the float matmul:', (d.float() - want).abs().max().item(), flush=True)
