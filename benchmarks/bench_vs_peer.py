"""Same-run comparison of deep_gemm against DeepGEMM v2.6.1 (the peer), op family by op family.

Both packages are named ``deep_gemm``, so each side runs in a process of its own: this script (the parent)
starts one child per (round, side) in turns -- ours, peer, ours, peer -- and prints one table of medians.
The two sides get identical work: every case builds its inputs from a fixed seed with the torch code below
(not with either library's helpers), so both time the same row counts on the same data.

    python3 benchmarks/bench_vs_peer.py --peer-path /tmp/deepgemm-peer/DeepGEMM-v2.6.1 [--families fp8_dense,masked]
    python3 benchmarks/bench_vs_peer.py --list                    # the families and their cases
    python3 benchmarks/bench_vs_peer.py ... --ours-variants 'DG_FP8_GEMM_CONFIG=256,128,0,0,2;...'
        # also ours under each setting, in the same turns: one more table per variant, against the same peer times
    python3 benchmarks/bench_vs_peer.py ... --ours-variants 'DG_BENCH_INCLUDE_DIR=/tmp/old/deep_gemm/include'
        # ours also with another commit's kernel headers (git archive <commit> deep_gemm/include | tar -x -C /tmp/old)

The peer is built by `.peers/build_deepgemm.sh` (see scripts/gpu_check.sh, step `peer`). Times are medians
of CUDA-event timings with the L2 flushed before each call; "peer/ours" above 1 means we are faster.
A case one side cannot run is shown with its error instead of a time. Raw rounds committed to benchmarks/data/
become docs/performance.md through benchmarks/report_performance.py (which reuses table() below).
"""
import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --ours-variants 'DG_BENCH_INCLUDE_DIR=DIR': ours with the JIT reading the kernel headers from DIR (the
# deep_gemm/include tree of another commit, e.g. from `git archive`): a same-run A/B of kernel changes.
INCLUDE_VARIABLE = 'DG_BENCH_INCLUDE_DIR'

# ---- the cases (pure data: the parent lists them without torch or a GPU) ------------------------------

_DENSE_TARGETS = [(128, 2112, 7168), (128, 24576, 1536), (128, 32768, 512), (128, 7168, 16384), (128, 4096, 7168),
                  (128, 7168, 2048), (4096, 2112, 7168), (4096, 24576, 1536), (4096, 32768, 512), (4096, 7168, 16384),
                  (4096, 4096, 7168), (4096, 7168, 2048)]
_SMALL_N = [(m, n, 7168) for m in (128, 4096) for n in (256, 512, 1024, 1536)]
_CONTIGUOUS = [(8, 4256, 6144, 7168), (8, 4256, 7168, 3072), (4, 8576, 4096, 4096)]
_MASKED = [(32, 192, 6144, 7168), (6, 1024, 7168, 3072), (32, 64, 4096, 7168), (8, 512, 7168, 3072),
           (4, 2048, 7168, 3072), (32, 32, 4096, 7168), (64, 16, 7168, 2048)]
_K_GROUPED = [(4, 4096, 7168, 2048), (8, 2048, 7168, 4096)]   # groups, mean K per group, M, N

FAMILIES = {
    'fp8_dense': [dict(m=m, n=n, k=k) for m, n, k in _DENSE_TARGETS + _SMALL_N],
    'fp8_1d1d': [dict(m=4096, n=n, k=k) for n, k in ((256, 7168), (7168, 2048), (2112, 7168))],
    # zero_padding: ours' ensure_zero_padding. The peer ignores it on SM90 (padding rows computed, never zeroed),
    # which is ours with False: equal work; True (the default) adds the zeroing of padding rows.
    'fp8_contiguous': [dict(groups=g, m=m, n=n, k=k, psum=p, zero_padding=z) for g, m, n, k in _CONTIGUOUS
                       for p, z in ((False, False), (True, False), (False, True))],
    'fp8_masked': [dict(groups=g, m=m, n=n, k=k) for g, m, n, k in _MASKED],
    'fp8_k_grouped': [dict(groups=g, k=k, m=m, n=n) for g, k, m, n in _K_GROUPED],
    'bf16_dense': [dict(m=m, n=n, k=k) for m, n, k in _DENSE_TARGETS],
    'bf16_contiguous': [dict(groups=g, m=m, n=n, k=k, psum=False) for g, m, n, k in _CONTIGUOUS],
    'bf16_masked': [dict(groups=g, m=m, n=n, k=k) for g, m, n, k in _MASKED[:5]],
    'bf16_k_grouped': [dict(groups=g, k=k, m=m, n=n) for g, k, m, n in _K_GROUPED],
    # The legacy Triton kernels (deep_gemm.legacy): m-grouped BF16 "nt" with per-row indices, and the B-fused
    # k-grouped "tn" with (k_indices, k_start, k_end), accumulating into FP32 c.
    'legacy_m_grouped': [dict(groups=g, m=m, n=n, k=k) for g, m, n, k in _CONTIGUOUS],
    'legacy_k_grouped': [dict(groups=g, k=k, m=m, n=n) for g, k, m, n in _K_GROUPED],
}


def case_name(family: str, case: dict) -> str:
    return family + ' ' + ' '.join(f'{k}={v}' for k, v in case.items())


def case_flops(family: str, case: dict) -> float:
    """FLOPs of one call, for TFLOPS (grouped cases: the rows or K the case builds, padding not counted)."""
    if 'groups' not in case:
        return 2.0 * case['m'] * case['n'] * case['k']
    if family.endswith('k_grouped'):
        return 2.0 * sum(group_rows(case['groups'], case['k'], 128, seed_of(family, case))) * case['m'] * case['n']
    return 2.0 * sum(group_rows(case['groups'], case['m'], 1, seed_of(family, case))) * case['n'] * case['k']


def case_bytes(family: str, case: dict) -> float:
    """Least memory traffic of a dense case (inputs read once, output written once), for the roofline."""
    m, n, k = case['m'], case['n'], case['k']
    if family == 'fp8_dense':
        return m * k + n * k + 4.0 * (m * k / 128 + n * k / 128 / 128) + 2.0 * m * n
    return 2.0 * (m * k + n * k + m * n)


def plot_results(families, rounds):
    """benchmarks/_report.py Results of the dense families: ours, the peer and the baseline (medians)."""
    from _report import Result
    impls = (('ours', 'ours', 'us'), ('peer', 'DeepGEMM v2.6.1', 'us'), ('ours', 'cuBLAS(Lt)', 'baseline_us'))
    out = []
    for family in (f for f in families if f in ('fp8_dense', 'bf16_dense')):
        for c in FAMILIES[family]:
            name = case_name(family, c)
            for side, impl, key in impls:
                times = [r[side][name][key] for r in rounds if key in r[side].get(name, {})]
                if times:
                    out.append(Result(op=family, shape=f"{c['m']}x{c['n']}x{c['k']}", impl=impl,
                                      us=statistics.median(times), flops=case_flops(family, c),
                                      bytes=case_bytes(family, c), dtype=family.split('_')[0]))
    return out


def merge_saved_rounds(paths):
    """The rounds of several --json files (runs of different families) as one list: round i of every file merged,
    every side kept (ours, the peer, and ours under each forced variant)."""
    saved = []
    for path in paths:
        with open(path) as f:
            saved.append(json.load(f))
    merged = []
    for i in range(min(len(rounds) for rounds in saved)):
        sides = sorted({side for rounds in saved for side in rounds[i]})
        merged.append({side: {name: t for rounds in saved for name, t in rounds[i].get(side, {}).items()}
                       for side in sides})
    return merged


def seed_of(family: str, case: dict) -> int:
    # Without the layout options, so the variants of a shape (index / psum, zero padding) get the same rows.
    shape = {k: v for k, v in case.items() if k not in ('psum', 'zero_padding')}
    return sum(ord(c) * (i + 1) for i, c in enumerate(case_name(family, shape))) % (2 ** 31)


def group_rows(groups: int, mean: int, align: int, seed: int) -> list:
    """Rows (or K) per group: mean ±30%, each rounded up to `align`, from `seed` (the same on both sides)."""
    rng = random.Random(seed)
    return [max(align, math.ceil(int(mean * rng.uniform(0.7, 1.3)) / align) * align) for _ in range(groups)]


# ---- the child: builds one family's inputs and times the installed deep_gemm --------------------------

# The FP8 casts of the inputs, written with torch (not with either library's helpers, so both sides get the same
# data; bench_host_vs_peer.py uses them too). torch is imported by the children only.

def per_row_fp8(x):      # [.., K] -> e4m3 and FP32 scales per row per 128 of K
    import torch
    *lead, k = x.shape
    xv = x.float().view(*lead, k // 128, 128)
    sf = xv.abs().amax(-1).clamp(min=1e-4) / 448.0
    return (xv / sf.unsqueeze(-1)).to(torch.float8_e4m3fn).view(*lead, k), sf


def per_block_fp8(x):    # [.., N, K] -> e4m3 and FP32 scales per 128x128 block (the last block of N may be partial)
    import torch
    *lead, n, k = x.shape
    padded = -(-n // 128) * 128
    xv = torch.nn.functional.pad(x.float(), (0, 0, 0, padded - n)).view(*lead, padded // 128, 128, k // 128, 128)
    sf = xv.abs().amax(dim=(-3, -1)).clamp(min=1e-4) / 448.0
    codes = (xv / sf[..., None, :, None]).to(torch.float8_e4m3fn).view(*lead, padded, k)
    return codes[..., :n, :].contiguous(), sf


def _child(families, runs, with_baseline, only=None):
    import torch
    import deep_gemm
    from _timing import time_interleaved
    if os.environ.get(INCLUDE_VARIABLE):
        deep_gemm._C.set_include_dir(os.environ[INCLUDE_VARIABLE])   # ours only: an A/B of kernel headers

    def randn(*shape):
        return torch.randn(*shape, device='cuda', dtype=torch.bfloat16)

    def build(family, c):
        if family == 'fp8_dense':
            a, b = per_row_fp8(randn(c['m'], c['k'])), per_block_fp8(randn(c['n'], c['k']))
            d = torch.empty(c['m'], c['n'], device='cuda', dtype=torch.bfloat16)
            # cuBLASLt block-wise: A scales [M, K/128] outer-dim-major, B scales [K/128, N/128].
            sa, sb = a[1].t().contiguous().t(), b[1].t()
            baseline = lambda: torch._scaled_mm(a[0], b[0].t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            return (lambda: deep_gemm.fp8_gemm_nt(a, b, d)), baseline
        if family == 'fp8_1d1d':
            a, b = per_row_fp8(randn(c['m'], c['k'])), per_row_fp8(randn(c['n'], c['k']))
            d = torch.zeros(c['m'], c['n'], device='cuda', dtype=torch.float)
            return lambda: deep_gemm.fp8_gemm_nt(a, b, d, c=d, recipe=(1, 1, 128))
        if family == 'legacy_m_grouped':
            ms = group_rows(c['groups'], c['m'], 1, seed_of(family, c))
            aligned = [math.ceil(m / 128) * 128 for m in ms]
            rows = torch.cat([torch.tensor([g] * m + [-1] * (am - m), dtype=torch.int32)
                              for g, (m, am) in enumerate(zip(ms, aligned))]).cuda()
            a, b = randn(sum(aligned), c['k']), randn(c['groups'], c['n'], c['k'])
            d = torch.empty(sum(aligned), c['n'], device='cuda', dtype=torch.bfloat16)
            return lambda: deep_gemm.legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, rows)
        if family == 'legacy_k_grouped':
            ks = group_rows(c['groups'], c['k'], 128, seed_of(family, c))
            ends = torch.tensor(ks, dtype=torch.int32).cumsum(0).to(torch.int32)
            k_end = ends.cuda()
            k_start = (ends - torch.tensor(ks, dtype=torch.int32)).cuda()
            k_indices = torch.arange(sum(ks), device='cuda', dtype=torch.int32)
            a, b = randn(sum(ks), c['m']), randn(sum(ks), c['n'])
            acc = torch.zeros(c['groups'], c['m'], c['n'], device='cuda', dtype=torch.float)
            return lambda: deep_gemm.legacy.b_fused_k_grouped_bf16_gemm_tn_contiguous_tl(
                a, b, acc, (k_indices, k_start, k_end), True)
        if family in ('fp8_contiguous', 'bf16_contiguous'):
            ms = group_rows(c['groups'], c['m'], 1, seed_of(family, c))
            aligned = [math.ceil(m / 128) * 128 for m in ms]
            layout = torch.empty(c['groups'] if c['psum'] else sum(aligned), device='cuda', dtype=torch.int32)
            start = 0
            for g, (m, am) in enumerate(zip(ms, aligned)):
                if c['psum']:
                    layout[g] = start + m
                else:
                    layout[start:start + m], layout[start + m:start + am] = g, -1
                start += am
            a, b = randn(sum(aligned), c['k']), randn(c['groups'], c['n'], c['k'])
            d = torch.empty(sum(aligned), c['n'], device='cuda', dtype=torch.bfloat16)
            kw = dict(use_psum_layout=True) if c['psum'] else {}
            if 'zero_padding' in c:
                kw['ensure_zero_padding'] = c['zero_padding']
            if family == 'bf16_contiguous':
                return lambda: deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d, layout, **kw)
            a, b = per_row_fp8(a), per_block_fp8(b)
            return lambda: deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout, **kw)
        if family in ('fp8_masked', 'bf16_masked'):
            ms = group_rows(c['groups'], c['m'], 1, seed_of(family, c))
            max_m = math.ceil(max(ms) / 128) * 128
            masked_m = torch.tensor(ms, device='cuda', dtype=torch.int32)
            a, b = randn(c['groups'], max_m, c['k']), randn(c['groups'], c['n'], c['k'])
            d = torch.empty(c['groups'], max_m, c['n'], device='cuda', dtype=torch.bfloat16)
            if family == 'bf16_masked':
                return lambda: deep_gemm.m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, c['m'])
            a, b = per_row_fp8(a), per_block_fp8(b)
            return lambda: deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, c['m'])
        if family in ('fp8_k_grouped', 'bf16_k_grouped'):
            ks = group_rows(c['groups'], c['k'], 128, seed_of(family, c))
            layout = torch.tensor(ks, device='cuda', dtype=torch.int32)
            d = torch.zeros(c['groups'], c['m'], c['n'], device='cuda', dtype=torch.float)
            if family == 'bf16_k_grouped':   # A [sum K, M] and B [sum K, N], MN-major (the "tn" op)
                a, b = randn(sum(ks), c['m']), randn(sum(ks), c['n'])
                return lambda: deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, layout, d)
            # FP8 on SM90, DeepGEMM's K-major form: per group a [M, K_g] block, flattened one after another,
            # scales per row per 128 of K as [M, sum K / 128] (the transposed view of a [sum K / 128, M] buffer).
            parts_a = [per_row_fp8(randn(c['m'], kg)) for kg in ks]
            parts_b = [per_row_fp8(randn(c['n'], kg)) for kg in ks]
            a = torch.cat([p[0].flatten() for p in parts_a])
            b = torch.cat([p[0].flatten() for p in parts_b])
            sfa = torch.cat([p[1].T for p in parts_a]).contiguous().T
            sfb = torch.cat([p[1].T for p in parts_b]).contiguous().T
            return lambda: deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, layout, d)
        if family == 'bf16_dense':
            a, b = randn(c['m'], c['k']), randn(c['n'], c['k'])
            d = torch.empty(c['m'], c['n'], device='cuda', dtype=torch.bfloat16)
            return (lambda: deep_gemm.bf16_gemm_nt(a, b, d)), (lambda: torch.mm(a, b.t()))
        raise ValueError(f'unknown family {family}')

    for family in families:
        for c in FAMILIES[family]:
            if only and only not in case_name(family, c):
                continue
            torch.manual_seed(seed_of(family, c))
            try:
                fns = build(family, c)
                fn, baseline = fns if isinstance(fns, tuple) else (fns, None)
                fn()   # a side that cannot run this case fails here, with its own message
                # With the dense families' baseline (the cuBLAS(Lt) call a torch user would make), in turns.
                fns = {'us': fn, **({'baseline_us': baseline} if baseline is not None and with_baseline else {})}
                result = time_interleaved(fns, runs)
            except Exception as e:   # a case this side cannot run: reported, not fatal
                result = dict(error=(str(e).splitlines() or [type(e).__name__])[0][:160])
            print(json.dumps(dict(case=case_name(family, c), **result)), flush=True)
            torch.cuda.empty_cache()


