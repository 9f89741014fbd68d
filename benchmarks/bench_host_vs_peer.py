"""Host-side costs of fp8_gemm_nt, ours and DeepGEMM v2.6.1 (the peer) in the same run, each with its default
JIT settings: the first call in a fresh process with an empty cache (compile + load + launch + sync), the first
call in a fresh process with that cache filled, and the host time per cached call with the GPU kept busy (so
the calls only enqueue), with A's scales given row-major (the op converts them) and already in the TMA layout
(converted once, outside the timing, by each side's own get_mn_major_tma_aligned_tensor).

    python3 benchmarks/bench_host_vs_peer.py --peer-path /tmp/deepgemm-peer/DeepGEMM-v2.6.1 [--rounds 2]

Both packages are named ``deep_gemm``, so every measurement is a child process (PYTHONPATH picks the side), in
turns: ours, peer, ours, peer. Inputs are built with torch from a fixed seed by bench_vs_peer.py's casts, the same
on both sides. Prints one table of medians over the rounds.
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
SHAPES = [(128, 7168, 2048), (4096, 7168, 2048), (128, 2112, 7168)]
HOST_SHAPE = (128, 7168, 2048)

CHILD = r'''
import json, sys, time, torch, deep_gemm
sys.path.insert(0, sys.argv[1])
from _timing import host_time_per_call
from bench_vs_peer import per_block_fp8, per_row_fp8
from bench_host_vs_peer import HOST_SHAPE as host_shape, SHAPES as shapes
torch.manual_seed(0)

def operands(m, n, k):
    randn = lambda *shape: torch.randn(*shape, device='cuda', dtype=torch.bfloat16)
    return per_row_fp8(randn(m, k)), per_block_fp8(randn(n, k)), torch.empty(m, n, device='cuda', dtype=torch.bfloat16)

inputs = {s: operands(*s) for s in shapes}
torch.cuda.synchronize()
out = {}
for s in shapes:  # the first call of each shape: compile (cold cache) or load (warm cache), launch, sync
    a, b, d = inputs[s]
    t0 = time.perf_counter()
    deep_gemm.fp8_gemm_nt(a, b, d)
    torch.cuda.synchronize()
    out['first %dx%dx%d' % s] = (time.perf_counter() - t0) * 1e3
a, b, d = inputs[host_shape]
aligned = (a[0], deep_gemm.get_mn_major_tma_aligned_tensor(a[1]))
for name, fa in (('host us, sfa row-major', a), ('host us, sfa TMA layout', aligned)):
    fn = lambda: deep_gemm.fp8_gemm_nt(fa, b, d)
    fn(); torch.cuda.synchronize()
    out[name] = host_time_per_call(fn, 200, 15, 200_000_000)
print(json.dumps(out))
'''


def child(side: str, peer_path: str, cache: str) -> dict:
    env = dict(os.environ, PYTHONPATH=peer_path if side == 'peer' else ROOT, DG_JIT_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, '-c', CHILD, os.path.join(ROOT, 'benchmarks')], env=env, cwd='/',
                         capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith('{')]
    if out.returncode != 0 or not lines:
        return {'error': (out.stderr.strip().splitlines() or ['exit %d' % out.returncode])[-1][:160]}
    return json.loads(lines[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--peer-path', default=os.environ.get('DG_PEER_PATH', ''))
    p.add_argument('--rounds', type=int, default=2)
    args = p.parse_args(argv)
    if not os.path.isdir(os.path.join(args.peer_path, 'deep_gemm')):
        p.error('--peer-path must name the built peer (the folder .peers/build_deepgemm.sh prints)')
    rows = {}   # (side, state) -> list of result dicts
    for _ in range(args.rounds):
        for side in ('ours', 'peer'):
            cache = tempfile.mkdtemp(prefix=f'dg_host_{side}_')
            try:
                for state in ('cold cache', 'warm cache'):
                    rows.setdefault((side, state), []).append(child(side, args.peer_path, cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    print(f'fp8_gemm_nt host costs; first calls in ms, host time per cached call in µs (M x N x K = '
          f'{"x".join(map(str, HOST_SHAPE))}); medians over {args.rounds} rounds, each side with its default JIT')
    print(table(rows))
    return 0


def table(rows: dict) -> str:
    """Markdown: a row per (side, cache state), a column per figure, the median over the rounds (or an error)."""
    keys = [f'first {m}x{n}x{k}' for m, n, k in SHAPES] + ['host us, sfa row-major', 'host us, sfa TMA layout']
    lines = ['| process | ' + ' | '.join(keys) + ' |', '|---|' + '---|' * len(keys)]
    for (side, state), results in rows.items():
        errors = [r['error'] for r in results if 'error' in r]
        cells = []
        for key in keys:
            got = [r[key] for r in results if key in r]
            cells.append(f'{statistics.median(got):.1f}' if got else f'error: {errors[0]}' if errors else '-')
        lines.append(f'| {side}, {state} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
