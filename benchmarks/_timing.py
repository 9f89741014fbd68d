"""Timing shared by the GEMM benchmark scripts (imported as a sibling module: the scripts are run as
``python3 benchmarks/X.py``, which puts this folder on ``sys.path``)."""
import statistics
import sys
import time

import torch


# GPU cycles of the sleep kernel queued ahead of each timed call (~1 ms at the H200's clocks): while it runs
# the host enqueues the call, so the events time the GPU work only, even for a callable whose host side
# takes longer than the L2 flush (the Triton legacy kernels: ~100-190 us per call). Host time is measured
# on its own (host_time_per_call).
HOST_COVER_CYCLES = 2_000_000


_flush_buffer = None


def flush_l2():
    """Writes 256 MB (more than the H100/H200's 50-60 MB L2) on the current device. Torch only, so that the
    same scripts time DeepGEMM's package (which has no such helper) in its own process."""
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
    _flush_buffer.zero_()


def timed_call(fn):
    """Device microseconds of one call of `fn` after an L2 flush (256 MB write), timed with its own CUDA
    events; the GPU is kept busy until the call is enqueued (HOST_COVER_CYCLES)."""
    flush_l2()
    torch.cuda._sleep(HOST_COVER_CYCLES)
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


def host_time_per_call(fn, calls: int, repeats: int = 1, busy_cycles: int = 0) -> float:
    """Host microseconds per call of `fn`: the median over `repeats` batches of `calls` back-to-back calls.
    With `busy_cycles`, a sleep kernel of that many GPU cycles is queued first, so the calls only enqueue
    (it must outlast the batch: 2e8 cycles are ~100 ms at the H200's clocks); 0 times CPU work alone."""
    samples = []
    for _ in range(repeats):
        if busy_cycles:
            torch.cuda._sleep(busy_cycles)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
        if busy_cycles:
            torch.cuda.synchronize()
    return statistics.median(samples)
