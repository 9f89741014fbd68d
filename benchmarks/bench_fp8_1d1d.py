"""Benchmark: the SM90 FP8 1D1D GEMM (recipe (1, 1, 128), FP32 out, the weight-gradient GEMM).

Dense: deep_gemm.fp8_gemm_nt(recipe=(1, 1, 128), c=d) (D += A @ B^T, accumulating in place) against two
reference points measured in the same run: our 1D2D kernel (128x128 B scales, BF16 out: the same FP8
work with a cheaper promotion and half the output bytes) and torch.mm in BF16 on the dequantised inputs.
K-grouped: deep_gemm.k_grouped_fp8_gemm_nt_contiguous (weight-gradient shapes, K_g ~ 4096 +-30%) against
our BF16 K-grouped kernel (k_grouped_bf16_gemm_tn_contiguous, FP32 out) and a loop of torch.mm in BF16.
Torch has no _scaled_mm with per-row-per-128-K scales on both operands, hence these baselines. CUDA
events, L2 flushed before each call, median of N rounds in turns (_timing.time_interleaved).

    python3 benchmarks/bench_fp8_1d1d.py [--runs 15]
"""
import argparse
import random

import torch

import deep_gemm
from _timing import time_interleaved
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

DENSE_SHAPES = [(4096, 7168, 4096), (7168, 2112, 4096), (4096, 4096, 8192), (2112, 7168, 8192)]
# (G, M, N, mean K_g): MoE expert weight gradients.
K_GROUPED_SHAPES = [(8, 7168, 4096, 4096), (4, 4096, 7168, 4096), (8, 2048, 7168, 2048)]


def tflops(flop, us):
    return flop / us / 1e6 if us else float('nan')


def fmt_us(us):
    return f'{us:9.1f}' if us is not None else '      n/a'


def ratio(base, ours):
    return f'{base / ours:5.2f}x' if base is not None and ours else '  n/a'


def bench_dense(m, n, k, runs):
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16)
    a8, sfa = per_token_cast_to_fp8(a, use_ue8m0=False)
    b8, sfb = per_token_cast_to_fp8(b, use_ue8m0=False)
    b8_blk, sfb_blk = per_block_cast_to_fp8(b, use_ue8m0=False)
    # Scales in the kernels' layout once, outside the timed calls.
    sfa_mn = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
    sfb_mn = deep_gemm.get_mn_major_tma_aligned_tensor(sfb)
    d32 = torch.zeros((m, n), device='cuda', dtype=torch.float32)
    d16 = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)
    a_deq = (a8.float() * sfa.repeat_interleave(128, 1)[:, :k]).bfloat16()
    b_deq = (b8.float() * sfb.repeat_interleave(128, 1)[:, :k]).bfloat16()

    fns = {
        'ours_1d1d': lambda: deep_gemm.fp8_gemm_nt((a8, sfa_mn), (b8, sfb_mn), d32, c=d32, recipe=(1, 1, 128)),
        'ours_1d2d': lambda: deep_gemm.fp8_gemm_nt((a8, sfa_mn), (b8_blk, sfb_blk), d16),
        'torch_bf16': lambda: torch.mm(a_deq, b_deq.t()),
    }
    t = time_interleaved(fns, runs, label=f'{m}x{n}x{k} ')
    flop = 2.0 * m * n * k
    print(f'dense {m:5d}x{n:5d}x{k:5d}: 1d1d {fmt_us(t["ours_1d1d"])} us {tflops(flop, t["ours_1d1d"]):6.1f} TFLOPS | '
          f'1d2d {fmt_us(t["ours_1d2d"])} us ({ratio(t["ours_1d2d"], t["ours_1d1d"])}) | '
          f'torch bf16 {fmt_us(t["torch_bf16"])} us ({ratio(t["torch_bf16"], t["ours_1d1d"])})', flush=True)


def bench_k_grouped(g, m, n, mean_k, runs, rng):
    ks = [max(128, round(mean_k * rng.uniform(0.7, 1.3) / 128) * 128) for _ in range(g)]
    a_parts, b_parts, sfa_parts, sfb_parts, a_bf, b_bf = [], [], [], [], [], []
    for kg in ks:
        a8, sfa = per_token_cast_to_fp8(torch.randn((m, kg), device='cuda', dtype=torch.bfloat16), use_ue8m0=False)
        b8, sfb = per_token_cast_to_fp8(torch.randn((n, kg), device='cuda', dtype=torch.bfloat16), use_ue8m0=False)
        a_parts.append(a8.flatten())
        b_parts.append(b8.flatten())
        sfa_parts.append(sfa.t())
        sfb_parts.append(sfb.t())
        a_bf.append((a8.float() * sfa.repeat_interleave(128, 1)).bfloat16())
        b_bf.append((b8.float() * sfb.repeat_interleave(128, 1)).bfloat16())
    a, b = torch.cat(a_parts), torch.cat(b_parts)
    sfa, sfb = torch.cat(sfa_parts).contiguous(), torch.cat(sfb_parts).contiguous()
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device='cuda')
    d = torch.zeros((g, m, n), device='cuda', dtype=torch.float32)
    # BF16 K-grouped kernel operands: a [sum K, M], b [sum K, N] (MN-major).
    a_tn = torch.cat([x.t() for x in a_bf]).contiguous()
    b_tn = torch.cat([x.t() for x in b_bf]).contiguous()

    def torch_loop():
        for i in range(g):
            torch.mm(a_bf[i], b_bf[i].t(), out=None)

    fns = {
        'ours_fp8': lambda: deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, ks_tensor, c=d),
        'ours_bf16': lambda: deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a_tn, b_tn, d, ks, ks_tensor, c=d),
        'torch_bf16': torch_loop,
    }
    t = time_interleaved(fns, runs, label=f'G={g} {m}x{n} ')
    flop = 2.0 * m * n * sum(ks)
    print(f'k-grouped G={g} {m:5d}x{n:5d} sumK={sum(ks):6d}: fp8 {fmt_us(t["ours_fp8"])} us '
          f'{tflops(flop, t["ours_fp8"]):6.1f} TFLOPS | bf16 kgrouped {fmt_us(t["ours_bf16"])} us '
          f'({ratio(t["ours_bf16"], t["ours_fp8"])}) | torch bf16 loop {fmt_us(t["torch_bf16"])} us '
          f'({ratio(t["torch_bf16"], t["ours_fp8"])})', flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = random.Random(0)
    print('ratios: baseline time / ours (> 1: ours faster)')
    for m, n, k in DENSE_SHAPES:
        bench_dense(m, n, k, args.runs)
    for g, m, n, mean_k in K_GROUPED_SHAPES:
        bench_k_grouped(g, m, n, mean_k, args.runs, rng)


if __name__ == '__main__':
    main()
