"""scripts/run_peer_tests.py without a GPU: it runs each test function of a peer-style module and tells a
failure of ours from one inside the peer's timing helper."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'scripts', 'run_peer_tests.py')


def run(tmp_path, body, module='test_fake'):
    (tmp_path / f'{module}.py').write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path), module], cwd=ROOT, capture_output=True, text=True)


def test_pass_fail_and_harness(tmp_path):
    out = run(tmp_path, '''
        def bench_kineto(fn):
            raise RuntimeError('profiler matched two kernels')

        def test_ok():
            print('fine')

        def test_wrong():
            assert 1 == 2, 'diff too large'

        def test_timing_only():
            bench_kineto(None)

        def helper():
            raise AssertionError('not a test')
    ''')
    lines = {line.split(':')[0]: line for line in out.stdout.splitlines() if line.startswith('test_fake.')}
    assert set(lines) == {'test_fake.test_ok', 'test_fake.test_wrong', 'test_fake.test_timing_only'}
    assert ': pass (' in lines['test_fake.test_ok']
    assert ': fail (' in lines['test_fake.test_wrong'] and 'diff too large' in lines['test_fake.test_wrong']
    assert ': harness (' in lines['test_fake.test_timing_only']
    assert out.returncode == 1


def test_an_error_of_the_timed_call_is_a_failure(tmp_path):
    # The helper calls the test's lambda, and our op raises there: ours, not the harness.
    out = run(tmp_path, '''
        def bench_kineto(fn):
            fn()

        def op():
            raise TypeError('op: a must have dtype bfloat16')

        def test_timed_call_raises():
            bench_kineto(lambda: op())
    ''')
    assert ': fail (' in out.stdout and 'must have dtype' in out.stdout and out.returncode == 1


def test_one_function_of_a_module(tmp_path):
    (tmp_path / 'test_fake.py').write_text('def test_a():\n    pass\n\ndef test_b():\n    assert False\n')
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path), 'test_fake.test_a'], cwd=ROOT, capture_output=True,
                         text=True)
    assert 'test_fake.test_a: pass' in out.stdout and 'test_b' not in out.stdout and out.returncode == 0


def test_harness_failures_alone_exit_zero(tmp_path):
    out = run(tmp_path, '''
        def bench_kineto(fn):
            raise RuntimeError('x')

        def test_timing_only():
            bench_kineto(None)
    ''')
    assert ': harness (' in out.stdout and out.returncode == 0


def test_import_failure_is_reported(tmp_path):
    out = run(tmp_path, 'from deep_gemm.utils import no_such_helper\n')
    assert 'test_fake.<import>: fail' in out.stdout and 'no_such_helper' in out.stdout and out.returncode == 1


def test_kernel_name_mismatch_falls_back_to_the_whole_call_time():
    sys.path.insert(0, os.path.join(ROOT, 'scripts'))
    import run_peer_tests

    def bench_kineto(fn, kernel_names, **kwargs):
        if kernel_names == 'clean_logits' or 'nvjet' in kernel_names:
            raise RuntimeError("bench_kineto: no kernel whose name contains 'clean_logits' ran; kernels seen: [...]")
        if kernel_names == 'other':
            raise RuntimeError('CUDA error: an illegal memory access was encountered')
        return 2.0

    notes, profiled = [], []

    def counting(fn, kernel_names, **kwargs):
        profiled.append(kernel_names)
        return bench_kineto(fn, kernel_names, **kwargs)

    timed = run_peer_tests.with_timing_fallback(counting, lambda fn, **kwargs: 1.5, notes)
    assert timed(None, 'sm90_gemm') == 2.0 and notes == []
    assert timed(None, 'clean_logits', suppress_kineto_output=True) == 1.5
    assert timed(None, ('nvjet', 'reduce')) == (1.5, 1.5)
    assert len(notes) == 2 and notes[0].startswith('bench_kineto: no kernel')
    # A name that mismatched once is not profiled again.
    assert timed(None, 'clean_logits') == 1.5 and profiled.count('clean_logits') == 1 and len(notes) == 3
    try:
        timed(None, 'other')  # not a name mismatch: raised as it was
    except RuntimeError as e:
        assert 'illegal memory access' in str(e)
    else:
        raise AssertionError('a kernel error must not be replaced by a timing')
