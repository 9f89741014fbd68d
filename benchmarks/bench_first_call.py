"""Cold compiles and first calls, with NVCC and with NVRTC.

1. Cold compile of ten FP8 GEMM kernels (the ones fp8_gemm_nt builds on an H200 for ten LLM shapes, see
   SHAPES): each compiler in a fresh process with an empty cache; the time of each build (compile + cache
   write). Needs no GPU.
2. Warm-up: `python -m deep_gemm warmup` of --warmup-kernels distinct kernels (default 100) with --jobs
   parallel compiles (default min(16, CPUs)) into an empty cache, each compiler. Needs no GPU.
3. With a GPU: the first fp8_gemm_nt call for each of the ten shapes in a fresh process, cold cache then
   warm cache (compile or load, launch, sync), each compiler.

The kernel sources come from build/dg_kernel_sources (`cmake --build build --target dg_kernel_sources`;
see benchmarks/kernel_sources.cpp), or --record FILE (a DG_JIT_RECORD file) for parts 1 and 2.

Usage: python benchmarks/bench_first_call.py [--record FILE | --family fp8|bf16|fp8_1d1d] [--warmup-kernels N]
       [--jobs J] [--no-gpu]
       [--untrimmed] [--repeat R]   (part 1 also NVCC with DG_JIT_TRIM_HEADERS=0, the full cuda_runtime.h;
                                     R rounds, per-kernel median)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILERS = (('NVCC', '0'), ('NVRTC', '1'))

# The first ten shapes of benchmarks/kernel_sources.cpp (one kernel each), in the same order.
SHAPES = [(4096, 2112, 7168), (128, 24576, 1536), (64, 32768, 512), (2048, 7168, 16384), (256, 4096, 7168),
          (8192, 7168, 2048), (1, 576, 7168), (1024, 2112, 192), (512, 576, 1536), (16384, 4096, 512)]

BUILD_CHILD = r'''
import json, sys, time
from deep_gemm import _C
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    r = json.loads(line)
    t0 = time.perf_counter()
    out = _C.build_source(r['name'], r['symbol'], r['code'], r['arch'])
    print(json.dumps({'symbol': r['symbol'], 'ms': (time.perf_counter() - t0) * 1e3, 'compiled': out['compiled']}))
'''

FIRST_CALL_CHILD = r'''
import json, sys, time, torch, deep_gemm
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
inputs = []
for m, n, k in json.loads(sys.argv[1]):
    a = per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    a = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))  # the layout kernel is not timed below
    b = per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    inputs.append((a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
torch.cuda.synchronize()
times = []
for a, b, d in inputs:
    t0 = time.perf_counter()
    deep_gemm.fp8_gemm_nt(a, b, d)
    torch.cuda.synchronize()
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(times))
'''


def child_env(cache: str, nvrtc: str, trim: str = None) -> dict:
    env = dict(os.environ, DG_JIT_CACHE_DIR=cache, DG_JIT_USE_NVRTC=nvrtc)
    if trim is not None:
        env['DG_JIT_TRIM_HEADERS'] = trim
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')  # an in-place build of the package
    return env


def run_child(args, env, timeout=600) -> str:
    out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError((out.stderr.strip().splitlines() or ['?'])[-1])
    return out.stdout


def kernel_sources(count: int, record: str, tool: str, family: str, workdir: str) -> str:
    """A DG_JIT_RECORD-format file with `count` kernels (the first `count` of --record, or the tool's)."""
    path = os.path.join(workdir, f'kernels{count}.jsonl')
    if record:
        with open(record) as f:
            lines = [line for line in f if line.strip()][:count]
        if len(lines) < count:
            print(f'note: {record} has only {len(lines)} kernels', file=sys.stderr)
        text = ''.join(lines)
    else:
        out = subprocess.run([tool, str(count), family], capture_output=True, text=True)
        if out.returncode != 0:  # e.g. fewer distinct kernels than asked: use those there are
            print(f'note: {os.path.basename(tool)}: {out.stderr.strip()}', file=sys.stderr)
        text = out.stdout
    with open(path, 'w') as f:
        f.write(text)
    return path


def short(symbol: str) -> str:
    for prefix in ('sm90_fp8_gemm_1d2d_', 'sm90_fp8_gemm_1d1d_', 'sm90_bf16_gemm_'):
        symbol = symbol.replace(prefix, '')
    return symbol


def cold_compiles(path: str, untrimmed: bool, repeat: int) -> None:
    variants = [(label, nvrtc, None) for label, nvrtc in COMPILERS]
    if untrimmed:  # DG_JIT_TRIM_HEADERS=0: NVCC with its full default header (NVRTC has no such switch)
        variants = [('NVCC', '0', '1'), ('NVCC full', '0', '0'), ('NVRTC', '1', None)]
    rounds = {}
    for round_ in range(repeat):
        # Every round runs every variant; the order alternates so that a drifting machine load (other jobs,
        # clocks) does not favour one of them. Per kernel, the median over the rounds.
        for label, nvrtc, trim in (variants if round_ % 2 == 0 else variants[::-1]):
            cache = tempfile.mkdtemp(prefix='dg_cold_')
            try:
                lines = run_child(['-c', BUILD_CHILD, path], child_env(cache, nvrtc, trim)).splitlines()
                rounds.setdefault(label, []).append([json.loads(line) for line in lines if line.startswith('{')])
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f'{label}: failed: {e}')
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    results = {label: [dict(runs[0][i], ms=statistics.median(run[i]['ms'] for run in runs))
                       for i in range(min(len(run) for run in runs))]
               for label, runs in rounds.items()}
    if not results:
        return
    labels = list(results)
    print('Cold compile per kernel, fresh process, empty cache (ms; the first includes loading the compiler'
          + (f'; median of {repeat} rounds' if repeat > 1 else '') + '):')
    print(f"  {'kernel':48s}" + ''.join(f'{label:>11s}' for label in labels))
    rows = max(len(r) for r in results.values())
    for i in range(rows):
        symbol = next(r[i]['symbol'] for r in results.values() if i < len(r))
        cells = ''.join(f"{results[label][i]['ms']:11.0f}" if i < len(results[label]) else f"{'-':>11s}" for label in labels)
        print(f'  {short(symbol):48s}{cells}')
    print(f"  {'median':48s}" + ''.join(f"{statistics.median(x['ms'] for x in results[label]):11.0f}" for label in labels))
    print(f"  {'total':48s}" + ''.join(f"{sum(x['ms'] for x in results[label]):11.0f}" for label in labels))


