"""Warming a kernel cache with the kernels a job needs, before the job starts. Two ways to say which:

- A recorded list. Run one step of the job with ``DG_JIT_RECORD=/path/kernels.jsonl``: every kernel a
  process uses is appended to that file (its generated source; many processes may share the file). Then
  ``python -m deep_gemm warmup /path/kernels.jsonl``. The recorded sources are exactly those the job
  generated, so the keys match whatever configs were chosen (record on the kind of GPU the job runs on).
- A call list: ops and shapes (deep_gemm/_warmup_calls.py describes the fields), from a JSON file
  (``--calls calls.json``), arguments (``--call 'fp8_gemm_nt:m=4096,n=7168,k=2048'``) or
  ``warmup(calls=[...])``. Each call is planned as the op would plan it, for a target device: this
  machine's GPU, or without one ``arch`` / ``num_sms`` / ``smem_optin`` (default sm_90a, 132 SMs: H100/H200
  SXM). No GPU is needed.

Either way the distinct kernels are compiled once, in parallel, into ``DG_JIT_CACHE_DIR``, and the job then
finds every kernel in the cache: no compile at its first step. A cache key covers the kernel source, the
arch, the compiler (kind and version: NVCC or NVRTC, DG_JIT_USE_NVRTC) and the headers, so those must be
the job's. A planned call's source also depends on what the config choice sees, which must match the job:
the SM count (the GPU's, or its ``set_num_sms`` cap), the shared memory per block, the config overrides
(DG_FP8_GEMM_CONFIG, DG_BF16_GEMM_CONFIG) and the knobs ``set_mk_alignment_for_contiguous_layout``,
``set_block_size_multiple_of`` and ``set_ignore_compile_dims`` (this process's values, or per call).
"""
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Union

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
    failed: List[str] = field(default_factory=list)  # "name (arch): error" or "call N op(...): error"
    details: List[str] = field(default_factory=list)  # per failure, the whole message (a compiler's log)
    seconds: float = 0.0
    kernels: int = 0    # distinct kernels to build (recorded, and planned from the calls)
    calls: int = 0      # call descriptions given (each planned into one or more kernels)
    target: str = ''    # the device the calls were planned for

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
    """The warm-up's status on stderr, through tqdm: a bar redrawn in place on a terminal; otherwise (a log
    file, CI) one line per 10%, as a redrawn bar would fill a log with carriage returns."""

    def __init__(self, total: int, enabled: bool):
        from tqdm import tqdm  # here, not at module import: `import deep_gemm` stays light
        self.tqdm, self.total, self.enabled = tqdm, total, enabled and total > 0
        self.start = time.monotonic()
        self.last_decile = -1
        self.bar = (tqdm(total=total, desc='warmup', unit='kernel', file=sys.stderr, dynamic_ncols=True)
                    if self.enabled and sys.stderr.isatty() else None)

    def update(self, result: WarmupResult) -> None:
        if not self.enabled:
            return
        done = result.total
        counts = f'{result.compiled} compiled, {result.cached} cached, {len(result.failed)} failed'
        if self.bar is not None:
            self.bar.set_postfix_str(counts, refresh=False)
            self.bar.update(done - self.bar.n)
        elif done * 10 // self.total > self.last_decile:
            self.last_decile = done * 10 // self.total
            line = self.tqdm.format_meter(done, self.total, time.monotonic() - self.start, prefix='warmup',
                                          unit='kernel', postfix=counts, ncols=100, ascii=True)
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _with_preset(calls, preset):
    """``calls`` plus the calls of the model preset(s) ``preset`` (ValueError for an unknown name, before any
    compile)."""
    if preset is None:
        return calls
    from ._warmup_presets import preset_calls
    names = [preset] if isinstance(preset, str) else list(preset)
    preset_list = [call for name in names for call in preset_calls(name)]
    if calls is None:
        return preset_list
    from ._warmup_calls import read_calls
    return (read_calls(calls) if isinstance(calls, (str, os.PathLike)) else list(calls)) + preset_list


