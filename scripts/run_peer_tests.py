"""Runs DeepGEMM v2.6.1's own test modules against our deep_gemm, one test function at a time, and reports
each as pass, fail, or "harness" (it failed inside the peer's timing helper, after its correctness checks).

The modules time kernels with `deep_gemm.testing.bench_kineto`, picking them by DeepGEMM's kernel names; ours
have other names, so the profiler's filter matches none (or several) and the test would stop at its first
timing, before the correctness checks of its later cases. Here bench_kineto falls back, for such a call, to
the whole call's time (`deep_gemm.testing.bench`), so every case's checks run; a passing test that needed it
says how often ("timing: ..."). Any other failure inside the timing helpers still counts as "harness".

    python3 scripts/run_peer_tests.py PEER_TESTS_DIR [test_bf16 test_einsum ...]
    python3 scripts/run_peer_tests.py PEER_TESTS_DIR test_bf16.test_m_grouped_gemm_contiguous   # one function

PEER_TESTS_DIR is the peer's `tests/` folder (its `generators.py` is imported from there); `deep_gemm` is
the one of this checkout. The modules call our functions
through DeepGEMM's API, so a failure outside the timing helper is ours to fix. Exit status: 1 if any test
failed outside the harness. Set DG_MQA_NUM_CASES to sample the attention modules' long case lists.
"""
import importlib
import io
import os
import sys
import time
import traceback
from contextlib import redirect_stdout

MODULES = ['test_layout', 'test_bf16', 'test_fp8_fp4', 'test_legacy', 'test_einsum', 'test_hyperconnection',
           'test_attention']
# The peer's timing helpers: a failure whose innermost frame of the test module's call chain is one of these
# happened after the correctness asserts (e.g. the profiler's kernel-name filter, which also matches our
# layout kernel's name because it contains "gemm_").
HARNESS_FUNCTIONS = {'bench_kineto', 'bench'}


def classify(exc: BaseException, module_file: str = None) -> str:
    """'harness' when the exception came from a timing helper itself; 'fail' otherwise, including a call of
    ours that the helper was timing (a frame of the test module inside the helper's, e.g. its lambda)."""
    frames = traceback.extract_tb(exc.__traceback__)
    helper = [i for i, f in enumerate(frames) if f.name in HARNESS_FUNCTIONS]
    if not helper:
        return 'fail'
    timed_call = any(f.filename == module_file for f in frames[helper[-1] + 1:])
    return 'fail' if timed_call else 'harness'


def with_timing_fallback(bench_kineto, bench, notes: list):
    """bench_kineto that answers a kernel-name mismatch (its RuntimeError 'bench_kineto: ...') with the whole
    call's time from `bench`, once per name asked for, and records the mismatch in `notes`. A name that
    mismatched once goes straight to `bench` after that, and `bench` times few runs: the figures are not
    read here, and the profiler's 30 calls per case made one module take minutes."""
    mismatched = set()

    def timed(fn, kernel_names, *args, **kwargs):
        key = kernel_names if isinstance(kernel_names, str) else tuple(kernel_names)
        if key not in mismatched:
            try:
                return bench_kineto(fn, kernel_names, *args, **kwargs)
            except RuntimeError as e:
                if not str(e).startswith('bench_kineto:'):
                    raise
                mismatched.add(key)
                notes.append(str(e).splitlines()[0][:160])
        else:
            notes.append(f'bench_kineto: {key!r} mismatched before')
        t = bench(fn, num_warmups=1, num_tests=3)
        return t if isinstance(kernel_names, str) else tuple(t for _ in kernel_names)
    return timed


def run_module(name: str, notes: list = None, only: str = None):
    """(test, status, detail, seconds, log) per test function of module `name` (just `only`, if given)."""
    notes = [] if notes is None else notes
    try:
        module = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - e.g. a helper our deep_gemm lacks: the whole module fails
        yield '<import>', 'fail', f'{type(e).__name__}: {e}'[:300], 0.0, traceback.format_exc()
        return
    for attr in sorted(vars(module)):
        fn = getattr(module, attr)
        if not attr.startswith('test_') or not callable(fn) or getattr(fn, '__module__', None) != name:
            continue
        if only is not None and attr != only:
            continue
        start, log = time.time(), io.StringIO()
        del notes[:]
        try:
            with redirect_stdout(log):
                fn()
            timing = f'timing: {len(notes)} call(s) timed whole, first: {notes[0]}' if notes else ''
            yield attr, 'pass', timing, time.time() - start, log.getvalue()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            detail = ''.join(traceback.format_exception_only(type(e), e)).strip().splitlines()[-1][:300]
            yield attr, classify(e, getattr(module, '__file__', None)), detail, time.time() - start, log.getvalue() + traceback.format_exc()


def main(argv):
    if not argv or not os.path.isdir(argv[0]):
        print(__doc__, file=sys.stderr)
        return 2
    # Ours first (this checkout), then the peer's test folder for its `generators` helper.
    sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.abspath(argv[0])]
    import torch
    import deep_gemm
    import deep_gemm.testing
    print(f'deep_gemm from {os.path.dirname(deep_gemm.__file__)}; peer tests from {argv[0]}')
    # Before the modules import it (`from deep_gemm.testing import bench_kineto`).
    notes = []
    deep_gemm.testing.bench_kineto = with_timing_fallback(deep_gemm.testing.bench_kineto, deep_gemm.testing.bench,
                                                          notes)
    failed = False
    for arg in argv[1:] or MODULES:
        name, _, only = arg.partition('.')
        torch.manual_seed(0)
        for test, status, detail, seconds, log in run_module(name, notes, only or None):
            failed |= status == 'fail'
            print(f'{name}.{test}: {status} ({seconds:.0f} s) {detail}', flush=True)
            if status != 'pass':
                print('    ' + log[-3000:].replace('\n', '\n    '))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
