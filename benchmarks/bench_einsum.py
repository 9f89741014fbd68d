"""Benchmark: deep_gemm.einsum / fp8_einsum on DeepGEMM's test shapes (DeepGEMM v2.6.1's einsum test),
against, in the same run, the cuBLASLt loop (einsum(..., use_cublaslt=True)) and torch.einsum.

    PYTHONPATH=$PWD python3 benchmarks/bench_einsum.py [--runs 20] [--forms bmk,bhr,bhd,fp8] [--json ours.json]
    PYTHONPATH=/path/to/DeepGEMM python3 benchmarks/bench_einsum.py --impl peer --json peer.json
    PYTHONPATH=$PWD python3 benchmarks/bench_einsum.py --against peer.json   # ours, with DeepGEMM / ours per shape

--impl ours (default) times this deep_gemm; --impl peer times whatever `import deep_gemm` finds (DeepGEMM
built on PYTHONPATH), the same calls (its cuBLASLt path too). Timing: benchmarks/_timing.py (calls in turns, L2
flushed before each, CUDA events, median). Printed per shape: microseconds, TFLOPS and the ratios
torch.einsum / ours and cuBLASLt / ours (> 1: ours is faster), and with --against, DeepGEMM / ours.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import time_interleaved  # noqa: E402

BMK = [(s, m, n, k) for s in (129, 4096, 8192) for (m, n, k) in [(128, 384, 128), (256, 256, 256), (384, 128, 384)]]
HEADS = [(h, r, d, b) for (h, r, d) in [(128, 512, 128), (8, 4096, 1024)] for b in (4, 32, 128, 4096, 8192)]
FP8 = [(8, 4096, 1024, b) for b in (4, 32, 128, 4096, 8192)]


def randn(*shape):
    return torch.randn(shape, device='cuda', dtype=torch.bfloat16)


def cases(forms):
    """(name, flops, {label: fn}) per shape; every fn writes its own output."""
    import deep_gemm
    if 'bmk' in forms:
        for s, m, n, k in BMK:
            for dtype in (torch.float32, torch.bfloat16):
                a, b = randn(s, m, k), randn(s, n, k)
                d, d_lt = torch.zeros(m, n, device='cuda', dtype=dtype), torch.zeros(m, n, device='cuda', dtype=dtype)
                c = d if dtype == torch.float32 else None
                c_lt = d_lt if dtype == torch.float32 else None
                fns = {
                    'impl': lambda a=a, b=b, d=d, c=c: deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=c),
                    'torch': lambda a=a, b=b: torch.einsum('bmk,bnk->mn', a, b),
                }
                if s <= 129:  # the cuBLASLt path loops over the batch: one launch per batch
                    fns['cublaslt'] = lambda a=a, b=b, d=d_lt, c=c_lt: deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=c,
                                                                                       use_cublaslt=True)
                yield f'bmk,bnk->mn s={s} m={m} n={n} k={k} {"fp32" if c is not None else "bf16"}', 2 * s * m * n * k, fns
    for form, key in (('bhr,hdr->bhd', 'bhr'), ('bhd,hdr->bhr', 'bhd')):
        if key not in forms:
            continue
        for h, r, d, b in HEADS:
            fy = randn(h, d, r + 128)
            y = fy[:, :, :r]
            x = randn(b, h, r) if key == 'bhr' else randn(b, h, d)
            n = d if key == 'bhr' else r
            z, z_lt = torch.empty(b, h, n, device='cuda', dtype=torch.bfloat16), torch.empty(b, h, n, device='cuda', dtype=torch.bfloat16)
            yield f'{form} h={h} r={r} d={d} b={b}', 2 * b * h * r * d, {
                'impl': lambda x=x, y=y, z=z, form=form: deep_gemm.einsum(form, x, y, z),
                'cublaslt': lambda x=x, y=y, z=z_lt, form=form: deep_gemm.einsum(form, x, y, z, use_cublaslt=True),
                'torch': lambda x=x, y=y, form=form: torch.einsum(form, x, y),
            }
    if 'fp8' in forms:
        from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
        for h, r, d, b in FP8:
            x, y = randn(b, h, r), randn(h, d, r)
            qx, sx = per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=True)
            qx, sx = qx.view(b, h, r), sx.view(b, h, -1)
            qy = torch.empty_like(y, dtype=torch.float8_e4m3fn)
            sy = torch.empty(h, (d + 127) // 128, (r + 127) // 128, device='cuda', dtype=torch.float32)
            for i in range(h):
                qy[i], sy[i] = per_block_cast_to_fp8(y[i], use_ue8m0=True)
            z, z_lt = torch.empty(b, h, d, device='cuda', dtype=torch.bfloat16), torch.empty(b, h, d, device='cuda', dtype=torch.bfloat16)
            yield f'fp8 bhr,hdr->bhd h={h} r={r} d={d} b={b}', 2 * b * h * r * d, {
                'impl': lambda a=(qx, sx), b_=(qy, sy), z=z: deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b_, z),
                'cublaslt': lambda x=x, y=y, z=z_lt: deep_gemm.einsum('bhr,hdr->bhd', x, y, z, use_cublaslt=True),
                'torch': lambda x=x, y=y: torch.einsum('bhr,hdr->bhd', x, y),
            }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--forms', default='bmk,bhr,bhd,fp8')
    parser.add_argument('--impl', choices=('ours', 'peer'), default='ours')
    parser.add_argument('--json', help='write {shape: {label: us}} here')
    parser.add_argument('--against', help='a --impl peer --json file: print DeepGEMM / ours per shape')
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit('needs a CUDA GPU')
    forms = {f.strip() for f in args.forms.split(',') if f.strip()}
    peer = json.load(open(args.against)) if args.against else {}
    import deep_gemm
    ours = hasattr(deep_gemm, 'compile_only')  # deep_gemm's JIT tools; DeepGEMM has none
    if ours != (args.impl == 'ours'):
        sys.exit(f'--impl {args.impl}: `import deep_gemm` found {"ours" if ours else "DeepGEMM"} at {deep_gemm.__file__}; '
                 'set PYTHONPATH')
    who = 'DeepGEMM' if args.impl == 'peer' else 'ours'
    print(f'{who}: deep_gemm from {os.path.dirname(deep_gemm.__file__)}; {torch.cuda.get_device_name()}, median of {args.runs}')
    torch.manual_seed(0)
    results = {}
    for name, flops, fns in cases(forms):
        t = time_interleaved(fns, args.runs, label=f'{name}: ')
        results[name] = t
        ti = t.get('impl')
        if ti is None:
            print(f'{name}: {who} failed')
            continue
        line = f'{name}: {who} {ti:.1f} us {flops / ti / 1e6:.0f} TFLOPS'
        for label in ('cublaslt', 'torch'):
            if t.get(label):
                line += f' | {label} {t[label]:.1f} us ({t[label] / ti:.2f}x)'
        if name in peer and peer[name].get('impl'):
            line += f' | DeepGEMM {peer[name]["impl"]:.1f} us ({peer[name]["impl"] / ti:.2f}x)'
        print(line, flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
