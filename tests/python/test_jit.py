"""The layout kernel through the JIT without a GPU (compile-only for sm_90a with NVCC and NVRTC), and
C++ log records arriving at the Python logger "deep_gemm"."""

import glob
import logging
import os
import shutil
import subprocess
import threading
import time

import pytest

import deep_gemm
from deep_gemm import _C
from pyrun import run_python


def nvcc_available() -> bool:
    home = os.environ.get('CUDA_HOME', '/usr/local/cuda')
    return os.path.exists(os.path.join(home, 'bin', 'nvcc')) or shutil.which('nvcc') is not None


def find_cuobjdump():
    found = shutil.which('cuobjdump')
    if found:
        return found
    try:
        import nvidia
        for base in nvidia.__path__:
            hits = glob.glob(os.path.join(base, '**', 'bin', 'cuobjdump'), recursive=True)
            if hits:
                return hits[0]
    except ImportError:
        pass
    return None


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv('DG_JIT_CACHE_DIR', str(tmp_path))
    _C.reload_settings()
    yield tmp_path
    monkeypatch.undo()
    _C.reload_settings()


@pytest.mark.parametrize('compiler', ['nvcc', 'nvrtc'])
def test_layout_kernel_compiles_for_sm90a(fresh_cache, monkeypatch, compiler, caplog):
    if compiler == 'nvcc' and not nvcc_available():
        pytest.skip('nvcc not found')
    monkeypatch.setenv('DG_JIT_USE_NVRTC', '1' if compiler == 'nvrtc' else '0')
    _C.reload_settings()
    with caplog.at_level(logging.INFO, logger='deep_gemm'):
        first = deep_gemm.compile_only('layout_transpose_sf', 'sm_90a')
    assert first['compiled'] is True and first['cubin_size'] > 0
    assert first['symbol'] == 'deep_gemm_layout_transpose_sf'
    assert os.path.isfile(os.path.join(first['dir'], 'kernel.cubin'))
    assert first['dir'].startswith(str(fresh_cache))
    # a compile that starts is logged at INFO with the kernel name
    assert any(r.name == 'deep_gemm' and r.levelno == logging.INFO and 'layout_transpose_sf' in r.getMessage() for r in caplog.records)
    second = deep_gemm.compile_only('layout_transpose_sf', 'sm_90a')
    assert second['compiled'] is False and second['dir'] == first['dir']

    cuobjdump = find_cuobjdump()
    if cuobjdump:
        usage = subprocess.run([cuobjdump, '-res-usage', os.path.join(first['dir'], 'kernel.cubin')], capture_output=True, text=True)
        assert 'deep_gemm_layout_transpose_sf' in usage.stdout
        assert 'LOCAL:0' in usage.stdout  # no local memory (spills)


def test_compile_only_unknown_kernel():
    with pytest.raises(ValueError, match='unknown kernel'):
        deep_gemm.compile_only('no_such_kernel', 'sm_90a')


def test_log_records_reach_python_logger(caplog):
    with caplog.at_level(logging.DEBUG, logger='deep_gemm'):
        _C._log(logging.WARNING, 'hello from C++')
        _C._log(logging.DEBUG, 'debug detail')
    messages = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == 'deep_gemm']
    assert (logging.WARNING, 'hello from C++') in messages
    assert (logging.DEBUG, 'debug detail') in messages


def test_log_from_thread_without_gil(caplog):
    def worker():
        _C._log(logging.INFO, 'from a thread')

    with caplog.at_level(logging.INFO, logger='deep_gemm'):
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sum(r.getMessage() == 'from a thread' for r in caplog.records) == 4


