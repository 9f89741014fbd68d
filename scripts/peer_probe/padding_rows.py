# Why DeepGEMM's test_bf16.test_m_grouped_gemm_contiguous fails against ours (benchmarks/log/performance_2026-12-05.md, "DeepGEMM's own
# test modules against ours"): its case m ~34304, n 6144, k 7168 with the index layout and ensure_zero_padding=False,
# with d filled with 1e30 first. Prints, for both ensure_zero_padding values, calc_diff over the groups' rows, how
# many padding rows kept 1e30 or became zeros, and the whole-output calc_diff the peer's test takes.
# Usage (Hopper GPU): python3 scripts/peer_probe/padding_rows.py
import random, torch, deep_gemm
from deep_gemm.testing import calc_diff
torch.manual_seed(0); random.seed(0)
G, E, n, k = 4, 8192, 6144, 7168
ms = [int(E * random.uniform(0.7, 1.3)) for _ in range(G)]
al = [(x + 127) // 128 * 128 for x in ms]
m = sum(al)
a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16)
b = torch.randn(G, n, k, device='cuda', dtype=torch.bfloat16)
lay = torch.empty(m, device='cuda', dtype=torch.int32)
ref = torch.zeros(m, n, device='cuda', dtype=torch.bfloat16)
s = 0
for i, (x, y) in enumerate(zip(ms, al)):
    lay[s:s + x] = i; lay[s + x:s + y] = -1; a[s + x:s + y] = 0
    ref[s:s + y] = a[s:s + y] @ b[i].t(); s += y
for zp in (False, True):
    d = torch.full((m, n), 1e30, device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, lay, ensure_zero_padding=zp)
    torch.cuda.synchronize()
    g = lay >= 0
    print(f'm={m} ensure_zero_padding={zp}: group rows calc_diff {float(calc_diff(d[g], ref[g])):.2e}; '
          f'padding rows {int((~g).sum())}, of them still 1e30: {int((d[~g] == 1e30).all(1).sum())}, zero: {int((d[~g] == 0).all(1).sum())}; '
          f'whole-d calc_diff {float(calc_diff(d, ref)):.5f}')
