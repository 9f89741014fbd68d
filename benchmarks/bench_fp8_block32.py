"""Benchmark: fp8_gemm_nt with block-32 scales (recipe (1, 32, 32)) against the same GEMM with 128-granular scales
(recipe (1, 128, 128), the default kernel), same shapes, timed in turns in the same run.

Per shape both calls take FP8 operands of the same values; the A scales are passed already in the kernel's layout
(M-major, TMA-aligned) and the B scales packed, so neither call pays a conversion. CUDA events around each call,
L2 flushed before each, median of N rounds (benchmarks/_timing.py). Prints each kernel's time and TFLOPS, the ratio
block-32 / 128 of the times, and per M the geomean of that ratio. DG_PRINT_CONFIGS=1 shows the tiles taken.

    python3 benchmarks/bench_fp8_block32.py [--runs 20] [--shapes 128x2112x7168,...] [--check]
"""
import argparse
import math
import os
import sys

import torch

import deep_gemm
from deep_gemm.testing import calc_diff
from _timing import time_interleaved  # noqa: E402  (a sibling module: the script's folder is on sys.path)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'python'))
from block32_reference import make_inputs, reference  # noqa: E402

# M in {128, 1024, 4096} x DeepSeek-V3-like N x K (the issue's shapes).
SHAPES = [(m, n, k) for m in (128, 1024, 4096) for n, k in ((2112, 7168), (24576, 1536), (7168, 2048), (4096, 7168))]


def bench_shape(m, n, k, runs, check):
    a_fp8, sfa32, b_fp8, sfb32 = make_inputs(m, n, k, seed=m + n + k)
    # 128-granular scales of the same operands (the values are what they are; only the time is compared).
    sfa128 = sfa32[:, ::4].contiguous()
    sfb128 = sfb32[::4, ::4].contiguous()
    sfa32_mn = deep_gemm.get_mn_major_tma_aligned_tensor(sfa32)
    sfa128_mn = deep_gemm.get_mn_major_tma_aligned_tensor(sfa128)
    d32 = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)
    d128 = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)

    def block32():
        deep_gemm.fp8_gemm_nt((a_fp8, sfa32_mn), (b_fp8, sfb32), d32, recipe=(1, 32, 32))

    def block128():
        deep_gemm.fp8_gemm_nt((a_fp8, sfa128_mn), (b_fp8, sfb128), d128)

    row = time_interleaved({'block32': block32, 'block128': block128}, runs, label=f'{m}x{n}x{k}: ')
    row['shape'] = (m, n, k)
    if check and row['block32'] is not None:
        d32.fill_(float('nan'))
        block32()
        ref = reference(a_fp8, sfa32, b_fp8, sfb32)
        row['diff'] = float(calc_diff(d32.double(), ref))
    torch.cuda.empty_cache()
    return row


def fmt(x, spec):
    return format(x, spec) if x is not None else 'n/a'


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--shapes', type=str, default='', help='MxNxK,... (default: M 128/1024/4096 x 4 N x K)')
    parser.add_argument('--check', action='store_true', help='also compare the block-32 result with a float64 reference')
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split('x')) for s in args.shapes.split(',')] if args.shapes else SHAPES

    print(f'device: {torch.cuda.get_device_name()}, SMs {torch.cuda.get_device_properties(0).multi_processor_count}, '
          f'torch {torch.__version__}', flush=True)
    rows = [bench_shape(m, n, k, args.runs, args.check) for m, n, k in shapes]

    header = (f'{"M":>5} {"N":>6} {"K":>6} | {"b32 us":>8} {"TFLOPS":>7} | {"b128 us":>8} {"TFLOPS":>7} | '
              f'{"b32/b128":>8}' + (f' | {"diff":>8}' if args.check else ''))
    lines = [header, '-' * len(header)]
    ratios = {}
    for row in rows:
        m, n, k = row['shape']
        t32, t128 = row['block32'], row['block128']
        tflops = lambda t: 2 * m * n * k / (t * 1e-6) / 1e12 if t else None  # noqa: E731
        ratio = t32 / t128 if t32 and t128 else None
        if ratio:
            ratios.setdefault(m, []).append(ratio)
        lines.append(f'{m:>5} {n:>6} {k:>6} | {fmt(t32, "8.1f")} {fmt(tflops(t32), "7.0f")} | {fmt(t128, "8.1f")} '
                     f'{fmt(tflops(t128), "7.0f")} | {fmt(ratio, "8.3f")}' +
                     (f' | {fmt(row.get("diff"), "8.1e")}' if args.check else ''))
    lines.append('')
    for m in sorted(ratios):
        geo = math.exp(sum(math.log(r) for r in ratios[m]) / len(ratios[m]))
        lines.append(f'geomean time ratio block-32 / 128-granular at M={m}: {geo:.3f}')
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
