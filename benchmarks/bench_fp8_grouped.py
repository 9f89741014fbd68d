"""Benchmark: the M-grouped FP8 GEMMs (deep_gemm.m_grouped_fp8_gemm_nt_contiguous / _masked, SM90 1D2D)
on the grouped shapes of the performance targets and a decode-like masked one, against two baselines
measured in the same run, in turns (one call of each per round, L2 flushed before each call, median of N
rounds):

- `loop`: one block-wise torch._scaled_mm (cuBLASLt, 1x128 A / 128x128 B scales) per group;
- `dense`: our dense fp8_gemm_nt on the concatenated problem (all groups' rows against one B), the
  speed a grouped kernel could reach with no grouping overhead.

Group sizes are random (+-30% around the mean, fixed seed); contiguous groups are multiples of 128 rows
(no padding rows), masked groups multiples of 16 with max_m = the largest group rounded up to 128. TFLOPS count the valid rows only.

`--overlap` times instead the masked GEMM with tile signals (enable_overlap=True, SGLang's overlapped combine) against
the same call without, interleaved, on SGLang-like decode shapes (G 16/32, max_m 256-1024, N x K 4096 x 7168 and
7168 x 2048; `--overlap-shapes GxMAX_MxNxK,...` for others; `--max-block-n` as SGLang passes it).

`--config VALUE` (repeatable) also times ours with DG_FP8_GEMM_CONFIG=VALUE forced, in the same turns (e.g. a
previous default against the current one); the settings are reloaded around each such call, on the host while
the sleep kernel ahead of it runs.

    python3 benchmarks/bench_fp8_grouped.py [--runs 10] [--config 128,128,0,1,0 ...]
        [--shapes masked:32x48x4096x7168,...]
    python3 benchmarks/bench_fp8_grouped.py --overlap [--runs 20] [--max-block-n 256] [--overlap-shapes 16x256x4096x7168]
"""
import argparse
import os
import random

import torch

import deep_gemm
from _sweep import set_cfg
from _timing import time_interleaved
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

CONFIG_ENV = 'DG_FP8_GEMM_CONFIG'

# (kind, groups, mean rows per group, N, K); kind: contiguous (a group id per row), psum (contiguous, the psum
# layout: group ends) or masked.
KINDS = ('contiguous', 'psum', 'masked')
SHAPES = [
    ('contiguous', 8, 4256, 6144, 7168),
    ('contiguous', 8, 4256, 7168, 3072),
    ('contiguous', 4, 8576, 4096, 4096),
    ('masked', 32, 192, 6144, 7168),
    ('masked', 6, 1024, 7168, 3072),
    ('masked', 32, 64, 4096, 7168),  # decode-like: small groups, most of a 128-row tile's rows past masked_m
]


def parse_shapes(text):
    """`--shapes` value: comma-separated KIND:GxMEANxNxK (KIND contiguous, psum (contiguous with the psum
    layout) or masked), e.g. 'masked:32x48x4096x7168,masked:32x96x4096x7168' for a sweep of the masked rows per
    group."""
    shapes = []
    for item in text.split(','):
        kind, _, dims = item.strip().partition(':')
        values = dims.split('x')
        if kind not in KINDS or len(values) != 4 or not all(v.isdigit() and int(v) > 0 for v in values):
            raise argparse.ArgumentTypeError(
                f'bad shape {item!r}: want KIND:GxMEANxNxK, KIND one of {", ".join(KINDS)}')
        shapes.append((kind, *map(int, values)))
    return shapes


def group_sizes(groups, mean, seed, align=1):
    rnd = random.Random(seed)
    return [max(align, int(mean * rnd.uniform(0.7, 1.3)) // align * align) for _ in range(groups)]


def forced(fn, value):
    """`fn` called with DG_FP8_GEMM_CONFIG=value (the variable's previous value put back after)."""
    def run():
        old = os.environ.get(CONFIG_ENV)
        set_cfg(CONFIG_ENV, value)
        try:
            fn()
        finally:
            set_cfg(CONFIG_ENV, old)
    return run


def variants(ours, configs):
    return {'ours': ours, **{f'ours@{v}': forced(ours, v) for v in configs}}


def quant_b(groups, n, k):
    b = torch.randn((groups, n, k), device='cuda', dtype=torch.bfloat16)
    parts = [per_block_cast_to_fp8(b[g]) for g in range(groups)]
    return torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts])


