"""First-call latency of fp8_gemm_nt in a fresh process: cold cache (compile) with NVCC and NVRTC, then
warm cache (load from disk). Each measurement runs in its own subprocess so nothing is memoized.

Usage: python benchmarks/bench_first_call.py   (needs a Hopper GPU)
"""
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import time, torch, deep_gemm
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
m, n, k = 4096, 7168, 2048
a, b = per_token_cast_to_fp8(torch.randn(m, k, device="cuda")), per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
a = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))  # the layout kernel is not timed below
d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t0 = time.perf_counter()
deep_gemm.fp8_gemm_nt(a, b, d)
torch.cuda.synchronize()
print(f"{(time.perf_counter() - t0) * 1e3:.1f}")
'''


def first_call_ms(cache: str, nvrtc: bool) -> str:
    env = dict(os.environ, DG_JIT_CACHE_DIR=cache, DG_JIT_USE_NVRTC='1' if nvrtc else '0')
    out = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return 'failed: ' + (out.stderr.strip().splitlines() or ['?'])[-1]
    return out.stdout.strip().splitlines()[-1] + ' ms'


if __name__ == '__main__':
    rows = []
    for nvrtc in (False, True):
        cache = tempfile.mkdtemp(prefix='dg_first_call_')
        rows.append((('NVRTC' if nvrtc else 'NVCC') + ', cold cache', first_call_ms(cache, nvrtc)))
        rows.append((('NVRTC' if nvrtc else 'NVCC') + ', warm cache (new process)', first_call_ms(cache, nvrtc)))
    print('fp8_gemm_nt 4096x7168x2048, first call in a fresh process (compile or load + launch + sync):')
    for name, value in rows:
        print(f'  {name:36s} {value}')
