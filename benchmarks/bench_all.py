"""The standard benchmark sets in one run and one table, optionally a roofline PNG.

Runs the shape sets of bench_fp8_gemm.py (fp8_gemm_nt against block-wise and row-wise torch._scaled_mm and
a BF16 torch.mm), bench_bf16_gemm.py (bf16_gemm_nt against torch.mm and deep_gemm.cublaslt_gemm_nt) and
bench_fp8_grouped.py (the M-grouped FP8 ops against a loop of _scaled_mm and our dense GEMM on the
concatenated rows), each timed against its
baselines in the same run (benchmarks/_timing.py), and prints one table: time, TFLOPS, TB/s and the share
of the H200 roofline per shape and implementation (benchmarks/_report.py).

    python3 benchmarks/bench_all.py [--suites fp8,bf16,grouped] [--runs 10] [--plot roofline.png] [--json out.json]
    python3 benchmarks/bench_all.py --from-json out.json --plot roofline.png   (no GPU: redraw saved results)

--plot needs matplotlib (pip install matplotlib).
"""
import argparse
import math
import sys

from _report import Result, gemm_result, load_json, plot, save_json, table

SUITES = ('fp8', 'bf16', 'grouped')


def fp8_suite(runs):
    import bench_fp8_gemm as fp8
    out = []
    for m, n, k in fp8.TARGET_SHAPES:
        row = fp8.bench_shape(m, n, k, runs)
        # FP8 A and B, BF16 D, float32 scales: 1x128 per A row, 128x128 blocks of B.
        scales = 4 * (m + math.ceil(n / 128)) * math.ceil(k / 128)
        for impl in ('ours', 'blockwise', 'rowwise'):
            out.append(gemm_result('fp8_gemm_nt', m, n, k, impl if impl == 'ours' else f'{impl}_scaled_mm',
                                   row[impl], 1, 2, 'fp8', scales))
        out.append(gemm_result('fp8_gemm_nt', m, n, k, 'bf16_mm', row['bf16'], 2, 2, 'bf16'))
        print(f'  fp8_gemm_nt {m}x{n}x{k} done', file=sys.stderr, flush=True)
    return out


def bf16_suite(runs):
    import torch
    import bench_bf16_gemm as bf16
    out = []
    for m, n, k in bf16.TARGET_SHAPES:
        r = bf16.bench_shape('nt', m, n, k, torch.bfloat16, runs)
        out.append(gemm_result('bf16_gemm_nt', m, n, k, 'ours', r['ours_us'], 2, 2, 'bf16'))
        out.append(gemm_result('bf16_gemm_nt', m, n, k, 'torch_mm', r['cublas_us'], 2, 2, 'bf16'))
        out.append(gemm_result('bf16_gemm_nt', m, n, k, 'cublaslt_gemm_nt', r['cublaslt_us'], 2, 2, 'bf16'))
        print(f'  bf16_gemm_nt {m}x{n}x{k} done', file=sys.stderr, flush=True)
    return out


def grouped_suite(runs):
    import torch
    import bench_fp8_grouped as grouped
    torch.manual_seed(0)
    out = []
    for kind, groups, mean, n, k in grouped.SHAPES:
        bench = grouped.bench_contiguous if kind == 'contiguous' else grouped.bench_masked
        ms, t = bench(groups, mean, n, k, runs)
        m_sum = sum(ms)
        # Valid rows only: A rows and D rows once, every group's B once (the dense baseline reads one B).
        flops = 2.0 * m_sum * n * k
        for impl in ('ours', 'loop', 'dense'):
            b_count = 1 if impl == 'dense' else groups
            traffic = m_sum * k + b_count * n * k + 2 * m_sum * n + 4 * (m_sum + b_count * n / 128) * k / 128
            name = {'ours': 'ours', 'loop': 'loop_scaled_mm', 'dense': 'dense_fp8_gemm'}[impl]
            out.append(Result(f'm_grouped_fp8_{kind}', f'G{groups} M{m_sum} N{n} K{k}', name, t.get(impl), flops,
                              float(traffic), 'fp8'))
        print(f'  {kind} G={groups} N={n} K={k} done', file=sys.stderr, flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--suites', default=','.join(SUITES), help=f'comma-separated subset of {",".join(SUITES)}')
    parser.add_argument('--runs', type=int, default=10, help='timed rounds per shape (median)')
    parser.add_argument('--plot', help='write a roofline PNG here (needs matplotlib)')
    parser.add_argument('--json', help='save the results here (redraw later with --from-json)')
    parser.add_argument('--from-json', help='print and plot saved results instead of running (no GPU needed)')
    args = parser.parse_args()
    if args.from_json:
        results = load_json(args.from_json)
    else:
        import torch
        if not torch.cuda.is_available():
            print('bench_all.py needs a GPU (or --from-json FILE)', file=sys.stderr)
            return 1
        suites = [s.strip() for s in args.suites.split(',') if s.strip()]
        unknown = set(suites) - set(SUITES)
        if unknown:
            parser.error(f'unknown suites {sorted(unknown)}; choose from {",".join(SUITES)}')
        print(f'device: {torch.cuda.get_device_name()}, torch {torch.__version__}', flush=True)
        run = {'fp8': fp8_suite, 'bf16': bf16_suite, 'grouped': grouped_suite}
        results = [r for suite in suites for r in run[suite](args.runs)]
    if args.json:
        save_json(results, args.json)
    print(table(results))
    if args.plot:
        plot(results, args.plot)
        print(f'roofline plot: {args.plot}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
