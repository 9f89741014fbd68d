"""Benchmark of the fused MQA logits (deep_gemm.fp8_fp4_mqa_logits) on DeepGEMM v2.6.1's SM90 test shapes.

    python3 benchmarks/bench_mqa_logits.py --json ours.json                  # ours + the unfused torch baseline
    PYTHONPATH=/path/to/DeepGEMM python3 benchmarks/bench_mqa_logits.py --impl peer --json peer.json
    python3 benchmarks/bench_mqa_logits.py --compare ours.json peer.json     # ratios per shape
    python3 benchmarks/bench_mqa_logits.py --all                             # every shape of the test grid

Both libraries are imported as ``deep_gemm``, so DeepGEMM's kernel is timed in its own run (``--impl peer``
imports whichever ``deep_gemm`` comes first on PYTHONPATH and checks that it is not this repository's);
``--compare`` joins two JSON files by shape. Every run also times an unfused torch reference in the same
process (BF16 tensor-core matmul per kv chunk -> relu -> weighted head sum -> -inf mask; it materialises
the [S, H, chunk] scores the fused kernel never writes).

Shapes (DeepGEMM's tests/test_attention.py, SM90): S in {2048, 8192}, S_kv in {8192, 65536}, H in {32, 64},
D = 128 (``--all``: D in {32, 64, 128} too), kv ranges causal ("CP=0": ks = 0, ke = i + S_kv - S) or
context-parallel ("CP=1", two jumping windows of one rank), FP32 logits, dense and clean (``--all``: BF16
and compressed logits too). FLOPs = 2 * H * D * (number of (i, j) inside [ks, ke)), DeepGEMM's count.
Times are medians of CUDA-event timings with the L2 flushed before every call, ours and the baseline
interleaved (benchmarks/_timing.py).
"""
import argparse
import itertools
import json
import os
import sys

import torch

from _timing import time_interleaved

FP8 = torch.float8_e4m3fn


def ranges(seq_len, seq_len_kv, cp):
    if not cp:
        ks = torch.zeros(seq_len, dtype=torch.int32, device='cuda')
        ke = torch.arange(seq_len, dtype=torch.int32, device='cuda') + (seq_len_kv - seq_len)
        return ks, ke
    chunk, cp_size = seq_len // 2, seq_len_kv // seq_len
    cp_id = cp_size // 3
    i = torch.arange(chunk, dtype=torch.int32, device='cuda')
    ks = torch.zeros(seq_len, dtype=torch.int32, device='cuda')
    ke = torch.cat([cp_id * chunk + i, (cp_size * 2 - 1 - cp_id) * chunk + i]).to(torch.int32)
    return ks, ke


