"""Timing shared by the GEMM benchmark scripts (imported as a sibling module: the scripts are run as
``python3 benchmarks/X.py``, which puts this folder on ``sys.path``)."""
import statistics
import sys

import torch

from deep_gemm.testing import flush_l2


def timed_call(fn):
    """Microseconds of one call of `fn` after an L2 flush (256 MB write), timed with its own CUDA events."""
    flush_l2()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def time_fn(fn, runs, warmup=True):
    """Median microseconds of `fn` over `runs` calls (each a timed_call). With `warmup`, one untimed call
    first (and the JIT compile)."""
    if warmup:
        fn()
        torch.cuda.synchronize()
    return statistics.median([timed_call(fn) for _ in range(runs)])


def time_interleaved(fns, runs, label=''):
    """Median microseconds of each callable in `fns` (name -> fn), timed in turns: every round calls each
    function once, L2 flushed before each call, so clock and power drift (an H200 running FP8 GEMMs
    back to back slows down within a second) hits ours and the baselines alike. Each function gets one
    untimed call first; one that raises there is reported on stderr and gets None."""
    active, results = {}, {}
    for name, fn in fns.items():
        try:
            fn()
            torch.cuda.synchronize()
            active[name] = fn
        except Exception as e:  # e.g. a baseline this torch build cannot run
            print(f'{label}{name} n/a: {str(e).splitlines()[0] if str(e) else type(e).__name__}', file=sys.stderr)
            results[name] = None
    times = {name: [] for name in active}
    for _ in range(runs):
        for name, fn in active.items():
            times[name].append(timed_call(fn))
    results.update({name: statistics.median(ts) for name, ts in times.items()})
    return results
