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

import torch

import deep_gemm.legacy as legacy
from _timing import host_time_per_call
from bench_legacy import moe_indices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    sizes, n, k = [1004, 1240, 1120, 901], 4096, 7168
    idx = moe_indices(sizes, 128, "cuda")
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
        plain = host_time_per_call(fn, args.calls, busy_cycles=int(2e9))   # ~1 s of sleep ahead of the calls
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
