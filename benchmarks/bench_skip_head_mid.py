"""Benchmark of deep_gemm.fp8_gemm_nt_skip_head_mid on DeepGEMM's test shapes (not yet run on a GPU).

    python3 benchmarks/bench_skip_head_mid.py [--runs 30]

head_splits (128, 64, 128), M in {128, 4096}, (N, K) in {(32768, 512), (8192, 512)} (N = the computed
columns). Baselines in the same run, timed in turns with ours (L2 flushed before every call):
- `plain`: fp8_gemm_nt on the same operands into a contiguous [M, N] output (the GEMM without the split);
- `plain+copy`: the same, then the two torch copies a caller would need to place it by head;
Ours should match `plain` (the epilogue only moves columns) and beat `plain+copy`. DeepGEMM v2.6.1's
kernel is the reference target when its build is at hand (run its tests/test_attention.py on the same GPU).
"""
import argparse

import torch

import deep_gemm
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
from _timing import time_interleaved


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=30)
    args = parser.parse_args()
    left, mid, right = head_splits = (128, 64, 128)
    print(f'{"M":>6} {"N":>6} {"K":>5} | {"ours us":>8} {"plain us":>8} {"+copy us":>8} | {"TFLOPS":>6} | plain/ours +copy/ours')
    for m in (128, 4096):
        for n, k in ((32768, 512), (8192, 512)):
            heads = n // (left + right)
            a = per_token_cast_to_fp8(torch.randn(m, k, device='cuda', dtype=torch.bfloat16))
            b = per_block_cast_to_fp8(torch.randn(n, k, device='cuda', dtype=torch.bfloat16))
            d = torch.zeros(m, heads * (left + mid + right), device='cuda', dtype=torch.bfloat16)
            flat = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
            d_heads, flat_heads = d.view(m, heads, -1), flat.view(m, heads, -1)

            def plain_and_copy():
                deep_gemm.fp8_gemm_nt(a, b, flat)
                d_heads[:, :, :left].copy_(flat_heads[:, :, :left])
                d_heads[:, :, left + mid:].copy_(flat_heads[:, :, left:])

            us = time_interleaved({
                'ours': lambda: deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits),
                'plain': lambda: deep_gemm.fp8_gemm_nt(a, b, flat),
                'plain+copy': plain_and_copy,
            }, args.runs, label=f'M={m} N={n} K={k}: ')
            ours, plain, copy = us['ours'], us['plain'], us['plain+copy']
            tflops = 2 * m * n * k / (ours * 1e-6) / 1e12 if ours else float('nan')
            ratio = (lambda x: f'{x / ours:.2f}' if x and ours else 'n/a')
            print(f'{m:>6} {n:>6} {k:>5} | {ours or float("nan"):8.1f} {plain or float("nan"):8.1f} {copy or float("nan"):8.1f} | '
                  f'{tflops:6.0f} | {ratio(plain):>9} {ratio(copy):>10}')


if __name__ == '__main__':
    main()
