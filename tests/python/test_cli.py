"""python -m deep_gemm info / cache: output on a machine without a GPU, pruning and clearing a real cache,
the per-key lock respected (a held lock, and a compile running in another process while the cache is cleared)."""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import torch

from deep_gemm import _C
from deep_gemm.cli import main
from deep_gemm.cli.units import format_age, format_size, parse_duration, parse_size
from pyrun import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dg(*args, stdin=subprocess.DEVNULL, **env_overrides) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env.update(env_overrides)
    return subprocess.run([sys.executable, '-m', 'deep_gemm', *args], env=env, capture_output=True, text=True,
                          stdin=stdin, timeout=300)


@pytest.fixture(scope='module')
def compiled_entry(tmp_path_factory):
    """One real cache entry (the layout kernel, compiled once for the module)."""
    cache = tmp_path_factory.mktemp('built')
    result = run_python("import deep_gemm; print(deep_gemm.compile_only('layout_transpose_sf')['dir'])",
                        DG_JIT_CACHE_DIR=str(cache))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def populate(root, entry, count, now=None):
    """`count` copies of `entry` under distinct keys, entry i last used i hours ago; returns their paths."""
    now = now or time.time()
    paths = []
    for i in range(count):
        path = os.path.join(root, 'cache', f'kernel.layout_transpose_sf.{i:032x}')
        shutil.copytree(entry, path)
        os.utime(path, (now - 3600 * i, now - 3600 * i))
        paths.append(path)
    for sub in ('tmp', 'locks'):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    return paths


def cli(capsys, *args):
    """Runs the command line in this process (a fresh interpreter costs seconds); returns (rc, stdout, stderr)."""
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def entry_bytes(entry):
    return sum(os.path.getsize(os.path.join(entry, f)) for f in os.listdir(entry))


def test_info_text_without_gpu(tmp_path):
    result = dg('info', DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_DEBUG='1')
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith('deep_gemm ')
    assert f'torch             {torch.__version__}' in out
    for entry in _C.setting_registry():
        assert entry['name'] in out
    assert [line for line in out.splitlines() if 'DG_JIT_DEBUG ' in line][0].split()[1:3] == ['1', '[env]']
    assert [line for line in out.splitlines() if 'DG_JIT_USE_NVRTC ' in line][0].split()[1:3] == ['0', '[default]']
    assert f'kernel cache      {tmp_path}: 0 entries' in out
    if not torch.cuda.is_available():
        assert 'GPUs              none visible' in out


def test_info_json(tmp_path, compiled_entry):
    populate(str(tmp_path), compiled_entry, 3)
    result = dg('info', '--json', DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_USE_NVRTC='1')
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [s['name'] for s in report['settings']] == [e['name'] for e in _C.setting_registry()]
    nvrtc = [s for s in report['settings'] if s['name'] == 'DG_JIT_USE_NVRTC'][0]
    assert (nvrtc['value'], nvrtc['source']) == ('1', 'env')
    assert report['compiler']['kind'] == 'nvrtc' and report['compiler']['version']
    assert report['cache'] == {'dir': str(tmp_path), 'entries': 3, 'bytes': 3 * entry_bytes(compiled_entry),
                               'exists': True, 'tuning': []}
    assert report['torch']['version'] == torch.__version__
    assert report['gpus'] == [] or all(g['sm_count'] > 0 for g in report['gpus'])
    if not torch.cuda.is_available():
        assert report['gpus'] == []


def test_info_reports_a_malformed_setting_and_still_runs(tmp_path):
    result = dg('info', '--json', DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_CPP_STANDARD='99')
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "DG_JIT_CPP_STANDARD='99'" in report['settings_error']
    assert "DG_JIT_CPP_STANDARD='99'" in report['compiler']['error']


def test_ls_and_stats(tmp_path, compiled_entry, capsys):
    paths = populate(str(tmp_path), compiled_entry, 3)
    rc, out, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'ls', '--json')
    assert rc == 0, err
    listing = json.loads(out)
    assert [e['path'] for e in listing['entries']] == paths  # most recently used first
    assert all(e['name'] == 'layout_transpose_sf' and e['arch'] == 'sm_90a' and e['manifest_ok']
               for e in listing['entries'])
    text = cli(capsys, 'cache', '--dir', str(tmp_path), 'ls')[1]
    assert text.splitlines()[0] == f'{tmp_path}: 3 entries'
    assert text.splitlines()[2].startswith('layout_transpose_sf') and '2h ago' in text.splitlines()[4]
    stats = json.loads(cli(capsys, 'cache', '--dir', str(tmp_path), 'stats', '--json')[1])
    assert stats['entries'] == 3 and stats['entry_bytes'] == 3 * entry_bytes(compiled_entry)
    # --dir also after the action, and each line of the text form says what it counts.
    rc, out, err = cli(capsys, 'cache', 'stats', '--dir', str(tmp_path))
    assert rc == 0, err
    assert out.splitlines()[0] == f'cache dir     {tmp_path}' and 'entries       3 (' in out
    assert 'empty per-kernel files in locks/' in out and 'no cleaning needed' in out
    # Given before the action, --dir is not reset by the action's own (absent) --dir.
    assert cli(capsys, 'cache', '--dir', str(tmp_path), 'stats')[1] == out


