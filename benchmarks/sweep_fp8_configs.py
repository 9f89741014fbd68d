"""Config sweep for deep_gemm.fp8_gemm_nt (SM90 FP8 1D2D): times candidate kernel configs per shape.

Each candidate is forced through
DG_FP8_GEMM_CONFIG="block_m,block_n,stages[,pipelined[,multicast[,group_n[,split_k]]]]" (block_m 64, 128, 192
(three math warpgroups of 64 rows, block_n <= 128) or 256 (two math warpgroups of 128 rows, block_n <= 128,
pipelined 0); stages 0 = as many as fit (<= 16); pipelined 1 = two scratch accumulators with the promotion
overlapped with the next K block's wgmmas, BLOCK_N <= 128; multicast 0 = off, 1 = 2-CTA cluster sharing B (M-block
pairs), 2 = sharing A (N-block pairs); group_n = N blocks per tile-order group, 0 = the default 8; split_k = units
sharing each tile's K blocks; all rules in docs/env_vars.md). The host reads the variable on every call and keys
its config memo on it, so one process sweeps everything. "default" = the config model's choice, "rules" = the
previous round's rules.

Per candidate: one call (JIT compile), a correctness check (calc_diff vs the dequantized FP32 reference
< 1e-3, output poisoned with NaN; a broken variant is flagged BAD and not timed), then CUDA-event timing
with an L2 flush (median of --runs). The block-wise torch._scaled_mm (cuBLASLt) is timed once per shape
for the ratio. Before the sweep, every variant runs on edge shapes (odd M/N block counts, one K block,
unaligned N) for correctness only. Keeps to --budget seconds (stops sweeping, still prints the tables).

    DG_JIT_USE_NVRTC=1 python3 benchmarks/sweep_fp8_configs.py [--runs 10] [--budget 330] [--shapes ...]
        [--small-n]   (also N in {256, 512, 1024, 1536} at M in {128, 4096}, K = 7168)
        [--configs "default;256,128,0,0,0,16;..."]   (these candidates for every shape instead of the lists)
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
from bench_fp8_gemm import SMALL_N_SHAPES, TARGET_SHAPES, make_inputs  # noqa: E402

ENV = 'DG_FP8_GEMM_CONFIG'

# (block_m, block_n, stages, pipelined, multicast); None = the config model's choice; 'rules' = the previous
# round's measured rules. Most telling first (the budget cuts the tail): 256-row tiles with and without
# multicast (DeepGEMM's pick at M=4096 is 256x128 sharing A), the previous default, wide tiles whose B scales
# straddle 128-column blocks (compile-time promotion), 64-row tiles that put one CTA on every SM at small M,
# 128-row tiles without multicast at small M (the fitted model's picks there; benchmarks/data/ holds the
# sweep it was fitted to).
LARGE_M = [None, 'rules',
           (256, 128, 0, 0, 2), (256, 128, 0, 0, 0), (256, 128, 0, 0, 1), (128, 128, 0, 1, 2), (128, 192, 0, 0, 1),
           (256, 96, 0, 0, 2), (256, 112, 0, 0, 2), (128, 144, 0, 0, 1), (128, 160, 0, 0, 1), (128, 128, 0, 1, 0)]
SMALL_M = [None, 'rules',
           (64, 32, 0, 1, 0), (64, 64, 0, 1, 0), (64, 112, 0, 1, 0), (64, 112, 0, 0, 0), (64, 48, 0, 1, 0),
           (128, 192, 0, 0, 0), (128, 128, 0, 1, 2), (128, 32, 0, 1, 2), (64, 128, 0, 1, 0), (64, 16, 0, 1, 0),
           (128, 128, 0, 1, 0), (128, 64, 0, 1, 0)]
# Shapes with few N tiles (small N): fewer candidates, the ones that spread them over the SMs.
SMALL_N_LARGE_M = [None, 'rules', (256, 128, 0, 0, 0), (256, 64, 0, 0, 0), (128, 128, 0, 1, 0), (128, 64, 0, 1, 0),
                   (128, 96, 0, 1, 0)]
SMALL_N_SMALL_M = [None, 'rules', (64, 16, 0, 1, 0), (64, 32, 0, 1, 0), (128, 32, 0, 1, 2), (64, 64, 0, 1, 0)]
# Correctness-only edge shapes run with every distinct variant (kernel paths: pipelined x multicast x
# block_m, odd M/N block counts for the pair schedulers, a single K block, unaligned N, direct-store D).
EDGE_SHAPES = [(100, 576, 192), (1000, 2112, 512), (129, 129280 // 8 + 40, 640), (4096 + 64, 4096 + 48, 384),
               (64, 7168, 256), (1, 576, 1536)]
EDGE_VARIANTS = [(128, 128, 0, 1, 0), (128, 128, 0, 1, 1), (128, 128, 0, 1, 2), (128, 192, 0, 0, 1),
                 (128, 192, 0, 0, 2), (64, 64, 0, 1, 1), (64, 96, 0, 1, 2), (128, 112, 0, 1, 2),
                 (128, 64, 3, 1, 1), (64, 128, 0, 0, 2), (256, 128, 0, 0, 2), (256, 128, 3, 0, 1),
                 (256, 112, 0, 0, 0), (256, 80, 0, 0, 2), (128, 144, 0, 0, 2), (64, 16, 16, 1, 0)]


def reference(a_fp8, sfa, b_fp8, sfb):
    m, k = a_fp8.shape
    n = b_fp8.shape[0]
    kb = math.ceil(k / 128)
    sa = sfa[:, :kb].repeat_interleave(128, dim=1)[:, :k]
    sb = sfb.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    return (a_fp8.float() * sa) @ (b_fp8.float() * sb).t()


def edge_checks(deadline):
    bad = []
    for m, n, k in EDGE_SHAPES:
        if time.time() > deadline:
            print('edge checks: budget reached, skipping the rest', flush=True)
            break
        a, b, a_fp8, sfa, sfa_mn, b_fp8, sfb = make_inputs(m, n, k)
        ref = reference(a_fp8, sfa, b_fp8, sfb)
        # Also a D the TMA cannot address (odd row stride) on one shape: the direct-store epilogue.
        outs = [torch.empty((m, n), device='cuda', dtype=torch.bfloat16)]
        if n % 8 != 0 or (m, n, k) == EDGE_SHAPES[0]:
            outs.append(torch.empty((m, n + 1), device='cuda', dtype=torch.bfloat16)[:, :n])
        for c in EDGE_VARIANTS:
            set_cfg(ENV, c)
            for d in outs:
                try:
                    # Runtime M/N/K: one kernel per variant serves every edge shape (compile time).
                    diff = checked_diff(lambda: deep_gemm.fp8_gemm_nt((a_fp8, sfa_mn), (b_fp8, sfb), d, compiled_dims=''),
                                        d, ref, f'edge {m}x{n}x{k} [{cfg_str(c)}]')
                except Exception as e:  # noqa: BLE001
                    diff = f'error: {str(e).splitlines()[0]}'
                ok = isinstance(diff, float) and diff < 1e-3
                if not ok:
                    bad.append((m, n, k, cfg_str(c), d.stride(0), diff))
        set_cfg(ENV, None)
        del a, b, a_fp8, b_fp8, ref
        torch.cuda.empty_cache()
    print(f'edge checks: {len(EDGE_SHAPES)} shapes x {len(EDGE_VARIANTS)} variants, '
          f'{"all OK" if not bad else f"{len(bad)} FAILED"}', flush=True)
    for row in bad:
        print('  EDGE FAIL M=%d N=%d K=%d cfg=%s ldd=%d diff=%s' % row, flush=True)
    return bad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--budget', type=float, default=330.0, help='seconds for the whole sweep')
    parser.add_argument('--small-n', action='store_true', help='add N in {256, 512, 1024, 1536} at M in {128, 4096}')
    parser.add_argument('--shapes', type=str, default='')
    parser.add_argument('--no-edges', action='store_true')
    parser.add_argument('--configs', type=str, default='',
                        help="';'-separated candidates for every shape ('default' = the config model)")
    args = parser.parse_args()
    t0 = time.time()
    deadline = t0 + args.budget
    shapes = TARGET_SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split('x')) for s in args.shapes.split(',')]
    if args.small_n:
        shapes = list(shapes) + SMALL_N_SHAPES
    # Large-M shapes first: they carry the 1,400 TFLOPS bar.
    shapes = sorted(shapes, key=lambda s: -s[0])
    print(f'device: {torch.cuda.get_device_name()}, NVRTC={os.environ.get("DG_JIT_USE_NVRTC", "")}', flush=True)

    edge_bad = [] if args.no_edges else edge_checks(t0 + 0.2 * args.budget)

    results = {}  # shape -> list of (cfg, us or None, diff)
    blk = {}
    for m, n, k in shapes:
        a, b, a_fp8, sfa, sfa_mn, b_fp8, sfb = make_inputs(m, n, k)
        ref = reference(a_fp8, sfa, b_fp8, sfb)
        d = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)
        try:
            sa, sb = sfa.t().contiguous().t(), sfb.t()
            f = lambda: torch._scaled_mm(a_fp8, b_fp8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)  # noqa
            f()
            blk[(m, n, k)] = time_fn(f, args.runs, warmup=False)
        except Exception:  # noqa: BLE001
            blk[(m, n, k)] = None
        rows = []
        if args.configs:
            candidates = [None if c == 'default' else c for c in args.configs.split(';')]
        elif n <= 1536:
            candidates = SMALL_N_LARGE_M if m > 256 else SMALL_N_SMALL_M
        else:
            candidates = LARGE_M if m > 256 else SMALL_M
        for c in candidates:
            if time.time() > deadline:
                print('budget reached, stopping the sweep', flush=True)
                break
            set_cfg(ENV, c)
            call = lambda: deep_gemm.fp8_gemm_nt((a_fp8, sfa_mn), (b_fp8, sfb), d)  # noqa: E731
            try:
                diff = checked_diff(call, d, ref, f'{m}x{n}x{k} [{cfg_str(c)}]')
            except Exception as e:  # noqa: BLE001
                rows.append((c, None, f'error: {str(e).splitlines()[0][:80]}'))
                continue
            if not (diff < 1e-3):
                rows.append((c, None, f'BAD diff={diff:.2e}'))
                continue
            rows.append((c, time_fn(call, args.runs, warmup=False), diff))
        set_cfg(ENV, None)
        results[(m, n, k)] = rows
        ok = [r for r in rows if r[1] is not None]
        best = min(ok, key=lambda r: r[1]) if ok else None
        line = f'{m}x{n}x{k}: ' + '  '.join(
            f'[{cfg_str(c)}] {us:.1f}' if us is not None else f'[{cfg_str(c)}] {diff}' for c, us, diff in rows)
        print(line, flush=True)
        if best:
            print(f'  best {cfg_str(best[0])}: {best[1]:.1f} us', flush=True)
        del a, b, a_fp8, b_fp8, ref, d
        torch.cuda.empty_cache()
        if time.time() > deadline:
            break

    # Compact table: default vs best per shape, TFLOPS and ratio to cuBLASLt block-wise.
    print('\n%5s %6s %6s | %8s %7s | %-16s %8s %7s | %7s %6s %6s' %
          ('M', 'N', 'K', 'dflt us', 'TFLOPS', 'best cfg', 'best us', 'TFLOPS', 'blk us', 'x dflt', 'x best'))
    geo = {}
    for (m, n, k), rows in results.items():
        flops = 2 * m * n * k
        dflt = next((r[1] for r in rows if r[0] is None), None)
        ok = [r for r in rows if r[1] is not None]
        best = min(ok, key=lambda r: r[1]) if ok else (None, None, None)
        b = blk.get((m, n, k))
        tf = lambda us: flops / us / 1e6 if us else float('nan')  # noqa: E731
        xd = b / dflt if (b and dflt) else float('nan')
        xb = b / best[1] if (b and best[1]) else float('nan')
        geo.setdefault(m, []).append((xd, xb))
        print('%5d %6d %6d | %8.1f %7.0f | %-16s %8.1f %7.0f | %7.1f %6.2f %6.2f' %
              (m, n, k, dflt or float('nan'), tf(dflt), cfg_str(best[0]) if best[1] else '-',
               best[1] or float('nan'), tf(best[1]), b or float('nan'), xd, xb))
    for m, v in sorted(geo.items()):
        gd = [x for x, _ in v if x == x]
        gb = [x for _, x in v if x == x]
        g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')  # noqa: E731
        print(f'geomean vs block-wise _scaled_mm at M={m}: default {g(gd):.3f}, best-per-shape {g(gb):.3f}')
    bad = [(s, c, diff) for s, rows in results.items() for c, us, diff in rows if us is None]
    for s, c, diff in bad:
        print(f'FLAGGED {s} [{cfg_str(c)}]: {diff}')
    print(f'edge failures: {len(edge_bad)}; sweep time {time.time() - t0:.0f} s')


if __name__ == '__main__':
    main()