def kernel_sfa(sfa):
    """A scales already in the kernel's layout (M-major, TMA-aligned): no conversion inside the timing."""
    return deep_gemm.get_mn_major_tma_aligned_tensor(sfa)


def contiguous_rows(groups, mean, n, k):
    """The contiguous shape's group rows (multiples of the layout's alignment) and each group's first row."""
    ms = group_sizes(groups, mean, seed=groups * n + k, align=deep_gemm.get_mk_alignment_for_contiguous_layout())
    return ms, [sum(ms[:g]) for g in range(groups)]


def masked_rows(groups, mean, n, k):
    """The masked shape's valid rows per group (multiples of 16, for cuBLASLt), max_m (the largest rounded up to
    128) and expected_m (their mean)."""
    ms = group_sizes(groups, mean, seed=groups * n + k, align=16)
    return ms, (max(ms) + 127) // 128 * 128, sum(ms) // groups


def contiguous_layout(ms, psum):
    """grouped_layout of groups with `ms` rows back to back: a group id per row, or (psum) the groups' ends."""
    if psum:
        return torch.tensor([sum(ms[:g + 1]) for g in range(len(ms))], dtype=torch.int32).cuda()
    return torch.cat([torch.full((m,), g, dtype=torch.int32) for g, m in enumerate(ms)]).cuda()


def bench_contiguous(groups, mean, n, k, runs, configs=(), psum=False):
    ms, starts = contiguous_rows(groups, mean, n, k)
    m_sum = sum(ms)
    a_fp8, sfa = per_token_cast_to_fp8(torch.randn((m_sum, k), device='cuda', dtype=torch.bfloat16))
    b_fp8, sfb = quant_b(groups, n, k)
    layout = contiguous_layout(ms, psum)
    sfa_k = kernel_sfa(sfa)
    d = torch.empty((m_sum, n), device='cuda', dtype=torch.bfloat16)

    def ours():
        deep_gemm.m_grouped_fp8_gemm_nt_contiguous((a_fp8, sfa_k), (b_fp8, sfb), d, layout, use_psum_layout=psum)

    loop = make_loop([(a_fp8[s:s + m], sfa[s:s + m]) for s, m in zip(starts, ms)], b_fp8, sfb)

    def dense():
        deep_gemm.fp8_gemm_nt((a_fp8, sfa_k), (b_fp8[0], sfb[0]), d)

    return ms, time_interleaved({**variants(ours, configs), 'loop': loop, 'dense': dense}, runs,
                                label=f'contiguous{" psum" if psum else ""} {ms}: ')


def bench_masked(groups, mean, n, k, runs, configs=()):
    ms, max_m, expected_m = masked_rows(groups, mean, n, k)
    a = torch.randn((groups, max_m, k), device='cuda', dtype=torch.bfloat16)
    parts = [per_token_cast_to_fp8(a[g]) for g in range(groups)]
    a_fp8, sfa = torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts])
    b_fp8, sfb = quant_b(groups, n, k)
    masked_m = torch.tensor(ms, device='cuda', dtype=torch.int32)
    sfa_k = kernel_sfa(sfa)
    d = torch.empty((groups, max_m, n), device='cuda', dtype=torch.bfloat16)

    def ours():
        deep_gemm.m_grouped_fp8_gemm_nt_masked((a_fp8, sfa_k), (b_fp8, sfb), d, masked_m, expected_m)

    loop = make_loop([(a_fp8[g, :m], sfa[g, :m]) for g, m in enumerate(ms)], b_fp8, sfb)

    # The concatenated problem: all valid rows in one [sum_M, K] A.
    a_cat = torch.cat([a_fp8[g, :m] for g, m in enumerate(ms)])
    sfa_cat = kernel_sfa(torch.cat([sfa[g, :m] for g, m in enumerate(ms)]))
    d_cat = torch.empty((sum(ms), n), device='cuda', dtype=torch.bfloat16)

    def dense():
        deep_gemm.fp8_gemm_nt((a_cat, sfa_cat), (b_fp8[0], sfb[0]), d_cat)

    return ms, time_interleaved({**variants(ours, configs), 'loop': loop, 'dense': dense}, runs,
                                label=f'masked {ms}: ')


