"""Config sweep for deep_gemm.bf16_gemm_nt (SM90 BF16 GEMM): times candidate kernel configs per shape
against torch.mm (cuBLAS), over bench_bf16_gemm.py's TARGET_SHAPES.

Each candidate is forced through DG_BF16_GEMM_CONFIG="block_m,block_n,stages[,multicast]" (stages 0 = as
many as fit in shared memory; multicast 0 = off, 1 = B multicast over a 2-CTA cluster when legal; field
absent = heuristic), set in os.environ followed by deep_gemm.reload_settings(): the host parses the variable
once per settings generation and keys its config memo on it, so one process sweeps everything. "default" =
the heuristics' choice (variable unset).

Per shape: torch.mm timed once. Per candidate: one call (JIT compile included) on an output poisoned with
NaN, checked against the float reference (calc_diff < 1e-5; a wrong variant is reported BAD and not
timed), then timed (median of --runs, L2 flushed, benchmarks/_timing.py). An error (e.g. a config that does
not fit) is reported for that candidate and the sweep goes on. Keeps to --budget seconds (stops sweeping,
still prints the tables). Exit status 1 when a variant computed a wrong result.

    DG_JIT_USE_NVRTC=1 python3 benchmarks/sweep_bf16_configs.py [--runs 15] [--budget 480] [--shapes 4096x7168x2048,...]
        [--candidates "default;128,256,0,0;..."] [--d-row-pad 2]

--d-row-pad P writes D into a [M, N + P] buffer (a column slice): with P % 8 != 0 the rows are not 16-byte
aligned, so the bf16 direct-store epilogue (no shared-memory staging) replaces the TMA-store one.
"""
import argparse
import math
import os
import sys
import time

import torch

import deep_gemm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sweep import cfg_str, checked_diff, set_cfg  # noqa: E402
from _timing import time_fn  # noqa: E402
from bench_bf16_gemm import TARGET_SHAPES  # noqa: E402

ENV = 'DG_BF16_GEMM_CONFIG'
TOLERANCE = 1e-5

# (block_m, block_n, stages, multicast); None = the heuristics' default. tests/cpp/test_bf16_config_override.cpp
# checks that every one of these parses and fits (keep the lists in sync).
LARGE_M = [None,
           (128, 256, 0, 1), (128, 256, 0, 0), (128, 192, 0, 1), (128, 192, 0, 0), (128, 128, 0, 1),
           (128, 128, 0, 0), (128, 224, 0, 1), (128, 224, 0, 0), (128, 160, 0, 1), (128, 160, 0, 0),
           (128, 176, 0, 1), (128, 176, 0, 0), (128, 144, 0, 1), (128, 208, 0, 1)]
SMALL_M = [None,
           (64, 64, 0, 0), (64, 96, 0, 0), (64, 128, 0, 0), (64, 256, 0, 0), (64, 128, 0, 1),
           (128, 32, 0, 0), (128, 64, 0, 0), (128, 128, 0, 0)]
SMALL_M_LIMIT = 256  # candidates for M above this come from LARGE_M


def make_inputs(m, n, k, seed=0):
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((m, k), device='cuda', dtype=torch.float32, generator=g).to(torch.bfloat16)
    b = torch.randn((n, k), device='cuda', dtype=torch.float32, generator=g).to(torch.bfloat16)
    return a, b, a.float() @ b.float().t()


def time_cublas(a, b, runs):
    d_ref = torch.empty((a.shape[0], b.shape[0]), device='cuda', dtype=torch.bfloat16)
    try:
        return time_fn(lambda: torch.mm(a, b.t(), out=d_ref), runs)
    except Exception as e:  # noqa: BLE001
        print(f'  cuBLAS failed: {str(e).splitlines()[0]}', flush=True)
        return None


def run_candidate(c, a, b, d, ref, runs, what):
    """One row (cfg, us or None, diff or message) for candidate `c`."""
    set_cfg(ENV, c)
    call = lambda: deep_gemm.bf16_gemm_nt(a, b, d)  # noqa: E731
    try:
        diff = checked_diff(call, d, ref, what)
    except Exception as e:  # noqa: BLE001
        return c, None, f'error: {str(e).splitlines()[0][:160]}'
    if not diff < TOLERANCE:
        return c, None, f'BAD diff={diff:.2e}'
    return c, time_fn(call, runs, warmup=False), diff


def sweep_shape(m, n, k, runs, deadline, candidates=None, d_row_pad=0):
    """(cuBLAS us, rows) for one shape; stops early at `deadline`."""
    a, b, ref = make_inputs(m, n, k)
    d = torch.empty((m, n + d_row_pad), device='cuda', dtype=torch.bfloat16)[:, :n]
    cublas_us = time_cublas(a, b, runs)
    rows = []
    for c in candidates or (LARGE_M if m > SMALL_M_LIMIT else SMALL_M):
        if time.time() > deadline:
            print('budget reached, stopping the sweep', flush=True)
            break
        rows.append(run_candidate(c, a, b, d, ref, runs, f'{m}x{n}x{k} [{cfg_str(c)}]'))
    set_cfg(ENV, None)
    del a, b, ref, d
    torch.cuda.empty_cache()
    return cublas_us, rows


