"""Benchmark: deep_gemm.bf16_gemm_{nt,nn,tn,tt} (SM90 BF16 wgmma GEMM) against torch.mm (cuBLAS) in the
same run, and against deep_gemm.cublaslt_gemm_* (the same problem through cuBLASLt via deep_gemm's own
binding: descriptors memoized, so its host cost is ours, not torch's).

Per shape and layout: ours and torch.mm on the same operands (torch.mm gets the same memory layout via
views, so cuBLAS sees the same transposes), timed in turns (one call of each per round), CUDA events around
each call, L2 flushed (256 MB write) before each call, median of N >= 15 rounds. TFLOPS, GB/s and the speedup over cuBLAS; geometric means per M.
The summary table is printed last.

    python3 benchmarks/bench_bf16_gemm.py [--runs 20] [--layouts nt,nn,tn,tt] [--out bf16|fp32]
"""
import argparse
import math
import sys

import torch

import deep_gemm
from _timing import time_interleaved

NK = ((7168, 2048), (2112, 7168), (24576, 1536), (4096, 7168))
TARGET_SHAPES = [(m, n, k) for m in (4096, 128) for n, k in NK]

def make_operands(layout, m, n, k):
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16)
    a_arg = a if layout[0] == 'n' else a.t().contiguous()  # tn/tt: a stored [K, M]
    b_arg = b if layout[1] == 't' else b.t().contiguous()  # nn/tn: b stored [K, N]
    return a_arg, b_arg


def bench_shape(layout, m, n, k, out_dtype, runs):
    a_arg, b_arg = make_operands(layout, m, n, k)
    d = torch.empty((m, n), device='cuda', dtype=out_dtype)
    d_ref = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)
    d_lt = torch.empty((m, n), device='cuda', dtype=out_dtype)
    op = getattr(deep_gemm, f'bf16_gemm_{layout}')
    lt_op = getattr(deep_gemm, f'cublaslt_gemm_{layout}')
    # Logical [M, K] and [K, N] views with the same storage as ours (cuBLAS picks its transposes from them).
    a_mk = a_arg if layout[0] == 'n' else a_arg.t()
    b_kn = b_arg.t() if layout[1] == 't' else b_arg

    def ours():
        op(a_arg, b_arg, d)

    def cublas():
        torch.mm(a_mk, b_kn, out=d_ref)

    def cublaslt():
        lt_op(a_arg, b_arg, d_lt)

    t = time_interleaved({'ours': ours, 'cublas': cublas, 'cublaslt': cublaslt}, runs, label=f'{layout} {m}x{n}x{k}: ')
    t_ours, t_ref, t_lt = t['ours'], t['cublas'], t['cublaslt']
    if t_ours is None or t_ref is None or t_lt is None:
        raise RuntimeError(f'bf16_gemm_{layout} {m}x{n}x{k}: a timed call failed (see above)')
    flops = 2.0 * m * n * k
    bytes_ = 2 * (m * k + n * k) + d.element_size() * m * n
    return {
        'ours_us': t_ours, 'cublas_us': t_ref,
        'ours_tflops': flops / t_ours / 1e6, 'cublas_tflops': flops / t_ref / 1e6,
        'cublaslt_us': t_lt, 'cublaslt_tflops': flops / t_lt / 1e6,
        'ours_gbs': bytes_ / t_ours / 1e3, 'speedup': t_ref / t_ours,
    }


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float('nan')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--layouts', default='nt')
    parser.add_argument('--out', choices=('bf16', 'fp32'), default='bf16')
    args = parser.parse_args()
    if args.runs < 15:
        sys.exit('--runs must be >= 15')
    if not torch.cuda.is_available():
        sys.exit('needs a CUDA GPU')
    out_dtype = torch.bfloat16 if args.out == 'bf16' else torch.float32
    layouts = [s.strip() for s in args.layouts.split(',') if s.strip()]
    torch.manual_seed(0)

    rows = []
    for layout in layouts:
        for m, n, k in TARGET_SHAPES:
            r = bench_shape(layout, m, n, k, out_dtype, args.runs)
            rows.append((layout, m, n, k, r))
            print(f'{layout} {m}x{n}x{k}: ours {r["ours_us"]:.1f} us {r["ours_tflops"]:.0f} TFLOPS | '
                  f'cuBLAS {r["cublas_us"]:.1f} us {r["cublas_tflops"]:.0f} TFLOPS | '
                  f'cublaslt_gemm {r["cublaslt_us"]:.1f} us {r["cublaslt_tflops"]:.0f} TFLOPS | x{r["speedup"]:.3f}', flush=True)

    lines = [f'BF16 GEMM (d {args.out}), {torch.cuda.get_device_name()}, median of {args.runs}, L2 flushed',
             f'{"layout":>6} {"M":>5} {"N":>6} {"K":>5} | {"ours us":>8} {"TFLOPS":>7} {"GB/s":>6} | '
             f'{"cuBLAS us":>9} {"TFLOPS":>7} | {"cublaslt us":>11} {"TFLOPS":>7} | {"speedup":>7}']
    for layout, m, n, k, r in rows:
        lines.append(f'{layout:>6} {m:>5} {n:>6} {k:>5} | {r["ours_us"]:>8.1f} {r["ours_tflops"]:>7.0f} '
                     f'{r["ours_gbs"]:>6.0f} | {r["cublas_us"]:>9.1f} {r["cublas_tflops"]:>7.0f} | '
                     f'{r["cublaslt_us"]:>11.1f} {r["cublaslt_tflops"]:>7.0f} | '
                     f'{r["speedup"]:>7.3f}')
    for layout in layouts:
        for m in (4096, 128):
            g = geomean([r['speedup'] for lo, mm, _, _, r in rows if lo == layout and mm == m])
            t = geomean([r['ours_tflops'] for lo, mm, _, _, r in rows if lo == layout and mm == m])
            lines.append(f'geomean {layout} M={m}: speedup vs cuBLAS {g:.3f}, ours {t:.0f} TFLOPS')
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
