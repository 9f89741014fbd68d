"""``python -m deep_gemm tune``: pick kernel configs by measurement, ahead of time, and keep the winners in the
cache's tuning table (docs/cache.md, "Tuning table"), which the planner consults for this GPU model.

For each call (the call lists of ``warmup``): the candidate configs around the heuristic's pick
(``_C._gemm_call_candidates``: the kernel's knob table, every candidate legal for the call) are compiled in
parallel through the normal JIT and cache; each runs on random data and is checked against the heuristic's
output (a wrong one is dropped and reported); the survivors and the heuristic are timed in interleaved rounds
with L2 flushed before every launch; a candidate wins only if it beats the heuristic by more than the
heuristic's own spread over the rounds, in every round. Needs a Hopper GPU.
"""
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _C
from ._warmup import KernelRecord, warmup
from ._warmup_calls import call_kwargs, describe, parse_call, plan_target

_ROUNDS = 5
_LAUNCHES_PER_ROUND = 10
_MAX_DIFF = 1e-3  # calc_diff of a candidate's output against the heuristic's (same math, another tile order)


@dataclass
class TunedCall:
    call: str
    heuristic_us: float = 0.0
    tuned_us: float = 0.0
    config: Optional[str] = None  # the winner (None: the heuristic's pick stays)
    wrong: List[str] = field(default_factory=list)  # candidates whose output disagreed
    candidates: int = 0
    seconds: float = 0.0
    error: Optional[str] = None

    @property
    def gain(self) -> float:
        return self.heuristic_us / self.tuned_us - 1 if self.config and self.tuned_us > 0 else 0.0


def require_gpu() -> Tuple[int, str]:
    """The current device and its tuning-table model; RuntimeError when there is no Hopper GPU to time on."""
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError('tune times kernels and needs an NVIDIA Hopper GPU (H100/H200); no CUDA device is visible '
                           '(warmup compiles without one)')
    device = torch.cuda.current_device()
    major, _ = torch.cuda.get_device_capability(device)
    if major != 9:
        raise RuntimeError(f'tune needs a Hopper GPU (compute capability 9.x); device {device} is '
                           f'{torch.cuda.get_device_name(device)} ({major}.x)')
    return device, _C._gpu_model(device)


class _Forced:
    """Runs with one kernel config: the candidate's forced-config variable, or the heuristic's (variable unset,
    tuning table off)."""

    def __init__(self, variable: str, config: Optional[str]):
        self.variable, self.config = variable, config

    def __enter__(self):
        self.saved = {name: os.environ.get(name) for name in (self.variable, 'DG_JIT_TUNING')}
        os.environ['DG_JIT_TUNING'] = '0'
        if self.config is None:
            os.environ.pop(self.variable, None)
        else:
            os.environ[self.variable] = self.config
        _C.reload_settings()

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _C.reload_settings()