def print_shape(m, n, k, cublas_us, rows):
    cells = [f'[{cfg_str(c)}] {us:.1f}' if us is not None else f'[{cfg_str(c)}] {diff}' for c, us, diff in rows]
    print(f'{m}x{n}x{k}: cuBLAS {cublas_us or float("nan"):.1f}  ' + '  '.join(cells), flush=True)
    ok = [r for r in rows if r[1] is not None]
    if ok:
        best = min(ok, key=lambda r: r[1])
        print(f'  best {ENV}={cfg_str(best[0])}: {best[1]:.1f} us', flush=True)


def geomean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')


def print_summary(results):
    """Default vs best per shape (TFLOPS, speedup over cuBLAS), then geomeans at M = 4096 and M = 128."""
    print('\n%5s %6s %6s | %8s %7s | %-14s %8s %7s | %9s %7s | %6s %6s' %
          ('M', 'N', 'K', 'dflt us', 'TFLOPS', 'best cfg', 'best us', 'TFLOPS', 'cuBLAS us', 'TFLOPS', 'x dflt',
           'x best'))
    speedups = {}  # M -> [(default, best)] over cuBLAS
    for (m, n, k), (cublas_us, rows) in results.items():
        tflops = lambda us: 2.0 * m * n * k / us / 1e6 if us else float('nan')  # noqa: E731
        dflt = next((r[1] for r in rows if r[0] is None), None)
        ok = [r for r in rows if r[1] is not None]
        best = min(ok, key=lambda r: r[1]) if ok else (None, None, None)
        x_dflt = cublas_us / dflt if (cublas_us and dflt) else float('nan')
        x_best = cublas_us / best[1] if (cublas_us and best[1]) else float('nan')
        speedups.setdefault(m, []).append((x_dflt, x_best))
        print('%5d %6d %6d | %8.1f %7.0f | %-14s %8.1f %7.0f | %9.1f %7.0f | %6.3f %6.3f' %
              (m, n, k, dflt or float('nan'), tflops(dflt), cfg_str(best[0]) if best[1] else '-',
               best[1] or float('nan'), tflops(best[1]), cublas_us or float('nan'), tflops(cublas_us), x_dflt, x_best))
    for m in (4096, 128):
        if m in speedups:
            print(f'geomean speedup vs cuBLAS at M={m}: default {geomean([x for x, _ in speedups[m]]):.3f}, '
                  f'best-per-shape {geomean([x for _, x in speedups[m]]):.3f}')
    flagged = [(s, c, diff) for s, (_, rows) in results.items() for c, us, diff in rows if us is None]
    for s, c, diff in flagged:
        print(f'FLAGGED {"x".join(map(str, s))} [{cfg_str(c)}]: {diff}')
    return sum(1 for _, _, diff in flagged if str(diff).startswith('BAD'))


def parse_candidates(text):
    """'default;128,256,0,0;...' -> [None, (128, 256, 0, 0), ...]"""
    return [None if c.strip() == 'default' else tuple(int(v) for v in c.split(','))
            for c in text.split(';') if c.strip()]


def parse_shapes(text):
    return [tuple(int(v) for v in s.split('x')) for s in text.split(',') if s.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--runs', type=int, default=15)
    parser.add_argument('--budget', type=float, default=480.0, help='seconds for the whole sweep')
    parser.add_argument('--shapes', type=str, default='', help='MxNxK,... (default: bench_bf16_gemm TARGET_SHAPES)')
    parser.add_argument('--candidates', type=str, default='',
                        help='"default;bm,bn,stages[,multicast];..." (default: the built-in lists)')
    parser.add_argument('--d-row-pad', type=int, default=0, help='D row stride N + this (see above)')
    args = parser.parse_args()
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        sys.exit('needs a Hopper (sm_90) GPU')
    if os.environ.get(ENV):
        sys.exit(f'unset {ENV} first: the sweep sets it per candidate')
    t0 = time.time()
    deadline = t0 + args.budget
    shapes = parse_shapes(args.shapes) if args.shapes else list(TARGET_SHAPES)
    print(f'device: {torch.cuda.get_device_name()}, NVRTC={os.environ.get("DG_JIT_USE_NVRTC", "")}, '
          f'budget {args.budget:.0f} s', flush=True)

    results = {}  # (m, n, k) -> (cuBLAS us, rows)
    for m, n, k in shapes:
        if time.time() > deadline:
            print(f'budget reached, skipping {m}x{n}x{k} and the rest', flush=True)
            break
        results[(m, n, k)] = sweep_shape(m, n, k, args.runs, deadline, parse_candidates(args.candidates),
                                         args.d_row_pad)
        print_shape(m, n, k, *results[(m, n, k)])

    num_bad = print_summary(results)
    print(f'wrong results: {num_bad}; sweep time {time.time() - t0:.0f} s')
    sys.exit(1 if num_bad else 0)


if __name__ == '__main__':
    main()
