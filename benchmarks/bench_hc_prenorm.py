"""Benchmark of deep_gemm.tf32_hc_prenorm_gemm on DeepGEMM's test shapes (tests/test_hyperconnection.py of
v2.6.1: m in {13, 137, 4096, 8192}, n = 24, k in {28672, 7680, 7168}, num_splits None and 16).

    python3 benchmarks/bench_hc_prenorm.py                                  # ours and torch
    python3 benchmarks/bench_hc_prenorm.py --peer-path /path/to/DeepGEMM    # + DeepGEMM's kernel
    PYTHONPATH=/path/to/DeepGEMM python3 benchmarks/bench_hc_prenorm.py --impl peer --json peer.json

Both packages are called deep_gemm, so DeepGEMM's kernel is timed in a child process whose PYTHONPATH
puts DeepGEMM first (`--impl peer`); `--peer-path` starts that child and merges its figures (the same GPU,
another process: compare on a quiet machine). Each figure is the median over `--runs` calls (CUDA events,
L2 flushed before every call, the variants of a shape called in turns). Bytes are DeepGEMM's count: a,
b, d and sqr_sum once each (2mk + 4nk + 4Smn + 4Sm). Baseline in the same run: torch, the TF32 matmul
and the FP32 square-sum of DeepGEMM's reference (`a.float() @ b.T`, `a.float().square().sum(-1)`).
Columns: microseconds, GB/s, torch time / ours, and DeepGEMM time / ours (>= 1.0: ours is as fast).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

import deep_gemm
from _timing import time_interleaved

SHAPES = [(m, 24, k) for m in (13, 137, 4096, 8192) for k in (28672, 7680, 7168)]
SPLITS = (None, 16)


def moved_bytes(m, n, k, splits):
    s = splits or 1
    return 2 * m * k + 4 * n * k + 4 * s * m * n + 4 * s * m


def key(m, n, k, splits):
    return f'{m},{n},{k},{splits or 0}'


def measure(impl, runs):
    """{shape key: {name: microseconds}} for `impl` ('ours' or 'peer': whichever deep_gemm is imported) and torch."""
    torch.backends.cuda.matmul.allow_tf32 = True
    results = {}
    for m, n, k in SHAPES:
        a = torch.randn(m, k, dtype=torch.bfloat16, device='cuda')
        b = torch.randn(n, k, device='cuda')
        for splits in SPLITS:
            d = torch.empty((m, n) if splits is None else (splits, m, n), device='cuda')
            s = torch.empty((m,) if splits is None else (splits, m), device='cuda')
            fns = {
                impl: lambda: deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=splits),
                'torch': lambda: (a.float() @ b.T, a.float().square().sum(-1)),
            }
            results[key(m, n, k, splits)] = time_interleaved(fns, runs, label=f'm={m} k={k} splits={splits}: ')
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--impl', choices=['ours', 'peer'], default='ours')
    parser.add_argument('--runs', type=int, default=30)
    parser.add_argument('--json', help='write the figures to this file')
    parser.add_argument('--peer-json', help='DeepGEMM figures written by a --impl peer run')
    parser.add_argument('--peer-path', help="DeepGEMM's directory: time its kernel in a child process first")
    args = parser.parse_args()
    print(f'deep_gemm from {os.path.dirname(deep_gemm.__file__)} ({args.impl}), {torch.cuda.get_device_name()}')

    peer = {}
    if args.peer_path:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'peer.json')
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([args.peer_path, os.environ.get('PYTHONPATH', '')]))
            subprocess.run([sys.executable, os.path.abspath(__file__), '--impl', 'peer', '--runs', str(args.runs), '--json', out],
                           env=env, check=True)
            peer = json.load(open(out))
    elif args.peer_json:
        peer = json.load(open(args.peer_json))

    results = measure(args.impl, args.runs)
    if args.json:
        json.dump(results, open(args.json, 'w'), indent=1)

    name = args.impl
    print(f'{"m":>5} {"n":>3} {"k":>6} {"S":>3} | {name + " us":>8} {"GB/s":>6} | {"torch us":>8} {"GB/s":>6} {"x torch":>7} | '
          f'{"peer us":>8} {"GB/s":>6} {"peer/ours":>9}')
    for m, n, k in SHAPES:
        for splits in SPLITS:
            r = results[key(m, n, k, splits)]
            p = peer.get(key(m, n, k, splits), {}).get('peer')
            nbytes = moved_bytes(m, n, k, splits)

            def gbs(us):
                return f'{nbytes / (us * 1e-6) / 1e9:6.0f}' if us else '   n/a'

            def f(us):
                return f'{us:8.1f}' if us else '     n/a'

            ours, torch_us = r.get(name), r.get('torch')
            x_torch = f'{torch_us / ours:7.2f}' if ours and torch_us else '    n/a'
            x_peer = f'{p / ours:9.2f}' if ours and p and name == 'ours' else '      n/a'
            print(f'{m:>5} {n:>3} {k:>6} {splits or 0:>3} | {f(ours)} {gbs(ours)} | {f(torch_us)} {gbs(torch_us)} {x_torch} | '
                  f'{f(p)} {gbs(p)} {x_peer}')


if __name__ == '__main__':
    main()
