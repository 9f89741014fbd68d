"""Benchmark: deep_gemm.fp8_gemm_nt (SM90 FP8 1D2D, BF16 out) against baselines timed in the same run.

Per shape: ours, torch._scaled_mm with block-wise scales (cuBLASLt, 1x128 A / 128x128 B), row-wise
_scaled_mm, and torch.mm in BF16, all measured in this run, in turns (one call of each per round). CUDA
events around each call, L2 flushed (256 MB write) before each call, median of N rounds. Also the host time per cached call (calls enqueued
while the GPU is busy, CPU time divided by the count). The summary table is printed last.

    python3 benchmarks/bench_fp8_gemm.py [--runs 20] [--shapes 128x2112x7168,...] [--small-n]
"""
import argparse
import inspect
import math
import statistics
import sys

import torch

import deep_gemm
from _timing import host_time_per_call, time_interleaved
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

TARGET_SHAPES = [(m, n, k) for m in (128, 4096)
                 for n, k in ((2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
                              (7168, 2048))]
# Few N tiles: where a persistent grid of one row of tiles leaves SMs idle (M = 128) or one tile column short.
SMALL_N_SHAPES = [(m, n, 7168) for m in (128, 4096) for n in (256, 512, 1024, 1536)]


def _cast(fn, x):
    params = inspect.signature(fn).parameters
    return fn(x, use_ue8m0=False) if 'use_ue8m0' in params else fn(x)


def make_inputs(m, n, k):
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16)
    a_fp8, sfa = _cast(per_token_cast_to_fp8, a)
    b_fp8, sfb = _cast(per_block_cast_to_fp8, b)
    sfa, sfb = sfa.float(), sfb.float()
    # A scales in the kernel's layout (M-major, M padded to 4): the caller pays no transform.
    kb = sfa.shape[1]
    storage = torch.empty((kb, (m + 3) // 4 * 4), device='cuda', dtype=torch.float32)
    storage[:, :m] = sfa.t()
    sfa_mn = storage[:, :m].t()
    return a, b, a_fp8, sfa, sfa_mn, b_fp8, sfb


def bench_shape(m, n, k, runs):
    a, b, a_fp8, sfa, sfa_mn, b_fp8, sfb = make_inputs(m, n, k)
    d = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)

    def ours():
        deep_gemm.fp8_gemm_nt((a_fp8, sfa_mn), (b_fp8, sfb), d)

    # cuBLASLt block-wise: A scales [M, K/128] outer-dim-major, B scales [K/128, N/128] (= sfb.t()).
    scale_a_blk = sfa.t().contiguous().t()
    scale_b_blk = sfb.t()

    def blockwise():
        return torch._scaled_mm(a_fp8, b_fp8.t(), scale_a=scale_a_blk, scale_b=scale_b_blk,
                                out_dtype=torch.bfloat16)

    scale_a_row = torch.ones((m, 1), device='cuda', dtype=torch.float32)
    scale_b_row = torch.ones((1, n), device='cuda', dtype=torch.float32)

    def rowwise():
        return torch._scaled_mm(a_fp8, b_fp8.t(), scale_a=scale_a_row, scale_b=scale_b_row,
                                out_dtype=torch.bfloat16)

    def bf16():
        return torch.mm(a, b.t())

    # Ours and the baselines in turns (see time_interleaved); the host-time loop, which keeps the GPU at
    # full load for a while, comes after all of them.
    row = time_interleaved({'ours': ours, 'blockwise': blockwise, 'rowwise': rowwise, 'bf16': bf16}, runs,
                           label=f'{m}x{n}x{k}: ')
    row['shape'] = (m, n, k)
    if row['ours'] is not None:
        row['host'] = host_time_per_call(ours, 200, busy_cycles=int(2e8))
        d.fill_(float('nan'))
        ours()
        torch.cuda.synchronize()
        row['nan'] = bool(torch.isnan(d).any())
    del a, b, a_fp8, b_fp8
    torch.cuda.empty_cache()
    return row


def fmt(x, spec):
    return format(x, spec) if x is not None else 'n/a'


def geomean(xs):
    xs = [x for x in xs if x is not None]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--shapes', type=str, default='')
    parser.add_argument('--small-n', action='store_true', help='add N in {256, 512, 1024, 1536} at M in {128, 4096}')
    args = parser.parse_args()
    shapes = TARGET_SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split('x')) for s in args.shapes.split(',')]
    if args.small_n:
        shapes = list(shapes) + SMALL_N_SHAPES

    print(f'device: {torch.cuda.get_device_name()}, SMs {torch.cuda.get_device_properties(0).multi_processor_count}, '
          f'torch {torch.__version__}', flush=True)
    rows = []
    for m, n, k in shapes:
        row = bench_shape(m, n, k, args.runs)
        rows.append(row)
        print(f'  done {m}x{n}x{k}: ours {fmt(row["ours"], ".1f")} us', flush=True)

    header = (f'{"M":>5} {"N":>6} {"K":>6} | {"ours us":>8} {"TFLOPS":>7} {"GB/s":>6} | {"blk us":>7} {"x blk":>6} | '
              f'{"row us":>7} {"x row":>6} | {"bf16 us":>7} {"x bf16":>6} | {"host us":>7}')
    lines = [header, '-' * len(header)]
    ratios = {}
    for row in rows:
        m, n, k = row['shape']
        t = row['ours']
        flops = 2 * m * n * k
        nbytes = m * k + n * k + 2 * m * n + 4 * (m + n // 128 + 1) * math.ceil(k / 128)
        tflops = flops / (t * 1e-6) / 1e12 if t else None
        gbs = nbytes / (t * 1e-6) / 1e9 if t else None
        r = {}
        for base in ('blockwise', 'rowwise', 'bf16'):
            r[base] = (row[base] / t) if (t and row.get(base)) else None
        ratios.setdefault(m, []).append(r)
        nan = ' NaN!' if row.get('nan') else ''
        lines.append(f'{m:>5} {n:>6} {k:>6} | {fmt(t, "8.1f")} {fmt(tflops, "7.0f")} {fmt(gbs, "6.0f")} | '
                     f'{fmt(row["blockwise"], "7.1f")} {fmt(r["blockwise"], "6.2f")} | '
                     f'{fmt(row["rowwise"], "7.1f")} {fmt(r["rowwise"], "6.2f")} | '
                     f'{fmt(row["bf16"], "7.1f")} {fmt(r["bf16"], "6.2f")} | {fmt(row.get("host"), "7.1f")}{nan}')
    lines.append('')
    for m in sorted(ratios):
        g = {base: geomean([r[base] for r in ratios[m]]) for base in ('blockwise', 'rowwise', 'bf16')}
        lines.append(f'geomean speedup at M={m}: vs block-wise _scaled_mm {fmt(g["blockwise"], ".3f")}, '
                     f'vs row-wise {fmt(g["rowwise"], ".3f")}, vs bf16 mm {fmt(g["bf16"], ".3f")}')
    hosts = [row.get('host') for row in rows if row.get('host') is not None]
    if hosts:
        lines.append(f'host time per cached call: median {statistics.median(hosts):.2f} us')
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