def test_prune_by_age_and_size(tmp_path, compiled_entry, capsys):
    paths = populate(str(tmp_path), compiled_entry, 4)  # last used 0, 1, 2, 3 hours ago
    rc, out, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'prune', '--max-age', '150m', '--json')
    assert rc == 0, err
    assert json.loads(out)['removed'] == [paths[3]]
    size = entry_bytes(compiled_entry)
    rc, out, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'prune', '--max-size', str(size), '--dry-run')
    assert rc == 0, err
    assert f'would remove {paths[2]}' in out and f'would remove {paths[1]}' in out
    assert all(os.path.isdir(p) for p in paths[:3])
    rc, out, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'prune', '--max-size', str(size))
    assert rc == 0, err
    assert [os.path.isdir(p) for p in paths] == [True, False, False, False]  # the most recently used stays
    assert cli(capsys, 'cache', '--dir', str(tmp_path), 'prune')[0] == 2  # no criterion given


def test_clear_asks_and_needs_yes_without_a_terminal(tmp_path, compiled_entry, capsys):
    paths = populate(str(tmp_path), compiled_entry, 2)
    rc, _, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'clear')  # pytest's stdin is not a terminal
    assert rc == 1 and '--yes' in err
    assert all(os.path.isdir(p) for p in paths)
    rc, _, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'clear', '--yes')
    assert rc == 0, err
    assert not any(os.path.exists(p) for p in paths)
    assert os.listdir(os.path.join(tmp_path, 'cache')) == []


def test_clear_skips_a_key_locked_by_another_process(tmp_path, compiled_entry, capsys):
    paths = populate(str(tmp_path), compiled_entry, 2)
    with open(os.path.join(tmp_path, 'locks', f'{1:032x}.lock'), 'w') as lock:
        # what a compiling process holds for that key (flock locks belong to the open file, so the C++ side's
        # own open of the same file in this process contends like another process would)
        fcntl.flock(lock, fcntl.LOCK_EX)
        rc, out, err = cli(capsys, 'cache', '--dir', str(tmp_path), 'clear', '--yes', '--json')
    assert rc == 0, err
    report = json.loads(out)
    assert report['removed'] == [paths[0]] and report['busy'] == [paths[1]]
    assert os.path.isdir(paths[1]) and not os.path.exists(paths[0])


def test_clear_while_another_process_compiles(tmp_path, capsys, monkeypatch):
    """A real compile in another process, held inside nvcc, while `cache clear --yes` runs: the compile's
    build directory is reported busy and kept, and the compile then publishes a sound entry."""
    nvcc = shutil.which('nvcc') or os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'), 'bin', 'nvcc')
    if not os.path.exists(nvcc):
        pytest.skip('nvcc not found')
    started, go = tmp_path / 'started', tmp_path / 'go'
    wrapper = tmp_path / 'nvcc'
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do\n  if [ "$a" = -cubin ]; then\n'
                       f'    touch {started}\n    while [ ! -e {go} ]; do sleep 0.05; done\n  fi\ndone\n'
                       f'exec {nvcc} "$@"\n')
    wrapper.chmod(0o755)
    cache = tmp_path / 'cache root'
    env = dict(os.environ, DG_JIT_CACHE_DIR=str(cache), DG_JIT_NVCC_COMPILER=str(wrapper), DG_JIT_USE_NVRTC='0',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    code = "import deep_gemm; print(deep_gemm.compile_only('layout_transpose_sf')['compiled'])"
    writer = subprocess.Popen([sys.executable, '-c', code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.time() + 120
        while not started.exists() and time.time() < deadline and writer.poll() is None:
            time.sleep(0.05)
        assert started.exists(), 'the writer never reached its compiler'
        build_dirs = os.listdir(cache / 'tmp')
        rc, out, err = cli(capsys, 'cache', '--dir', str(cache), 'clear', '--yes', '--json')
        still_there = os.listdir(cache / 'tmp')
    finally:
        go.write_text('')
        writer_out, writer_err = writer.communicate(timeout=300)
    assert rc == 0, err
    assert len(build_dirs) == 1 and still_there == build_dirs
    assert json.loads(out)['busy'] == [str(cache / 'tmp' / build_dirs[0])]
    assert writer.returncode == 0, writer_err
    assert writer_out.strip() == 'True'
    entries = _C.cache_list(str(cache))
    assert len(entries) == 1 and entries[0]['manifest_ok']
    for name in ('DG_JIT_CACHE_DIR', 'DG_JIT_NVCC_COMPILER', 'DG_JIT_USE_NVRTC'):
        monkeypatch.setenv(name, env[name])
    _C.reload_settings()
    try:
        hit = _C.compile_only('layout_transpose_sf')  # the published entry is sound: found, not recompiled
    finally:
        monkeypatch.undo()
        _C.reload_settings()
    assert hit['compiled'] is False and hit['dir'] == entries[0]['path']


@pytest.mark.parametrize('text, seconds', [('90', 90), ('45s', 45), ('30m', 1800), ('12h', 43200), ('7d', 604800),
                                           ('1.5h', 5400), ('2w', 1209600)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize('text, size', [('1000', 1000), ('2K', 2048), ('1.5M', 1572864), ('2G', 2 << 30),
                                        ('1GiB', 1 << 30), ('3mb', 3 << 20)])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize('bad', ['', 'abc', '-5', '5y', '1..2', 'm', '5 m s'])
def test_bad_duration(bad):
    with pytest.raises(ValueError, match='not a duration'):
        parse_duration(bad)


@pytest.mark.parametrize('bad', ['', 'abc', '-5', '5y', '1..2', 'G', '2Q', '1GiBs', '3 M M'])
def test_bad_size(bad):
    with pytest.raises(ValueError, match='not a size'):
        parse_size(bad)


def test_formatting():
    assert format_size(512) == '512 B' and format_size(1536) == '1.5 KiB' and format_size(3 << 30) == '3.0 GiB'
    assert format_age(59) == '59s' and format_age(7200) == '2h' and format_age(3 * 86400 + 5) == '3d'
