"""Benchmark: the M-grouped BF16 GEMMs (deep_gemm.m_grouped_bf16_gemm_nt_contiguous / _masked) on the grouped
shapes and group sizes of bench_fp8_grouped.py, against two baselines measured in the same run, in turns (one
call of each per round, L2 flushed before each call, median of N rounds):

- `loop`: one torch.mm (cuBLAS) per group;
- `dense`: our dense bf16_gemm_nt on the concatenated problem (all groups' rows against one B), the speed a
  grouped kernel could reach with no grouping overhead.

TFLOPS count the valid rows only.

    python3 benchmarks/bench_bf16_grouped.py [--runs 10] [--shapes masked:32x48x4096x7168,...]
"""
import torch

import deep_gemm
from _timing import time_interleaved
from bench_fp8_grouped import argument_parser, contiguous_layout, contiguous_rows, masked_rows, print_table


def make_loop(a_parts, b):
    """One torch.mm per non-empty group, into its own output."""
    args = [(a, b[g], torch.empty((a.shape[0], b.shape[1]), device='cuda', dtype=torch.bfloat16))
            for g, a in enumerate(a_parts) if a.shape[0] > 0]

    def loop():
        for a, b_g, out in args:
            torch.mm(a, b_g.t(), out=out)

    return loop


def bench_contiguous(groups, mean, n, k, runs, psum=False):
    ms, starts = contiguous_rows(groups, mean, n, k)
    m_sum = sum(ms)
    a = torch.randn((m_sum, k), device='cuda', dtype=torch.bfloat16)
    b = torch.randn((groups, n, k), device='cuda', dtype=torch.bfloat16)
    layout = contiguous_layout(ms, psum)
    d = torch.empty((m_sum, n), device='cuda', dtype=torch.bfloat16)

    def ours():
        deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, layout, use_psum_layout=psum)

    def dense():
        deep_gemm.bf16_gemm_nt(a, b[0], d)

    loop = make_loop([a[s:s + m] for s, m in zip(starts, ms)], b)
    return ms, time_interleaved({'ours': ours, 'loop': loop, 'dense': dense}, runs,
                                label=f'contiguous{" psum" if psum else ""} {ms}: ')


def bench_masked(groups, mean, n, k, runs):
    ms, max_m, expected_m = masked_rows(groups, mean, n, k)
    a = torch.randn((groups, max_m, k), device='cuda', dtype=torch.bfloat16)
    b = torch.randn((groups, n, k), device='cuda', dtype=torch.bfloat16)
    masked_m = torch.tensor(ms, device='cuda', dtype=torch.int32)
    d = torch.empty((groups, max_m, n), device='cuda', dtype=torch.bfloat16)
    a_cat = torch.cat([a[g, :m] for g, m in enumerate(ms)])
    d_cat = torch.empty((sum(ms), n), device='cuda', dtype=torch.bfloat16)

    def ours():
        deep_gemm.m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m)

    def dense():
        deep_gemm.bf16_gemm_nt(a_cat, b[0], d_cat)

    loop = make_loop([a[g, :m] for g, m in enumerate(ms)], b)
    return ms, time_interleaved({'ours': ours, 'loop': loop, 'dense': dense}, runs, label=f'masked {ms}: ')


def main():
    args = argument_parser().parse_args()
    print_table(bench_contiguous, bench_masked, args.shapes, runs=args.runs)


if __name__ == '__main__':
    main()