def torch_reference(q, kv, sf, w, ks, ke):
    """Unfused: scores in BF16 on tensor cores, chunked over kv so the [S, H, chunk] scores stay < 256 MB."""
    seq_len, heads, dim = q.shape
    seq_len_kv = kv.shape[0]
    qb = q.to(torch.bfloat16).view(seq_len * heads, dim)
    kvb = (kv.float() * sf[:, None]).to(torch.bfloat16)
    out = torch.empty(seq_len, seq_len_kv, device='cuda')
    chunk = max(256, (128 << 20) // (seq_len * heads))
    cols = torch.arange(seq_len_kv, device='cuda')
    for c0 in range(0, seq_len_kv, chunk):
        c1 = min(seq_len_kv, c0 + chunk)
        score = (qb @ kvb[c0:c1].T).view(seq_len, heads, c1 - c0).relu_()
        part = torch.einsum('shn,sh->sn', score.float(), w)
        inside = (cols[None, c0:c1] >= ks[:, None]) & (cols[None, c0:c1] < ke[:, None])
        out[:, c0:c1] = part.masked_fill_(~inside, float('-inf'))
    return out


def cases(full):
    dims = (32, 64, 128) if full else (128,)
    flavours = [(torch.float32, False, True)]
    if full:
        flavours += [(torch.bfloat16, False, True), (torch.float32, True, False), (torch.bfloat16, True, False)]
    for (dtype, compressed, clean), s, skv, h, d, cp in itertools.product(flavours, (2048, 8192), (8192, 65536), (32, 64), dims,
                                                                        (False, True)):
        if cp and (skv % s != 0):
            continue
        yield dtype, compressed, clean, s, skv, h, d, cp


def key(c):
    dtype, compressed, clean, s, skv, h, d, cp = c
    return f'{"bf16" if dtype == torch.bfloat16 else "f32"} CMP={int(compressed)} S={s} SK={skv} H={h} D={d} CP={int(cp)}'


def run(args):
    import deep_gemm
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    is_ours = os.path.abspath(deep_gemm.__file__).startswith(here + os.sep)
    if args.impl == 'peer' and is_ours:
        sys.exit('--impl peer: the deep_gemm on the path is this repository; put DeepGEMM first on PYTHONPATH')
    if args.impl == 'ours' and not is_ours:
        sys.exit(f'--impl ours: imported deep_gemm from {deep_gemm.__file__}')
    print(f'deep_gemm from {os.path.dirname(os.path.abspath(deep_gemm.__file__))} on {torch.cuda.get_device_name()}')
    results = {}
    print(f'{"shape":<48} | {args.impl + " us":>9} {"TFLOPS":>7} | {"torch us":>9} {"x torch":>7}')
    for c in cases(args.all):
        dtype, compressed, clean, s, skv, h, d, cp = c
        torch.manual_seed(0)
        q = torch.randn(s, h, d, device='cuda').to(FP8)
        kv_f = torch.randn(skv, d, device='cuda')
        sf = kv_f.abs().amax(1).clamp_min(1e-4) / 448
        kv = (kv_f / sf[:, None]).to(FP8)
        w = torch.randn(s, h, device='cuda')
        ks, ke = ranges(s, skv, cp)
        cost = int((ke.clamp(0, skv) - ks.clamp(0, skv)).clamp_min(0).sum())
        max_k = int((ke - ks).max()) if compressed else 0
        fns = {args.impl: lambda: deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, sf), w, ks, ke, clean_logits=clean,
                                                               max_seqlen_k=max_k, logits_dtype=dtype)}
        if not args.no_torch and not compressed:
            fns['torch'] = lambda: torch_reference(q, kv, sf, w, ks, ke)
        us = time_interleaved(fns, args.runs, label=key(c) + ': ')
        t_ours, t_torch = us.get(args.impl), us.get('torch')
        tflops = 2 * cost * h * d / (t_ours * 1e-6) / 1e12 if t_ours else None
        results[key(c)] = {'us': t_ours, 'tflops': tflops, 'torch_us': t_torch}
        fmt = lambda v, spec: format(v, spec) if v is not None else 'n/a'  # noqa: E731
        ratio = t_torch / t_ours if (t_ours and t_torch) else None
        print(f'{key(c):<48} | {fmt(t_ours, "9.1f")} {fmt(tflops, "7.1f")} | {fmt(t_torch, "9.1f")} {fmt(ratio, "7.2f")}')
        del q, kv, kv_f, w
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'impl': args.impl, 'device': torch.cuda.get_device_name(), 'results': results}, f, indent=1)


def compare(a_path, b_path):
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    print(f'{a["impl"]} ({a["device"]}) vs {b["impl"]} ({b["device"]})')
    print(f'{"shape":<48} | {a["impl"] + " us":>9} {b["impl"] + " us":>9} {"ratio":>6}')
    for k, ra in a['results'].items():
        rb = b['results'].get(k)
        if rb and ra['us'] and rb['us']:
            print(f'{k:<48} | {ra["us"]:9.1f} {rb["us"]:9.1f} {rb["us"] / ra["us"]:6.2f}')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--impl', choices=('ours', 'peer'), default='ours')
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--all', action='store_true', help='every SM90 shape / flavour of the DeepGEMM test grid')
    parser.add_argument('--no-torch', action='store_true', help='skip the unfused torch baseline')
    parser.add_argument('--json', help='write the results here')
    parser.add_argument('--compare', nargs=2, metavar=('A_JSON', 'B_JSON'), help='print B/A time ratios (>1: A faster)')
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
    else:
        run(args)


if __name__ == '__main__':
    main()
