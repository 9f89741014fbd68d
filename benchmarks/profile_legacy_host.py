"""Where the host time of a ``deep_gemm.legacy`` call goes: cProfile over many cached calls of the first
m-grouped target shape (4 groups of ~1120 rows, N=4096, K=7168), TMA and pointer kernels.

    python3 benchmarks/profile_legacy_host.py [--calls 300] [--top 25]

The GPU is kept busy by a sleep kernel while the calls run, so they only enqueue and the profile is of the
host side alone. Prints the host time per call without and with the profiler, then the functions with the
most own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

import deep_gemm.legacy as legacy


def host_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e9))   # ~1 s of GPU work ahead of the calls
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    sizes, n, k = [1004, 1240, 1120, 901], 4096, 7168
    idx = torch.cat([torch.cat([torch.full((s,), g, dtype=torch.int32),
                                torch.full((-s % 128,), -1, dtype=torch.int32)]) for g, s in enumerate(sizes)]).cuda()
    m = idx.shape[0]
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(len(sizes), n, k, dtype=torch.bfloat16, device="cuda")
    d = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    cases = {
        "TMA kernel (autotuned)": lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx),
        "pointer kernel (autotuned)": lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(
            a, b, d, idx, _config={"TMA": False}),
        "torch.mm (one group, for scale)": lambda: torch.mm(a, b[0].t()),
    }
    for name, fn in cases.items():
        fn()   # autotune / compile
        torch.cuda.synchronize()
        plain = host_us(fn, args.calls)
        profiler = cProfile.Profile()
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e9))
        profiler.enable()
        for _ in range(args.calls):
            fn()
        profiler.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.top)
        print(f"=== {name}: {plain:.1f} us per call on the host (no profiler)")
        print(text.getvalue())


if __name__ == "__main__":
    main()
