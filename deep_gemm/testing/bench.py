"""Timing helpers (CUDA events and the torch profiler). Performance code only: never call these from
correctness tests."""

import os
import statistics
import sys
from typing import Callable, Optional, Sequence, Tuple, Union

import torch

_L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than the H100/H200 L2 (50/60 MB)
_flush_buffer: Optional[torch.Tensor] = None


def _l2_flush_buffer() -> torch.Tensor:
    global _flush_buffer
    if _flush_buffer is None or _flush_buffer.device.index != torch.cuda.current_device():
        _flush_buffer = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device='cuda')
    return _flush_buffer


def flush_l2() -> None:
    """Evicts the L2 cache by writing a 256 MB buffer (enqueued on the current stream)."""
    _l2_flush_buffer().zero_()


_flush_l2 = flush_l2  # bench_kineto's argument of the same name hides it there


def bench(fn: Callable[[], object], num_warmups: int = 5, num_tests: int = 10, high_precision: bool = False,
          flush_l2_cache: bool = True, return_all: bool = False) -> Union[float, Tuple[float, list]]:
    """Median GPU time of ``fn()`` in seconds, each run timed with its own CUDA events and (by default)
    preceded by an L2 flush, so every run starts cold like in a real model.

    ``num_tests`` >= 15 is recommended. With ``return_all``, returns ``(median, all_times)``.
    ``high_precision`` (DeepGEMM's argument) is accepted; every run is timed separately here anyway.
    """
    if num_tests < 1:
        raise ValueError(f'bench: num_tests must be positive; got {num_tests}')
    for _ in range(num_warmups):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(num_tests)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(num_tests)]
    for i in range(num_tests):
        if flush_l2_cache:
            flush_l2()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    median = statistics.median(times)
    return (median, times) if return_all else median


class suppress_stdout_stderr:
    """Context manager that silences stdout and stderr at the file-descriptor level (the profiler's own
    prints and those of C++ code bypass ``sys.stdout``); both are restored on exit. DeepGEMM's name."""

    def __enter__(self):
        self._saved = [os.dup(1), os.dup(2)]
        self._null = os.open(os.devnull, os.O_WRONLY)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._null, 1)
        os.dup2(self._null, 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved + [self._null]:
            os.close(fd)
        return False


def bench_kineto(fn: Callable[[], object], kernel_names: Union[str, Sequence[str]], num_tests: int = 30,
                 suppress_kineto_output: bool = False, trace_path: Optional[str] = None, flush_l2: bool = True,
                 with_multiple_kernels: bool = False, barrier: Optional[Callable[[], object]] = None
                 ) -> Union[float, Tuple[float, ...]]:
    """Average device time in seconds per ``fn()`` call of the kernels whose name contains each of
    ``kernel_names``, measured with the torch profiler (CUPTI): kernel time only, no launch gaps.

    Unless ``with_multiple_kernels``, each name must match exactly one kernel launch per call.
    Returns a float for a single name, a tuple for a sequence. ``trace_path`` saves a Chrome trace.
    ``flush_l2`` flushes the L2 cache before each call; ``barrier`` (e.g. a distributed barrier) is called
    before each measured round.
    """
    flush_l2_cache = flush_l2
    single = isinstance(kernel_names, str)
    names = (kernel_names,) if single else tuple(kernel_names)
    if flush_l2_cache:
        _l2_flush_buffer()
    fn()  # warm up (JIT compile, allocator)
    torch.cuda.synchronize()

    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)
    context = suppress_stdout_stderr() if suppress_kineto_output else empty_suppress()
    with context:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], schedule=schedule) as prof:
            for _ in range(2):
                if barrier is not None:
                    barrier()
                for _ in range(num_tests):
                    if flush_l2_cache:
                        _flush_l2()
                    fn()
                torch.cuda.synchronize()
                prof.step()
    if trace_path is not None:
        prof.export_chrome_trace(trace_path)

    results = []
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    for name in names:
        matched = [e for e in events if name in e.name]
        if not matched:
            raise RuntimeError(f'bench_kineto: no kernel whose name contains {name!r} ran; kernels seen: '
                               f'{sorted({e.name for e in events})[:20]}')
        if not with_multiple_kernels and len(matched) != num_tests:
            raise RuntimeError(f'bench_kineto: {len(matched)} launches of kernels matching {name!r} in {num_tests} calls; '
                               'pass with_multiple_kernels=True if that is expected')
        total_us = sum(e.device_time_total if hasattr(e, 'device_time_total') else e.cuda_time_total for e in matched)
        results.append(total_us / 1e6 / num_tests)
    return results[0] if single else tuple(results)


class empty_suppress:
    """A context manager that does nothing: the stand-in for :class:`suppress_stdout_stderr` (DeepGEMM's name)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