def _runner(call: Dict[str, Any]) -> Tuple[Callable[[], None], Any]:
    """A function that runs `call` on fixed random inputs, and its output tensor. ValueError for ops tune does
    not drive yet."""
    import torch
    import deep_gemm
    from .utils.math import per_block_cast_to_fp8, per_token_cast_to_fp8
    op, m, n, k = call['op'], int(call.get('m', call.get('max_m', 0))), int(call['n']), int(call['k'])
    groups = int(call.get('num_groups', 1))
    gen = torch.Generator(device='cuda').manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, device='cuda', generator=gen, dtype=torch.float32)

    if op == 'fp8_gemm_nt':
        one_d_one_d = list(call.get('recipe') or []) == [1, 1, 128]
        a = per_token_cast_to_fp8(randn(m, k))
        b = per_token_cast_to_fp8(randn(n, k)) if one_d_one_d else per_block_cast_to_fp8(randn(n, k))
        d = torch.empty(m, n, device='cuda', dtype=torch.float32 if one_d_one_d else torch.bfloat16)
        recipe = (1, 1, 128) if one_d_one_d else None
        return (lambda: deep_gemm.fp8_gemm_nt(a, b, d, recipe=recipe)), d
    if op in ('bf16_gemm_nt', 'bf16_gemm_nn', 'bf16_gemm_tn', 'bf16_gemm_tt'):
        a = randn(m, k).to(torch.bfloat16) if op[10] == 'n' else randn(k, m).to(torch.bfloat16).t()
        b = randn(n, k).to(torch.bfloat16) if op[11] == 't' else randn(k, n).to(torch.bfloat16).t()
        d = torch.empty(m, n, device='cuda', dtype=torch.float32 if call.get('d_dtype') == 'float32' else torch.bfloat16)
        fn = getattr(deep_gemm, op)
        return (lambda: fn(a, b, d)), d
    if op == 'm_grouped_fp8_gemm_nt_contiguous':
        a = per_token_cast_to_fp8(randn(m, k))
        b_fp8 = [per_block_cast_to_fp8(randn(n, k)) for _ in range(groups)]
        b = (torch.stack([x for x, _ in b_fp8]), torch.stack([s for _, s in b_fp8]))
        rows = m // groups // 128 * 128
        layout = torch.full((m,), -1, device='cuda', dtype=torch.int32)
        for g in range(groups):
            layout[g * rows:(g + 1) * rows] = g
        d = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
        return (lambda: deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout)), d
    if op == 'm_grouped_fp8_gemm_nt_masked':
        a_fp8 = [per_token_cast_to_fp8(randn(m, k)) for _ in range(groups)]
        b_fp8 = [per_block_cast_to_fp8(randn(n, k)) for _ in range(groups)]
        a = (torch.stack([x for x, _ in a_fp8]), torch.stack([s for _, s in a_fp8]))
        b = (torch.stack([x for x, _ in b_fp8]), torch.stack([s for _, s in b_fp8]))
        expected_m = int(call.get('expected_m', 0)) or m
        masked_m = torch.full((groups,), min(expected_m, m), device='cuda', dtype=torch.int32)
        d = torch.zeros(groups, m, n, device='cuda', dtype=torch.bfloat16)
        return (lambda: deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m)), d
    raise ValueError(f'tune does not drive {op} yet (fp8_gemm_nt, bf16_gemm_*, m_grouped_fp8_gemm_nt_contiguous '
                     'and _masked)')


def _time_rounds(fn: Callable[[], None], configs: Sequence[Optional[str]], variable: str,
                 rounds: int) -> Dict[Optional[str], List[float]]:
    """Per config, its mean µs per launch in each round; the configs run in a new random order each round,
    each launch after an L2 flush."""
    import torch
    from .testing.bench import flush_l2
    times: Dict[Optional[str], List[float]] = {c: [] for c in configs}
    for _ in range(rounds):
        order = list(configs)
        random.shuffle(order)
        for config in order:
            with _Forced(variable, config):
                fn()  # plan and load outside the timed launches
                total = 0.0
                for _ in range(_LAUNCHES_PER_ROUND):
                    flush_l2()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    fn()
                    end.record()
                    end.synchronize()
                    total += start.elapsed_time(end) * 1000.0
                times[config].append(total / _LAUNCHES_PER_ROUND)
    return times


