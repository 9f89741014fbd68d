"""Warming a kernel cache with the kernels a job needs, before the job starts.

1. Run one step of the job with ``DG_JIT_RECORD=/path/kernels.jsonl``: every kernel a process uses is
   appended to that file (its generated source; many processes may share the file).
2. Where the cache lives (another node, or a CPU-only machine with the CUDA toolkit), run
   ``python -m deep_gemm warmup /path/kernels.jsonl`` (or :func:`warmup`). It compiles each distinct kernel
   once, in parallel, into ``DG_JIT_CACHE_DIR``.
3. The job then finds every kernel in the cache: no compile at its first step.

The recorded sources are exactly those the job generated, so the cache keys match whatever config choices
were made (they depend on the GPU's SM count: record on the kind of GPU the job runs on). Only the compiler
(kind and version) and the headers must be the same as the job's, since they are part of each key.
"""
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Union

from . import _C

_RECORD_FORMAT = 1


@dataclass(frozen=True)
class KernelRecord:
    name: str
    symbol: str
    arch: str
    code: str


@dataclass
class WarmupResult:
    compiled: int = 0   # built by this warm-up
    cached: int = 0     # already in the cache
    failed: List[str] = field(default_factory=list)  # "name (arch): error"
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.compiled + self.cached + len(self.failed)


def read_record(path: str) -> List[KernelRecord]:
    """The distinct kernels of a DG_JIT_RECORD file, in first-recorded order. Raises ValueError naming the
    line for anything that is not a record line."""
    seen, out = set(), []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if entry.get('format') != _RECORD_FORMAT:
                    raise ValueError(f"format {entry.get('format')!r}, expected {_RECORD_FORMAT}")
                record = KernelRecord(entry['name'], entry['symbol'], entry['arch'], entry['code'])
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ValueError(f'{path}:{number} is not a DG_JIT_RECORD line; got {line[:80]!r} ({e})')
            if record not in seen:
                seen.add(record)
                out.append(record)
    return out


class _Progress:
    """One status line on stderr: a bar redrawn in place on a terminal, a line per 10% otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled and total > 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last_decile = -1

    def update(self, result: WarmupResult) -> None:
        if not self.enabled:
            return
        done = result.total
        elapsed = time.monotonic() - self.start
        eta = elapsed / done * (self.total - done) if done else 0.0
        text = (f'warmup {done}/{self.total}: {result.compiled} compiled, {result.cached} cached, '
                f'{len(result.failed)} failed, {elapsed:.0f} s, ETA {eta:.0f} s')
        if self.tty:
            width = 20
            filled = width * done // self.total
            print(f"\r[{'#' * filled}{'.' * (width - filled)}] {text}", end='', file=sys.stderr, flush=True)
            if done == self.total:
                print(file=sys.stderr)
        elif done * 10 // self.total > self.last_decile:
            self.last_decile = done * 10 // self.total
            print(text, file=sys.stderr, flush=True)


def warmup(kernels: Union[str, Iterable[KernelRecord]], jobs: Optional[int] = None, arch: Optional[str] = None,
           progress: bool = True) -> WarmupResult:
    """Compiles the kernels of a DG_JIT_RECORD file (or a list of :class:`KernelRecord`) into the cache
    (``DG_JIT_CACHE_DIR``), ``jobs`` at a time (default: the number of CPUs). ``arch`` replaces the
    recorded target arch (e.g. ``'sm_90a'``). Needs no GPU. Failures are collected, not raised."""
    records = read_record(kernels) if isinstance(kernels, (str, os.PathLike)) else list(dict.fromkeys(kernels))
    jobs = max(1, jobs or os.cpu_count() or 1)
    result = WarmupResult()
    bar = _Progress(len(records), progress)
    start = time.monotonic()

    def build(record: KernelRecord):
        return _C.build_source(record.name, record.symbol, record.code, arch or record.arch)

    with ThreadPoolExecutor(max_workers=jobs) as pool:  # build_source releases the GIL
        futures = {pool.submit(build, record): record for record in records}
        for future in as_completed(futures):
            record = futures[future]
            try:
                if future.result()['compiled']:
                    result.compiled += 1
                else:
                    result.cached += 1
            except Exception as e:  # a compile error or a config problem: report it with the kernel
                first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                result.failed.append(f'{record.name} ({arch or record.arch}): {first_line}')
            bar.update(result)
    result.seconds = time.monotonic() - start
    return result