def _plan(kernels, arch, calls, num_sms, smem_optin, result: WarmupResult) -> List[KernelRecord]:
    """The distinct kernels of a record and of planned calls; calls that cannot be planned go to ``result``."""
    records: List[KernelRecord] = []
    if kernels is not None:
        records += read_record(kernels) if isinstance(kernels, (str, os.PathLike)) else list(kernels)
    if calls is not None:
        from ._warmup_calls import describe, parse_call, plan_call, plan_target, read_calls
        target = plan_target(arch, num_sms, smem_optin)
        result.target = str(target)
        for number, call in enumerate(read_calls(calls) if isinstance(calls, (str, os.PathLike)) else calls, 1):
            result.calls += 1
            try:
                records += plan_call(parse_call(call) if isinstance(call, str) else call, target)
            except Exception as e:  # reported with the call, like a failed compile
                result.failed.append(f'call {number} {describe(call)}: {e}')
                result.details.append(str(e))
    records = list(dict.fromkeys(records))
    result.kernels = len(records)
    return records


@dataclass
class CheckResult:
    present: List[str] = field(default_factory=list)   # "name (arch): entry dir"
    missing: List[str] = field(default_factory=list)   # "name (arch): entry dir it would have"
    failed: List[str] = field(default_factory=list)    # calls that could not be planned
    target: str = ''


def check(kernels: Union[str, Iterable[KernelRecord], None] = None, arch: Optional[str] = None,
          calls: Union[str, Iterable[Any], None] = None, num_sms: Optional[int] = None,
          smem_optin: Optional[int] = None, preset: Union[str, Iterable[str], None] = None) -> CheckResult:
    """Which of the kernels a warm-up would build are already in the cache (``DG_JIT_CACHE_DIR``); compiles and
    writes nothing. Same arguments as :func:`warmup`."""
    planned = WarmupResult()
    records = _plan(kernels, arch, _with_preset(calls, preset), num_sms, smem_optin, planned)
    result = CheckResult(failed=planned.failed, target=planned.target)
    for record in records:
        target_arch = arch or record.arch
        found = _C.cache_lookup(record.name, record.symbol, record.code, target_arch)
        (result.present if found['present'] else result.missing).append(
            f"{record.name} ({target_arch}): {found['dir']}")
    return result


def warmup(kernels: Union[str, Iterable[KernelRecord], None] = None, jobs: Optional[int] = None,
           arch: Optional[str] = None, progress: bool = True, calls: Union[str, Iterable[Any], None] = None,
           num_sms: Optional[int] = None, smem_optin: Optional[int] = None,
           preset: Union[str, Iterable[str], None] = None) -> WarmupResult:
    """Compiles kernels into the cache (``DG_JIT_CACHE_DIR``), ``jobs`` at a time (default: the number of
    CPUs). Needs no GPU. Failures are collected in the result, not raised.

    ``kernels``: a DG_JIT_RECORD file or a list of :class:`KernelRecord`; ``arch`` replaces their recorded
    target arch (e.g. ``'sm_90a'``). ``calls``: a JSON file or a list of call dicts / ``'op:field=value,...'``
    strings (see deep_gemm/_warmup_calls.py), planned for ``arch`` / ``num_sms`` / ``smem_optin``: by
    default this machine's GPU (its SM count as ``get_num_sms()`` reports it), else sm_90a with 132 SMs and
    232448 B of shared memory per block. A call that cannot be planned (unknown op, missing or bad field,
    no config) is listed in ``failed``, as is a kernel that does not compile (one line each; ``details`` holds
    the whole messages, with the compiler's log). For the job to find the kernels, the warm-up must match it in
    toolkit, compiler kind (NVCC / NVRTC), headers, SM count, shared memory, DG_FP8_GEMM_CONFIG /
    DG_BF16_GEMM_CONFIG and the knobs set_mk_alignment_for_contiguous_layout, set_block_size_multiple_of and
    set_ignore_compile_dims.

    ``preset``: a model preset name (or several), e.g. ``'deepseek-v3-tp8'``: its GEMM calls are added to
    ``calls`` (deep_gemm/_warmup_presets.py, docs/warmup_presets.md). An unknown name raises ValueError.
    """
    calls = _with_preset(calls, preset)
    result = WarmupResult()
    records = _plan(kernels, arch, calls, num_sms, smem_optin, result)
    jobs = max(1, jobs or os.cpu_count() or 1)
    bar = _Progress(len(records) + len(result.failed), progress)
    start = time.monotonic()

    def build(record: KernelRecord):
        return _C.build_source(record.name, record.symbol, record.code, arch or record.arch)

    with ThreadPoolExecutor(max_workers=jobs) as pool:  # build_source releases the GIL
        futures = {pool.submit(build, record): record for record in records}
        try:
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
                    result.details.append(str(e).strip())
                bar.update(result)
        finally:
            bar.close()
    result.seconds = time.monotonic() - start
    return result
