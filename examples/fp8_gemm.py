"""Smallest useful deep_gemm program: one block-scaled FP8 GEMM checked against BF16 torch.mm."""
import sys

import torch

import deep_gemm

if not torch.cuda.is_available():
    # The set-up command of README.md ends with this example; on a machine without a GPU it has then done its job.
    print("examples/fp8_gemm.py: no CUDA GPU visible, nothing to run (the kernels need a Hopper GPU); "
          "`python -m deep_gemm info` shows what was found")
    sys.exit(0)
from deep_gemm.testing import calc_diff
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

m, n, k = 4096, 7168, 2048
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

# A is scaled per row per 128 of K, B per 128x128 block (the default recipe).
deep_gemm.fp8_gemm_nt(per_token_cast_to_fp8(a), per_block_cast_to_fp8(b), d)
print(f"fp8_gemm_nt {m}x{n}x{k}: calc_diff vs bf16 torch.mm = {calc_diff(d, a @ b.t()):.2e}")

# The scale-layout utility, the simplest JIT kernel.
sf = torch.randn(1000, 56, device="cuda")
print("get_mn_major_tma_aligned_tensor ok:", torch.equal(deep_gemm.get_mn_major_tma_aligned_tensor(sf), sf))