def pick_winner(times: Dict[Optional[str], List[float]]) -> Optional[str]:
    """The fastest candidate (by median) that beats the heuristic (key None) by more than the heuristic's
    spread over the rounds, in every round; None when none does."""
    base = times[None]
    noise = max(base) - min(base)
    beating = [c for c, t in times.items()
               if c is not None and all(tc < tb - noise for tc, tb in zip(t, base))]
    return min(beating, key=lambda c: sorted(times[c])[len(times[c]) // 2], default=None)


def tune_call(call: Any, target, gpu: str, jobs: Optional[int], rounds: int = _ROUNDS) -> TunedCall:
    import torch
    from .testing.numeric import calc_diff
    start = time.monotonic()
    call = call if isinstance(call, dict) else parse_call(call)
    result = TunedCall(describe(call))
    found = _C._gemm_call_candidates(**call_kwargs(call, target))
    variable = found['variable']
    result.candidates = len(found['candidates'])
    records = [KernelRecord(name, symbol, target.arch, code) for _, name, symbol, code in found['candidates']]
    built = warmup(records, jobs=jobs, progress=False)  # in parallel; a kernel that failed fails its run below
    result.wrong += [f'compile: {line}' for line in built.failed]
    configs = [config for config, _, _, _ in found['candidates']]
    fn, out = _runner(call)
    with _Forced(variable, None):
        fn()
        torch.cuda.synchronize()
        reference = out.clone()
    good: List[Optional[str]] = [None]
    for config in configs:
        out.fill_(float('nan'))
        try:
            with _Forced(variable, config):
                fn()
                torch.cuda.synchronize()
        except RuntimeError as e:
            result.wrong.append(f'{config}: {str(e).splitlines()[0]}')
            continue
        diff = float(calc_diff(out.double(), reference.double()))
        if not diff < _MAX_DIFF:
            result.wrong.append(f'{config}: output differs from the heuristic kernel\'s (diff {diff:.2e})')
            continue
        good.append(config)
    times = _time_rounds(fn, good, variable, rounds)
    median = {c: sorted(t)[len(t) // 2] for c, t in times.items()}
    result.heuristic_us = median[None]
    result.config = pick_winner(times)
    result.tuned_us = median[result.config] if result.config else result.heuristic_us
    if result.config:
        _C._tuning_table_merge(_C.get_settings()['cache_dir'],
                               [(gpu, variable, found['signature'], result.config, result.heuristic_us, result.tuned_us)])
        _C.reload_settings()
    result.seconds = time.monotonic() - start
    return result


def tune(calls: Sequence[Any], budget_s: Optional[float] = None, jobs: Optional[int] = None,
         progress: bool = True, rounds: int = _ROUNDS) -> List[TunedCall]:
    """Tunes each call in turn (stopping before a call once `budget_s` seconds have passed); the winners are
    merged into the cache's tuning table. RuntimeError without a Hopper GPU."""
    device, gpu = require_gpu()
    from tqdm import tqdm
    target = plan_target()
    results: List[TunedCall] = []
    start = time.monotonic()
    bar = tqdm(total=len(calls), desc='tune', unit='call', file=sys.stderr, disable=not progress)
    for call in calls:
        if budget_s is not None and time.monotonic() - start > budget_s:
            results.append(TunedCall(describe(call), error='not tuned: the budget was spent'))
            bar.update(1)
            continue
        try:
            results.append(tune_call(call, target, gpu, jobs, rounds))
        except (RuntimeError, ValueError, TypeError) as e:
            results.append(TunedCall(describe(call), error=str(e).splitlines()[0]))
        bar.update(1)
    bar.close()
    return results


def format_table(results: Sequence[TunedCall]) -> str:
    """shape, heuristic µs, tuned µs, gain (and the pick, wrong candidates, errors)."""
    lines = [f"{'call':60} {'heuristic us':>12} {'tuned us':>9} {'gain':>7}  pick"]
    for r in results:
        if r.error:
            lines.append(f'{r.call:60} {"":>12} {"":>9} {"":>7}  {r.error}')
            continue
        pick = r.config or 'heuristic kept'
        lines.append(f'{r.call:60} {r.heuristic_us:12.1f} {r.tuned_us:9.1f} {r.gain * 100:6.1f}%  {pick} '
                     f'({r.candidates} candidates, {r.seconds:.0f} s)')
        lines += [f'    wrong: {w}' for w in r.wrong]
    return '\n'.join(lines)