def warmup(path: str, jobs: int) -> None:
    count = sum(1 for line in open(path) if line.strip())
    for label, nvrtc in COMPILERS:
        cache = tempfile.mkdtemp(prefix='dg_warmup_')
        try:
            out = run_child(['-m', 'deep_gemm', 'warmup', path, '--jobs', str(jobs), '--json'], child_env(cache, nvrtc))
            summary = json.loads(out)
            print(f"Warm-up of {count} kernels, --jobs {jobs}, {label}: {summary['seconds']:.1f} s "
                  f"({summary['compiled']} compiled, {len(summary['failed'])} failed; "
                  f"{summary['seconds'] / max(1, count) * jobs:.2f} s per kernel per job)")
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            print(f'Warm-up of {count} kernels, {label}: failed: {e}')
        finally:
            shutil.rmtree(cache, ignore_errors=True)


def first_calls() -> None:
    rows = {}
    for label, nvrtc in COMPILERS:
        cache = tempfile.mkdtemp(prefix='dg_first_call_')
        try:
            for state in ('cold', 'warm'):
                out = run_child(['-c', FIRST_CALL_CHILD, json.dumps(SHAPES)], child_env(cache, nvrtc))
                rows[f'{label} {state}'] = json.loads(out.strip().splitlines()[-1])
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f'{label}: failed: {e}')
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    if not rows:
        return
    print('fp8_gemm_nt first call in a fresh process (ms; compile or load + launch + sync):')
    print(f"  {'M x N x K':22s}" + ''.join(f'{name:>12s}' for name in rows))
    for i, (m, n, k) in enumerate(SHAPES):
        print(f'  {f"{m}x{n}x{k}":22s}' + ''.join(f'{times[i]:12.1f}' for times in rows.values()))
    print(f"  {'median':22s}" + ''.join(f'{statistics.median(times):12.1f}' for times in rows.values()))


def has_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--record', help='DG_JIT_RECORD file to take the kernels from (default: dg_kernel_sources)')
    parser.add_argument('--sources-tool', default=os.path.join(ROOT, 'build', 'dg_kernel_sources'))
    parser.add_argument('--family', default='fp8', choices=('fp8', 'bf16', 'fp8_1d1d'),
                        help='kernels for parts 1 and 2 from dg_kernel_sources (default fp8: fp8_gemm_nt)')
    parser.add_argument('--warmup-kernels', type=int, default=100, help='kernels in the warm-up (0: skip it)')
    parser.add_argument('--jobs', type=int, default=min(16, os.cpu_count() or 1))
    parser.add_argument('--no-gpu', action='store_true', help='skip the first-call part even with a GPU')
    parser.add_argument('--repeat', type=int, default=1, help='rounds of part 1 (per-kernel median), for noisy machines')
    parser.add_argument('--untrimmed', action='store_true',
                        help='also time NVCC cold compiles with DG_JIT_TRIM_HEADERS=0 (the full cuda_runtime.h)')
    args = parser.parse_args()
    if not args.record and not os.access(args.sources_tool, os.X_OK):
        print(f'{args.sources_tool} not found: build it (cmake --build build --target dg_kernel_sources) '
              'or pass --record FILE', file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix='dg_bench_first_call_')
    try:
        cold_compiles(kernel_sources(len(SHAPES), args.record, args.sources_tool, args.family, workdir), args.untrimmed,
                      max(1, args.repeat))
        if args.warmup_kernels > 0:
            warmup(kernel_sources(args.warmup_kernels, args.record, args.sources_tool, args.family, workdir), args.jobs)
        if not args.no_gpu and has_gpu():
            first_calls()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