# (groups, max_m, N, K): SGLang's low-latency MoE layers (DeepEP's masked layout), down projection 7168 x 2048 and
# 4096 x 7168; the valid rows per group about half of max_m.
OVERLAP_SHAPES = [(g, max_m, n, k) for g in (16, 32) for max_m in (256, 512, 1024) for n, k in ((4096, 7168), (7168, 2048))]


def parse_overlap_shapes(text):
    """'16x256x4096x7168,...' -> [(16, 256, 4096, 7168), ...]."""
    try:
        shapes = [tuple(int(x) for x in item.strip().split('x')) for item in text.split(',')]
    except ValueError:
        shapes = []
    if not shapes or any(len(s) != 4 or min(s) <= 0 for s in shapes):
        raise argparse.ArgumentTypeError(f'expected GxMAX_MxNxK,... with positive ints; got {text!r}')
    return shapes


def bench_masked_overlap(groups, max_m, n, k, runs, max_block_n=256):
    """The masked GEMM without and with tile signals, interleaved: (valid rows, times, (block_m, threshold))."""
    ms = [min(max_m, m) for m in group_sizes(groups, max_m // 2, seed=groups * n + k + max_m)]
    a = torch.randn((groups, max_m, k), device='cuda', dtype=torch.bfloat16)
    parts = [per_token_cast_to_fp8(a[g]) for g in range(groups)]
    a_fp8, sfa = torch.stack([p[0] for p in parts]), kernel_sfa(torch.stack([p[1] for p in parts]))
    b_fp8, sfb = quant_b(groups, n, k)
    masked_m = torch.tensor(ms, device='cuda', dtype=torch.int32)
    d = torch.empty((groups, max_m, n), device='cuda', dtype=torch.bfloat16)
    signal = torch.zeros(groups * ((max_m + 63) // 64), device='cuda', dtype=torch.int32)
    expected_m = sum(ms) // groups
    tile = []

    def off():
        deep_gemm.m_grouped_fp8_gemm_nt_masked((a_fp8, sfa), (b_fp8, sfb), d, masked_m, expected_m, max_block_n=max_block_n)

    def on():  # (the counters keep counting up across calls: what they count does not change the time)
        tile[:] = deep_gemm.m_grouped_fp8_gemm_nt_masked((a_fp8, sfa), (b_fp8, sfb), d, masked_m, expected_m,
                                                         max_block_n=max_block_n, enable_overlap=True, signal=signal)

    times = time_interleaved({'off': off, 'on': on}, runs, label=f'overlap G={groups} max_m={max_m} {n}x{k}: ')
    return ms, times, tuple(tile)


def print_overlap_table(shapes, runs, max_block_n=256, bench=bench_masked_overlap):
    print(f'device: {torch.cuda.get_device_name()}, torch {torch.__version__}, max_block_n {max_block_n}', flush=True)
    header = (f'{"G":>3} {"max_m":>5} {"sum M":>6} {"N":>5} {"K":>5} | {"off us":>8} {"on us":>8} {"on/off":>6} | '
              f'{"block_m":>7} {"threshold":>9}')
    lines = [header, '-' * len(header)]
    for groups, max_m, n, k in shapes:
        ms, t, tile = bench(groups, max_m, n, k, runs, max_block_n=max_block_n)
        ratio = t['on'] / t['off'] if t.get('on') and t.get('off') else None
        block_m, threshold = tile if tile else (None, None)
        lines.append(f'{groups:>3} {max_m:>5} {sum(ms):>6} {n:>5} {k:>5} | {fmt(t.get("off"), "8.1f")} '
                     f'{fmt(t.get("on"), "8.1f")} {fmt(ratio, "6.3f")} | {fmt(block_m, "7d")} {fmt(threshold, "9d")}')
        torch.cuda.empty_cache()
    lines.append('on/off: the time with tile signals / without (same tile; > 1: the signals cost)')
    print('\n'.join(lines))


def make_loop(a_parts, b_fp8, sfb):
    """One cuBLASLt block-wise _scaled_mm per group (A scales outer-dim-major, B scales [K/128, N/128])."""
    args = [(a, s.t().contiguous().t(), b_fp8[g], sfb[g].t()) for g, (a, s) in enumerate(a_parts) if a.shape[0] > 0]

    def loop():
        for a, sa, b, sb in args:
            torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    return loop


def fmt(x, spec):
    return format(x, spec) if x is not None else 'n/a'


HEADER = (f'{"kind":>10} {"G":>3} {"sum M":>6} {"N":>5} {"K":>5} | {"ours us":>8} {"TFLOPS":>7} | '
          f'{"loop us":>8} {"x loop":>6} | {"dense us":>8} {"x dense":>7}')
FOOTER = 'x loop / x dense: their time / ours (> 1: ours is faster)'


def table_row(kind, groups, ms, n, k, t):
    """One line of the table from the times `t` (ours, loop, dense; None where a call failed)."""
    ours = t['ours']
    tflops = 2 * sum(ms) * n * k / (ours * 1e-6) / 1e12 if ours else None
    ratio = {b: t[b] / ours if ours and t.get(b) else None for b in ('loop', 'dense')}
    return (f'{kind:>10} {groups:>3} {sum(ms):>6} {n:>5} {k:>5} | {fmt(ours, "8.1f")} {fmt(tflops, "7.0f")} | '
            f'{fmt(t["loop"], "8.1f")} {fmt(ratio["loop"], "6.2f")} | {fmt(t["dense"], "8.1f")} '
            f'{fmt(ratio["dense"], "7.2f")}')


def print_table(bench_contiguous, bench_masked, shapes, forced=(), **bench_args):
    """Times every (kind, groups, mean, n, k) of `shapes` with bench_masked(groups, mean, n, k, **bench_args) or
    bench_contiguous(..., psum=kind == 'psum') -> (group rows, times by name), and prints the table; `forced`:
    the DG_FP8_GEMM_CONFIG values also timed (a line each under their shape)."""
    torch.manual_seed(0)
    print(f'device: {torch.cuda.get_device_name()}, torch {torch.__version__}', flush=True)
    lines = [HEADER, '-' * len(HEADER)]
    data = []  # per shape, its times as the config sweeps' data files write them (benchmarks/data)
    for kind, groups, mean, n, k in shapes:
        if kind == 'masked':
            ms, t = bench_masked(groups, mean, n, k, **bench_args)
        else:
            ms, t = bench_contiguous(groups, mean, n, k, psum=kind == 'psum', **bench_args)
        ours = t['ours']
        lines.append(table_row(kind, groups, ms, n, k, t))
        print(f'  done {kind} G={groups} N={n} K={k}: ours {fmt(ours, ".1f")} us', flush=True)
        data.append(f'{kind}:{groups}x{mean}x{n}x{k}: [default] {fmt(ours, ".1f")}' +
                    ''.join(f'  [{v}] {fmt(t[f"ours@{v}"], ".1f")}' for v in forced))
        for v in forced:
            forced_us = t[f'ours@{v}']
            lines.append(f'{"":>10} DG_FP8_GEMM_CONFIG={v}: {fmt(forced_us, ".1f")} us'
                         f' (its time / ours {fmt(forced_us / ours if forced_us and ours else None, ".3f")})')
        torch.cuda.empty_cache()
    lines.append(FOOTER)
    lines += ['', '# ours per shape and config, in the format of benchmarks/data/fp8_sweep_h200.txt:'] + data
    print('\n'.join(lines))


def argument_parser():
    """The options both grouped benchmarks take: --runs and --shapes."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--shapes', type=parse_shapes, default=SHAPES,
                        help='comma-separated KIND:GxMEANxNxK instead of the default shapes (KIND contiguous, psum '
                             'or masked)')
    return parser


def main():
    parser = argument_parser()
    parser.add_argument('--config', action='append', default=[],
                        help='also time ours with DG_FP8_GEMM_CONFIG=VALUE forced (repeatable)')
    parser.add_argument('--overlap', action='store_true',
                        help='time the masked GEMM with tile signals (enable_overlap) against without, on --overlap-shapes')
    parser.add_argument('--overlap-shapes', type=parse_overlap_shapes, default=OVERLAP_SHAPES,
                        help='comma-separated GxMAX_MxNxK for --overlap')
    parser.add_argument('--max-block-n', type=int, default=256, help='max_block_n of the --overlap calls')
    args = parser.parse_args()
    if args.overlap:
        print_overlap_table(args.overlap_shapes, args.runs, args.max_block_n)
        return
    print_table(bench_contiguous, bench_masked, args.shapes, args.config, runs=args.runs, configs=args.config)


if __name__ == '__main__':
    main()
