"""Cache bundles (``cache export`` / ``cache import``), ``warmup --check``, ``DG_JIT_COMPILE`` and the path
variables' checks, through the command line and fresh interpreters (docs/cache.md). No GPU needed."""
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from pyrun import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL = 'layout_transpose_sf'


def dg(*args, **env_overrides) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env.update(env_overrides)
    return subprocess.run([sys.executable, '-m', 'deep_gemm', *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def entries(cache) -> list:
    path = os.path.join(cache, 'cache')
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


@pytest.fixture(scope='module')
def warm(tmp_path_factory):
    """A cache with one real entry (compiled once for the module) and the DG_JIT_RECORD file of that run."""
    base = tmp_path_factory.mktemp('bundle')
    cache, record = str(base / 'a'), str(base / 'kernels.jsonl')
    result = run_python(f"import deep_gemm; print(deep_gemm.compile_only('{KERNEL}')['compiled'])",
                        DG_JIT_CACHE_DIR=cache, DG_JIT_RECORD=record)
    assert result.returncode == 0 and result.stdout.strip() == 'True', result.stderr
    return cache, record


@pytest.fixture(scope='module')
def bundle(warm, tmp_path_factory):
    cache, record = warm
    path = str(tmp_path_factory.mktemp('out') / 'kernels.tgz')
    result = dg('cache', '--dir', cache, 'export', path, '--from-record', record)
    assert result.returncode == 0, result.stderr
    assert 'exported 1 entries' in result.stdout
    return path


def failing_nvcc(tmp_path):
    """An nvcc that answers --version like the real one (the key covers the version) and fails any compile,
    leaving a file behind: a compile that should not happen shows."""
    marker, script = tmp_path / 'compiled', tmp_path / 'nvcc'
    script.write_text('#!/bin/sh\nfor a in "$@"; do\n  if [ "$a" = -cubin ]; then touch ' + str(marker) +
                      '; exit 1; fi\ndone\nexec nvcc "$@"\n')
    script.chmod(0o755)
    return str(script), marker


def test_bundle_lists_versions_hashes_and_relative_names(bundle):
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        header = json.load(tar.extractfile('BUNDLE.json'))
    assert names[0] == 'BUNDLE.json' and all(n == 'BUNDLE.json' or n.startswith('entries/kernel.') for n in names)
    assert header['format'] == 1 and header['compiler']['kind'] and header['compiler']['version']
    assert 'driver_version' in header
    (entry,) = header['entries']
    assert entry['name'] == KERNEL and entry['arch'] == 'sm_90a'
    assert set(entry['files']) >= {'manifest', 'kernel.cubin'}
    assert all(len(f['sha256']) == 64 and f['size'] > 0 for f in entry['files'].values())


def test_imported_bundle_serves_a_compile_only_call_without_compiling(warm, bundle, tmp_path):
    _, record = warm
    clean = str(tmp_path / 'clean')
    result = dg('cache', '--dir', clean, 'import', bundle)
    assert result.returncode == 0, result.stderr
    assert 'imported 1 entries' in result.stdout
    assert dg('warmup', '--check', record, DG_JIT_CACHE_DIR=clean).returncode == 0
    nvcc, marker = failing_nvcc(tmp_path)
    result = run_python(f"import deep_gemm; print(deep_gemm.compile_only('{KERNEL}')['compiled'])",
                        DG_JIT_CACHE_DIR=clean, DG_JIT_NVCC_COMPILER=nvcc, DG_JIT_COMPILE='error')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'False' and not marker.exists()
    result = dg('warmup', record, '--json', DG_JIT_CACHE_DIR=clean, DG_JIT_NVCC_COMPILER=nvcc, DG_JIT_COMPILE='error')
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary['compiled'] == 0 and summary['cached'] == 1 and not marker.exists()
    again = dg('cache', '--dir', clean, 'import', bundle)
    assert again.returncode == 0 and '0 entries' in again.stdout and '1 already there' in again.stdout


def rewrite(src, dst, change):
    """Copies bundle `src` to `dst`, passing each (TarInfo, bytes) through `change`, which returns a list of them."""
    with tarfile.open(src) as tar:
        members = [(info, tar.extractfile(info).read()) for info in tar]
    with tarfile.open(dst, 'w:gz') as out:
        for info, data in members:
            for new_info, new_data in change(info, data):
                new_info.size = len(new_data) if new_info.isreg() else 0
                out.addfile(new_info, io.BytesIO(new_data) if new_info.isreg() else None)


def flip_cubin(info, data):
    if info.name.endswith('kernel.cubin'):
        data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
    return [(info, data)]


def add_member(name, kind=tarfile.REGTYPE):
    def change(info, data):
        out = [(info, data)]
        if info.name == 'BUNDLE.json':
            extra = tarfile.TarInfo(name)
            extra.type = kind
            if kind == tarfile.SYMTYPE:
                extra.linkname = '/etc/passwd'
            out.append((extra, b'x' if kind == tarfile.REGTYPE else b''))
        return out
    return change


def rename_into_parent(info, data):
    if info.name.endswith('/manifest'):
        info.name = info.name.replace('entries/', 'entries/../../', 1)
    return [(info, data)]


@pytest.mark.parametrize('change,expect', [
    (flip_cubin, 'does not match its size and SHA-256'),
    (add_member('../outside'), 'unexpected member'),
    (add_member('/etc/cron.d/x'), 'unexpected member'),
    (rename_into_parent, 'unexpected member'),
    (add_member('entries/kernel.x.0123456789abcdef0123456789abcdef/kernel.cubin', tarfile.SYMTYPE), 'not a regular file'),
    (add_member('entries/kernel.x.0123456789abcdef0123456789abcdef/kernel.cubin', tarfile.CHRTYPE), 'not a regular file'),
    (add_member('entries/kernel.x.0123456789abcdef0123456789abcdef/kernel.cubin'), 'not listed in BUNDLE.json'),
], ids=['flipped-byte', 'dotdot', 'absolute', 'traversal-rename', 'symlink', 'device', 'unlisted'])
def test_tampered_bundle_is_refused_whole(bundle, tmp_path, change, expect):
    bad, clean = str(tmp_path / 'bad.tgz'), str(tmp_path / 'clean')
    rewrite(bundle, bad, change)
    result = dg('cache', '--dir', clean, 'import', bad)
    assert result.returncode == 1
    assert expect in result.stderr, result.stderr
    assert entries(clean) == []
    assert not os.path.exists(tmp_path / 'outside') and not os.path.exists(tmp_path.parent / 'outside')


def test_check_lists_missing_kernels_and_export_refuses_them(warm, tmp_path):
    _, record = warm
    clean = str(tmp_path / 'clean')
    result = dg('warmup', '--check', record, DG_JIT_CACHE_DIR=clean)
    assert result.returncode == 1
    assert f'missing: {KERNEL} (sm_90a)' in result.stdout
    assert entries(clean) == [], 'a check writes nothing'
    result = dg('cache', '--dir', clean, 'export', str(tmp_path / 'x.tgz'), '--from-record', record)
    assert result.returncode == 1 and f'missing: {KERNEL}' in result.stderr
    assert not os.path.exists(tmp_path / 'x.tgz')


def test_compile_mode_error_names_the_kernel_and_the_warmup(tmp_path):
    record = str(tmp_path / 'kernels.jsonl')
    result = run_python(f'''
        import deep_gemm
        try:
            deep_gemm.compile_only('{KERNEL}')
        except RuntimeError as e:
            print('RuntimeError:', e)
    ''', DG_JIT_CACHE_DIR=str(tmp_path / 'c'), DG_JIT_COMPILE='error', DG_JIT_RECORD=record)
    assert result.returncode == 0, result.stderr
    assert 'RuntimeError:' in result.stdout and KERNEL in result.stdout
    assert f'python -m deep_gemm warmup {record}' in result.stdout
    assert KERNEL in open(record).read()


CATCH = '''
import deep_gemm
try:
    deep_gemm.get_settings()
    print('accepted')
except RuntimeError as e:
    print('RuntimeError:', e)
'''


@pytest.mark.parametrize('overrides,name', [
    ({'DG_JIT_CACHE_DIR': b'/tmp/caf\xe9'}, 'DG_JIT_CACHE_DIR'),
    ({'DG_JIT_NVCC_COMPILER': b'/opt/caf\xe9/nvcc'}, 'DG_JIT_NVCC_COMPILER'),
    ({'HOME': b'/home/caf\xe9'}, 'HOME'),
    ({'HOME': None, 'TMPDIR': b'/tmp/caf\xe9'}, 'TMPDIR'),
    ({'DG_JIT_CACHE_DIR': b'\n'}, 'DG_JIT_CACHE_DIR'),
], ids=['cache-dir', 'nvcc', 'home', 'tmpdir', 'newline'])
def test_unusable_path_values_raise_runtime_error_naming_the_variable(tmp_path, overrides, name):
    result = subprocess.run([sys.executable, '-c', CATCH], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env=_bytes_env(overrides))
    assert result.returncode == 0, result.stderr
    assert 'UnicodeDecodeError' not in result.stderr
    assert result.stdout.startswith('RuntimeError:') and name in result.stdout, result.stdout
    assert os.listdir(tmp_path) == [], 'nothing created in the working directory'


def _bytes_env(overrides):
    env = {k.encode(): v.encode() for k, v in os.environ.items() if not k.startswith('DG_')}
    env[b'PYTHONPATH'] = (ROOT + os.pathsep + os.environ.get('PYTHONPATH', '')).encode()
    for name, value in overrides.items():
        if value is None:
            env.pop(name.encode(), None)
        else:
            env[name.encode()] = value
    return env


def test_home_that_is_a_file_is_blamed(tmp_path):
    home = tmp_path / 'home'
    home.write_text('not a directory')
    result = run_python(f'''
        import deep_gemm
        try:
            deep_gemm.compile_only('{KERNEL}')
        except RuntimeError as e:
            print('RuntimeError:', e)
    ''', HOME=str(home), DG_JIT_CACHE_DIR='')
    assert result.returncode == 0, result.stderr
    assert f"HOME='{home}'" in result.stdout, result.stdout
