"""Benchmark of the paged MQA logits (deep_gemm.fp8_fp4_paged_mqa_logits) on DeepGEMM v2.6.1's SM90 test shapes.

    python3 benchmarks/bench_paged_mqa_logits.py                       # ours + the unfused torch reference
    python3 benchmarks/bench_paged_mqa_logits.py --json ours.json
    PYTHONPATH=/path/to/DeepGEMM python3 benchmarks/bench_paged_mqa_logits.py --impl peer --json peer.json
    python3 benchmarks/bench_paged_mqa_logits.py --block-kv 32 --next-n 1,2,4 --vllm-slots   # vLLM 0.34's SM90 calls
    python3 benchmarks/bench_paged_mqa_logits.py --against peer.json   # ours, with time(peer) / time(ours)

Shapes (DeepGEMM's tests/test_attention.py, arch 9): batch 256 / 4096, next_n 1 / 2, H 32 / 64, D 128, average
context 8192 / 65536 (at most 32M kv tokens in the pool), 2-D context_lens (the last row of a batch at its full
length, the others drawn in [0, L]), no cleaning, BF16 and FP32 logits. Both packages are called `deep_gemm`, so
one process times one of them: `--impl peer` imports whatever `deep_gemm` PYTHONPATH gives (DeepGEMM built from
source) and calls its kernel on the same inputs (same seed). Figures per case: median device time (CUDA events,
L2 flushed before every call), TFLOPS = 2 * sum(len) * next_n * H * D / t, GB/s = (q + weights + sum(len) * (D + 4)
+ logits written) / t (DeepGEMM's count), the torch reference's time (chunked over batches so that its [rows, H,
ctx] scores fit in memory) and its ratio to the kernel (issue target: >= 5x), and with --against, the other
run's time over ours (target >= 1.0 against DeepGEMM).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'python'))
import paged_mqa_reference as ref  # noqa: E402

import deep_gemm  # noqa: E402  (ours, or DeepGEMM with --impl peer)
from _timing import time_fn  # noqa: E402  (a sibling module: the script's folder is on sys.path)


def cases(next_ns=(1, 2)):
    for batch in (256, 4096):
        for avg in (8192, 65536):
            if batch * avg > 32 * 1024 * 1024:
                continue
            for next_n in next_ns:
                for heads in (32, 64):
                    for dtype in (torch.bfloat16, torch.float32):
                        yield batch, next_n, heads, avg, dtype


def make_inputs(batch, next_n, heads, avg, seed=0, block_kv=64):
    g = torch.Generator(device='cuda').manual_seed(seed)
    lens = torch.randint(int(0.7 * avg), int(1.3 * avg), (batch,), device='cuda', dtype=torch.int32, generator=g)
    pages = (lens + block_kv - 1) // block_kv
    width = int(pages.max())
    total = int(pages.sum())
    kv_cache = torch.empty(total, block_kv, 1, 132, device='cuda', dtype=torch.uint8)
    step = 16384 * 64 // block_kv
    for i in range(0, total, step):  # in chunks: the float32 temporaries of 32M tokens would not fit
        n = min(step, total - i)
        kv_cache[i:i + n] = ref.pack_kv_cache(torch.randn(n, block_kv, 1, 128, device='cuda', dtype=torch.bfloat16, generator=g))[0]
    pool = torch.randperm(total, device='cuda', dtype=torch.int32, generator=g)
    table = torch.zeros(batch, width, device='cuda', dtype=torch.int32)
    offsets = torch.cumsum(pages, 0) - pages
    cols = torch.arange(width, device='cuda')
    valid = cols[None, :] < pages[:, None]
    table[valid] = pool[(offsets[:, None] + cols[None, :])[valid].long()]
    q = torch.randn(batch, next_n, heads, 128, device='cuda', dtype=torch.bfloat16, generator=g).to(torch.float8_e4m3fn)
    weights = torch.randn(batch * next_n, heads, device='cuda', generator=g)
    rows = ((lens[:, None] + 1) * torch.rand(batch, next_n, device='cuda', generator=g)).int()
    rows[:, -1] = lens
    return q, kv_cache, weights, rows.contiguous(), table, width * block_kv, int(lens.sum())


def torch_reference(q, kv_cache, weights, lens, table, max_len, chunk=32):
    """Unfused: gather pages, scores [rows, H, ctx] in float32, relu, weighted head sum, mask."""
    batch, next_n, heads, dim = q.shape
    codes, scales = ref.unpack_kv_cache(kv_cache)
    out = torch.full((batch * next_n, max_len), float('-inf'), device='cuda')
    pos = torch.arange(max_len, device='cuda')
    for b0 in range(0, batch, chunk):
        b1 = min(batch, b0 + chunk)
        kv = codes[table[b0:b1].long()].flatten(1, 2)[:, :max_len]           # [c, ctx, D]
        sf = scales[table[b0:b1].long()].flatten(1, 2)[:, :max_len]          # [c, ctx]
        s = torch.einsum('bthd,bnd->bthn', q[b0:b1].float(), kv).relu_()     # [c, next_n, H, ctx]
        w = weights[b0 * next_n:b1 * next_n].view(b1 - b0, next_n, heads, 1)
        logit = (s * w).sum(2) * sf[:, None, :]                              # [c, next_n, ctx]
        mask = pos[None, None, :] < lens[b0:b1, :, None]
        out[b0 * next_n:b1 * next_n] = logit.masked_fill(~mask, float('-inf')).flatten(0, 1)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--impl', choices=('ours', 'peer'), default='ours')
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--no-torch', action='store_true', help='skip the (slow) unfused torch reference')
    parser.add_argument('--json', help='save the results here')
    parser.add_argument('--against', help='a --json file of the other implementation: print its time / ours')
    parser.add_argument('--block-kv', type=int, choices=(64, 32), default=64, help='the kv cache block size')
    parser.add_argument('--next-n', default='1,2', help='comma-separated next_n values (DeepGEMM v2.6.1 tests 1 and 2)')
    parser.add_argument('--vllm-slots', action='store_true',
                        help='schedules as vLLM 0.34 builds them on SM90: num_sms // 2 slots for next_n 4')
    args = parser.parse_args()
    other = {}
    if args.against:
        with open(args.against) as f:
            other = {tuple(r['case']): r['us'] for r in json.load(f)}
    print(f'{args.impl}: deep_gemm from {os.path.dirname(deep_gemm.__file__)}; {torch.cuda.get_device_name()}, '
          f'{deep_gemm.get_num_sms()} SMs')
    print(f'{"B":>5} {"n":>2} {"H":>3} {"avg":>6} {"out":>5} | {"us":>8} {"TFLOPS":>7} {"GB/s":>6} | {"torch us":>9} {"x torch":>7} | '
          f'{"other us":>9} {"other/ours":>10}')
    results = []
    for batch, next_n, heads, avg, dtype in cases(tuple(int(n) for n in args.next_n.split(','))):
        q, kv_cache, weights, lens, table, max_len, sum_lens = make_inputs(batch, next_n, heads, avg, block_kv=args.block_kv)
        slots = deep_gemm.get_num_sms() // (2 if args.vllm_slots and next_n == 4 else 1)
        meta = deep_gemm.get_paged_mqa_logits_metadata(lens, args.block_kv, slots)

        def kernel():
            return deep_gemm.fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, lens, table, meta, max_len, False, dtype)

        us = time_fn(kernel, args.runs)
        flops = 2 * sum_lens * next_n * heads * 128
        nbytes = q.numel() + weights.numel() * 4 + sum_lens * 132 + sum_lens * next_n * dtype.itemsize
        torch_us = None
        if not args.no_torch:
            torch_us = time_fn(lambda: torch_reference(q, kv_cache, weights, lens, table, max_len), max(2, args.runs // 10))
        case = [batch, next_n, heads, avg, str(dtype).split('.')[-1]]
        other_us = other.get(tuple(case))
        results.append({'case': case, 'us': us, 'torch_us': torch_us})
        fmt = lambda v, spec: format(v, spec) if v is not None else 'n/a'.rjust(len(format(0, spec)))  # noqa: E731
        print(f'{batch:>5} {next_n:>2} {heads:>3} {avg:>6} {case[4][:5]:>5} | {us:8.1f} {flops / us / 1e6:7.0f} {nbytes / us / 1e3:6.0f} | '
              f'{fmt(torch_us, "9.1f")} {fmt(torch_us / us if torch_us else None, "7.1f")} | {fmt(other_us, "9.1f")} '
              f'{fmt(other_us / us if other_us else None, "10.2f")}', flush=True)
        del q, kv_cache, weights, lens, table, meta
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