# ---- the parent: turns, then one table ----------------------------------------------------------------

def run_side(side, peer_path, families, runs, cache_root, variant=None):
    """One child; variant: 'VAR=value' set for ours' child (a forced config), or None."""
    env = dict(os.environ)
    if variant:
        var, _, value = variant.partition('=')
        env[var] = value
    env['PYTHONPATH'] = peer_path if side == 'peer' else ROOT
    env['DG_JIT_CACHE_DIR'] = os.path.join(cache_root, side)
    # Our child also times the dense families' cuBLAS(Lt) baseline, in the same process as ours.
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', '--families', ','.join(families),
                          '--runs', str(runs)] + (['--baseline'] if side == 'ours' else []),
                         env=env, cwd='/', capture_output=True, text=True)
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith('{'):
            row = json.loads(line)
            results[row.pop('case')] = row
    if out.returncode != 0:
        print(f'[{side}] exit {out.returncode}: {out.stderr.strip().splitlines()[-1:] }', file=sys.stderr)
    return results


def table(families, rounds, ours='ours'):
    """Markdown rows: case, ours µs per round, peer µs per round, peer/ours (speed ratio of the medians).
    ours: the rounds' key of our side ('ours', or 'ours VAR=value' for a variant)."""
    lines = [f'| case | {ours} µs | peer µs | cuBLAS(Lt) µs | ours TFLOPS | peer/ours |', '|---|---|---|---|---|---|']
    ratios = {}
    for family in families:
        for c in FAMILIES[family]:
            name = case_name(family, c)
            cells, medians = [], {}
            for side in ('ours', 'peer'):
                got = [r.get(ours if side == 'ours' else side, {}).get(name, {}) for r in rounds]
                times = [g['us'] for g in got if 'us' in g]
                errors = [g['error'] for g in got if 'error' in g]
                cells.append(' / '.join(f'{t:.1f}' for t in times) if times else f'error: {errors[0]}' if errors else '-')
                if times:
                    medians[side] = statistics.median(times)
            base = [r[ours][name]['baseline_us'] for r in rounds if 'baseline_us' in r.get(ours, {}).get(name, {})]
            cells.append(' / '.join(f'{t:.1f}' for t in base) or '-')
            tflops = f"{case_flops(family, c) / medians['ours'] / 1e6:.0f}" if 'ours' in medians else '-'
            ratio = '-'
            if len(medians) == 2:
                ratios.setdefault(family, []).append(medians['peer'] / medians['ours'])
                ratio = f"{medians['peer'] / medians['ours']:.3f}"
            lines.append(f'| {name} | {cells[0]} | {cells[1]} | {cells[2]} | {tflops} | {ratio} |')
    for family, rs in ratios.items():
        lines.append(f'| **{family} geomean** | | | | | {math.exp(sum(map(math.log, rs)) / len(rs)):.3f} |')
    return '\n'.join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--families', default=','.join(FAMILIES), help='comma-separated; default: all')
    p.add_argument('--peer-path', default=os.environ.get('DG_PEER_PATH', ''), help="the built peer's source folder")
    p.add_argument('--rounds', type=int, default=2)
    p.add_argument('--runs', type=int, default=15, help='timed calls per case (median)')
    p.add_argument('--cache-root', default='/tmp/dg_vs_peer')
    p.add_argument('--json', help='also write the raw rounds here')
    p.add_argument('--list', action='store_true')
    p.add_argument('--plot', help='also draw a roofline PNG (ours, the peer, cuBLASLt; needs matplotlib)')
    p.add_argument('--gpu', default='H200', choices=('H200', 'H100'), help="the plot's roofs (default H200)")
    p.add_argument('--from-json', nargs='+', metavar='JSON',
                   help='no timing: the table (and --plot) from saved --json files, their rounds merged')
    p.add_argument('--child', action='store_true',
                   help='time this process\'s deep_gemm only (the one on PYTHONPATH), one JSON line per case; with '
                        '--case, for a profiler (scripts/gpu_check.sh, step profile_grouped)')
    p.add_argument('--case', help='with --child: only the cases whose name contains this text')
    p.add_argument('--baseline', action='store_true', help=argparse.SUPPRESS)
    p.add_argument('--ours-variants', default='',
                   help="';'-separated VAR=value settings (e.g. DG_FP8_GEMM_CONFIG=256,128,0,0,2): ours is also timed "
                        "under each, right after its default turn in every round, with a table of its own")
    args = p.parse_args(argv)
    families = [f for f in args.families.split(',') if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        p.error(f'unknown families {unknown}; choose from {sorted(FAMILIES)}')
    if args.list:
        for f in families:
            for c in FAMILIES[f]:
                print(case_name(f, c))
        return 0
    if args.child:
        _child(families, args.runs, args.baseline, args.case)
        return 0
    if args.from_json:
        rounds = merge_saved_rounds(args.from_json)
        families = [f for f in families if any(case_name(f, c) in rounds[0]['ours'] for c in FAMILIES[f])]
    else:
        if not args.peer_path or not os.path.isdir(os.path.join(args.peer_path, 'deep_gemm')):
            p.error('--peer-path (or DG_PEER_PATH) must name the built peer (the folder build_deepgemm.sh prints)')
        variants = [v.strip() for v in args.ours_variants.split(';') if v.strip()]
        bad = [v for v in variants if '=' not in v]
        if bad:
            p.error(f'--ours-variants: not VAR=value: {bad}')
        rounds = []
        for r in range(args.rounds):
            turn = {'ours': run_side('ours', args.peer_path, families, args.runs, args.cache_root)}
            for v in variants:
                turn[f'ours {v}'] = run_side('ours', args.peer_path, families, args.runs, args.cache_root, v)
            turn['peer'] = run_side('peer', args.peer_path, families, args.runs, args.cache_root)
            rounds.append(turn)
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(rounds, f, indent=1)
    print(table(families, rounds))
    for v in (args.ours_variants.split(';') if not args.from_json else []):
        if v.strip():
            print(f'\n{v.strip()}:\n' + table(families, rounds, f'ours {v.strip()}'))
    if args.plot:
        from _report import plot
        plot(plot_results(families, rounds), args.plot, title='deep_gemm vs DeepGEMM v2.6.1 vs cuBLAS(Lt), same run',
             gpu=args.gpu)
    return 0

if __name__ == '__main__':
    sys.exit(main())
