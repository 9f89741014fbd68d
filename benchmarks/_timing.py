"""Timing shared by the GEMM benchmark scripts (imported as a sibling module: the scripts are run as
``python3 benchmarks/X.py``, which puts this folder on ``sys.path``)."""
import statistics

import torch

from deep_gemm.testing import flush_l2


def time_fn(fn, runs, warmup=True):
    """Median microseconds of `fn` over `runs` calls, L2 flushed (256 MB write) before each, each call
    timed with its own CUDA events. With `warmup`, one untimed call first (and the JIT compile)."""
    if warmup:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        flush_l2()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)
