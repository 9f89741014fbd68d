"""Runs one fp8_gemm_nt shape a few times, for a profiler to look at (the first call compiles).

    DG_FP8_GEMM_CONFIG=128,128,0,1,0 ncu --clock-control none -k regex:sm90_fp8 --launch-skip 2 --launch-count 1 \
        python3 benchmarks/profile_fp8.py 4096 7168 16384

Prints the mean time of the timed calls (CUDA events, no L2 flush) so a run without the profiler is a
quick A/B of configs too.
"""

import sys

import torch

import deep_gemm


def main():
    m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 7168, 16384)
    calls = int(sys.argv[4]) if len(sys.argv) >= 5 else 5
    a, sfa = deep_gemm.per_token_cast_to_fp8(torch.randn(m, k, device='cuda', dtype=torch.bfloat16))
    b, sfb = deep_gemm.per_block_cast_to_fp8(torch.randn(n, k, device='cuda', dtype=torch.bfloat16))
    sfa = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
    d = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) * 1e3 / calls
    print(f'{m}x{n}x{k}: {us:.1f} us/call, {2 * m * n * k / us / 1e6:.0f} TFLOPS (mean of {calls}, back to back)')


if __name__ == '__main__':
    main()