def test_log_sink_survives_a_raising_handler(caplog, monkeypatch):
    """A handler that raises is reported through sys.unraisablehook (never raised into C++), and the sink
    keeps delivering records afterwards."""
    class Boom(logging.Handler):
        def emit(self, record):
            raise RuntimeError('handler failure')

    reported = []
    monkeypatch.setattr('sys.unraisablehook', lambda unraisable: reported.append(unraisable.exc_value))
    logger = logging.getLogger('deep_gemm')
    handler = Boom()
    logger.addHandler(handler)
    try:
        _C._log(logging.ERROR, 'first')
    finally:
        logger.removeHandler(handler)
    assert len(reported) == 1 and isinstance(reported[0], RuntimeError) and str(reported[0]) == 'handler failure'
    with caplog.at_level(logging.INFO, logger='deep_gemm'):
        _C._log(logging.ERROR, 'second')
    assert [r.getMessage() for r in caplog.records] == ['second']


_FAILING_NVCC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
echo "kernel.cu(1): error: deliberate failure for the test" >&2
exit 1
"""


def test_compile_failure_is_a_python_error_and_cleans_up(tmp_path):
    """A compiler error becomes a RuntimeError carrying the compiler's output, the build directory is removed, and
    nothing half-built enters the cache. (Inside a torch process the cleanup once crashed the interpreter:
    std::filesystem::remove_all bound to libtorch's copy.)"""
    nvcc = tmp_path / 'failing_nvcc'
    nvcc.write_text(_FAILING_NVCC)
    nvcc.chmod(0o755)
    cache = tmp_path / 'cache'
    code = (
        'import torch, deep_gemm\n'
        'try:\n'
        '    deep_gemm.compile_only("layout_transpose_sf", "sm_90a")\n'
        'except RuntimeError as e:\n'
        '    print("RAISED:", e)\n'
        'else:\n'
        '    print("NO ERROR")\n'
    )
    # A fresh interpreter (torch imported first, as in user code): a crash fails this test, not the session.
    result = run_python(code, DG_JIT_USE_NVRTC='0', DG_JIT_NVCC_COMPILER=str(nvcc), DG_JIT_CACHE_DIR=str(cache))
    assert result.returncode == 0, f'interpreter died (status {result.returncode}): {result.stderr[-2000:]}'
    assert 'RAISED: failed to compile kernel layout_transpose_sf with nvcc' in result.stdout, result.stdout
    assert 'deliberate failure for the test' in result.stdout, result.stdout
    assert os.listdir(cache / 'tmp') == [], 'build directory left behind'
    assert not os.path.exists(cache / 'cache') or os.listdir(cache / 'cache') == [], 'failed build entered the cache'


def test_stale_build_directories_are_removed(tmp_path):
    """Build directories of processes that died mid-compile (a day old) are removed, trees included, at the next
    compile, in a process that has torch loaded."""
    cache = tmp_path / 'cache'
    stale = cache / 'tmp' / 'build.layout_transpose_sf.dead.AbCdEf'
    (stale / 'sub').mkdir(parents=True)
    (stale / 'kernel.cu').write_text('// left by a crashed compile')
    (stale / '.deep_gemm-cache').write_text('')  # the marker every build directory gets (docs/cache.md)
    (stale / 'sub' / 'x').write_text('x')
    os.symlink('/nonexistent/target', stale / 'dangling')
    old = time.time() - 2 * 24 * 3600
    os.utime(stale, (old, old))
    fresh = cache / 'tmp' / 'build.layout_transpose_sf.live.GhIjKl'
    fresh.mkdir()
    code = 'import torch, deep_gemm\nprint(deep_gemm.compile_only("layout_transpose_sf", "sm_90a")["compiled"])\n'
    result = run_python(code, DG_JIT_USE_NVRTC='1', DG_JIT_CACHE_DIR=str(cache))
    assert result.returncode == 0, f'interpreter died (status {result.returncode}): {result.stderr[-2000:]}'
    assert result.stdout.strip() == 'True'
    assert not os.path.lexists(stale), 'stale build directory kept'
    assert fresh.is_dir(), 'a young build directory (maybe a live compile) was removed'
