"""Runs one bf16 nt GEMM shape, ours or torch.mm (cuBLAS), for a profiler or a power/clock sampler to look at.

    # one call inside a cudaProfilerStart/Stop range (works for any kernel name, cuBLAS included):
    ncu --clock-control none --profile-from-start off --launch-count 1 \
        python3 benchmarks/profile_bf16.py 4096 4096 7168 --lib cublas --range
    # back to back for a few seconds (sample nvidia-smi meanwhile):
    python3 benchmarks/profile_bf16.py 4096 4096 7168 --lib ours --seconds 3

Prints the mean time per call of the timed loop (CUDA events, no L2 flush).
"""
import argparse
import time

import torch

import deep_gemm


def main():
    p = argparse.ArgumentParser()
    p.add_argument('m', type=int)
    p.add_argument('n', type=int)
    p.add_argument('k', type=int)
    p.add_argument('--lib', choices=('ours', 'cublas'), default='ours')
    p.add_argument('--calls', type=int, default=20)
    p.add_argument('--seconds', type=float, default=0.0, help='keep calling for this long (after the timed calls)')
    p.add_argument('--range', action='store_true', help='wrap one extra call in cudaProfilerStart/Stop')
    p.add_argument('--d-row-pad', type=int, default=0,
                   help='D row stride N + this (not a multiple of 8: ours uses the direct-store epilogue)')
    args = p.parse_args()
    m, n, k = args.m, args.n, args.k
    a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(n, k, device='cuda', dtype=torch.bfloat16)
    d = torch.empty(m, n + args.d_row_pad, device='cuda', dtype=torch.bfloat16)[:, :n]
    if args.lib == 'ours':
        def call():
            deep_gemm.bf16_gemm_nt(a, b, d)
    else:
        bt = b.t()

        def call():
            torch.mm(a, bt, out=d)

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.calls):
        call()
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) * 1e3 / args.calls
    print(f'{args.lib} {m}x{n}x{k}: {us:.1f} us/call, {2 * m * n * k / us / 1e6:.0f} TFLOPS '
          f'(mean of {args.calls}, back to back)', flush=True)
    if args.seconds > 0:
        t_end = time.time() + args.seconds
        calls = 0
        start.record()
        while time.time() < t_end:
            for _ in range(50):
                call()
            calls += 50
            torch.cuda.synchronize()
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) * 1e3 / calls
        print(f'{args.lib} {m}x{n}x{k}: sustained {calls} calls, {us:.1f} us/call, '
              f'{2 * m * n * k / us / 1e6:.0f} TFLOPS', flush=True)
    if args.range:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        call()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == '__main__':
    main()
