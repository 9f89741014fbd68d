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


# ---- second pass (docs/cache.md): export's temp file, import's memory, malformed listings, messages ----------

OTHER_UID = 65534  # nobody: the tests run as root in CI and hand files to a second user with chown


def test_export_never_follows_a_planted_temp_name(warm, tmp_path):
    """Another user plants the name the exporter used to write through (FILE.tmp.<pid>) as a symlink to the
    victim's file, in a shared folder without the sticky bit. The export must not write through it."""
    if os.geteuid() != 0:
        pytest.skip('needs root to act as a second user (chown)')
    from deep_gemm._bundle import export_bundle
    cache, _ = warm
    shared, victim = tmp_path / 'shared', tmp_path / 'profile'
    shared.mkdir()
    shared.chmod(0o777)
    victim.write_text('the victim file\n')
    path = shared / 'kernels.tgz'
    planted = shared / f'kernels.tgz.tmp.{os.getpid()}'
    planted.symlink_to(victim)
    os.lchown(planted, OTHER_UID, OTHER_UID)
    export_bundle(cache, str(path))
    assert victim.read_text() == 'the victim file\n'
    assert os.path.islink(planted) and tarfile.is_tarfile(path)
    assert sorted(os.listdir(shared)) == ['kernels.tgz', planted.name], 'no temp file left behind'


def test_export_to_a_missing_folder_names_the_folder(warm, tmp_path):
    cache, _ = warm
    result = dg('cache', '--dir', cache, 'export', str(tmp_path / 'nowhere' / 'kernels.tgz'))
    assert result.returncode == 1
    assert f'the folder {tmp_path / "nowhere"} does not exist' in result.stderr, result.stderr
    assert '.tmp' not in result.stderr and 'Traceback' not in result.stderr


def set_listing(change):
    """A rewrite() step that passes BUNDLE.json's header through `change`."""
    def step(info, data):
        if info.name == 'BUNDLE.json':
            header = json.loads(data)
            change(header)
            data = json.dumps(header).encode()
        return [(info, data)]
    return step


def first_files(header):
    return header['entries'][0]['files']


@pytest.mark.parametrize('change,expect', [
    (lambda h: h['entries'][0].update(files={}), 'does not list its manifest and kernel.cubin'),
    (lambda h: first_files(h).update({'manifest': 'abc'}), "file 'manifest': needs a \"size\""),
    (lambda h: first_files(h)['kernel.cubin'].update(size='12'), "file 'kernel.cubin': needs a \"size\""),
    (lambda h: h.update(entries={'a': 1}), '"entries" is not a list'),
    (lambda h: h['entries'].append(7), 'entry 1 has no valid "dir"'),
    (lambda h: h['entries'][0].update(dir='../x'), 'entry 0 has no valid "dir"'),
], ids=['files-empty', 'file-not-object', 'size-not-int', 'entries-not-list', 'entry-not-object', 'bad-dir'])
def test_malformed_listing_is_a_message_not_a_traceback(bundle, tmp_path, change, expect):
    bad, clean = str(tmp_path / 'bad.tgz'), str(tmp_path / 'clean')
    rewrite(bundle, bad, set_listing(change))
    result = dg('cache', '--dir', clean, 'import', bad)
    assert result.returncode == 1
    assert 'malformed BUNDLE.json' in result.stderr and expect in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr
    assert entries(clean) == []


def test_listing_must_come_first(bundle, tmp_path):
    with tarfile.open(bundle) as tar:
        members = [(info, tar.extractfile(info).read()) for info in tar]
    bad, clean = str(tmp_path / 'bad.tgz'), str(tmp_path / 'clean')
    with tarfile.open(bad, 'w:gz') as out:
        for info, data in members[1:] + members[:1]:  # BUNDLE.json last
            out.addfile(info, io.BytesIO(data))
    result = dg('cache', '--dir', clean, 'import', bad)
    assert result.returncode == 1 and 'not BUNDLE.json' in result.stderr, result.stderr
    assert entries(clean) == []


IMPORT_MEMORY = '''
import hashlib, io, json, os, sys, tarfile
from deep_gemm import _bundle

MB = 1 << 20

class Zeros(io.RawIOBase):
    """`size` zero bytes, made as they are read (the bundle is written without holding its members)."""
    def __init__(self, size):
        self.left = size
    def readable(self):
        return True
    def readinto(self, buffer):
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n

def zeros_sha(size):
    h = hashlib.sha256()
    for _ in range(size // MB):
        h.update(bytes(MB))
    return h.hexdigest()

def write(path, cubin_size, listed_size, header_size=None):
    """One entry whose cubin is `cubin_size` zero bytes; BUNDLE.json claims `listed_size`."""
    key = '0123456789abcdef0123456789abcdef'
    sha = zeros_sha(cubin_size)
    manifest = (f'deep_gemm-jit-manifest 1\\nname big\\nkey {key}\\narch sm_90a\\ncompiler nvcc x\\nflags\\n'
                f'cubin_size {cubin_size}\\ncubin_sha256 {sha}\\nend\\n').encode()
    entry = f'kernel.big.{key}'
    header = {'format': 1, 'entries': [{'dir': entry, 'name': 'big', 'key': key, 'arch': 'sm_90a', 'files': {
        'manifest': {'size': len(manifest), 'sha256': hashlib.sha256(manifest).hexdigest()},
        'kernel.cubin': {'size': listed_size, 'sha256': sha}}}]}
    with tarfile.open(path, 'w:gz', compresslevel=1) as tar:
        for name, size, data in [('BUNDLE.json', None, json.dumps(header).encode()),
                                 (f'entries/{entry}/manifest', None, manifest),
                                 (f'entries/{entry}/kernel.cubin', cubin_size, None)]:
            info = tarfile.TarInfo(name)
            info.size = len(data) if data is not None else size
            tar.addfile(info, io.BytesIO(data) if data is not None else io.BufferedReader(Zeros(size)))

def rss(field):
    for line in open('/proc/self/status'):
        if line.startswith(field + ':'):
            return int(line.split()[1]) * 1024

cases = {'huge-claimed': (200 * MB, 200 * MB), 'size-lie': (200 * MB, 20 * MB), 'legit-30M': (30 * MB, 30 * MB)}
base = sys.argv[1]
for case, (size, listed) in cases.items():
    write(os.path.join(base, case + '.tgz'), size, listed)
for case in cases:
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # resets the peak RSS (VmHWM)
    before = rss('VmRSS')
    try:
        report = _bundle.import_bundle(os.path.join(base, 'cache'), os.path.join(base, case + '.tgz'))
        outcome = 'installed %d' % len(report['installed'])
    except _bundle.BundleError as e:
        outcome = 'refused: ' + str(e)
    print(json.dumps({'case': case, 'mb': (rss('VmHWM') - before) / MB, 'outcome': outcome}))
'''


def test_import_memory_stays_bounded_whatever_the_members_claim(tmp_path):
    """A member of 200 MB (zeros, a few hundred KB compressed) listed as such, one that lies about its size,
    and a legitimate 30 MB cubin: the import's peak RSS stays under 64 MB above what it was before."""
    if not os.access('/proc/self/clear_refs', os.W_OK):
        pytest.skip('needs /proc/self/clear_refs to reset the peak RSS')
    result = subprocess.run([sys.executable, '-c', IMPORT_MEMORY, str(tmp_path)], capture_output=True, text=True,
                            timeout=300, env={**os.environ, 'PYTHONPATH': ROOT})
    assert result.returncode == 0, result.stderr
    rows = {row['case']: row for row in map(json.loads, result.stdout.splitlines())}
    print(rows)
    assert all(row['mb'] < 64 for row in rows.values()), rows
    assert rows['huge-claimed']['outcome'].startswith('refused') and 'needs a "size"' in rows['huge-claimed']['outcome']
    assert rows['size-lie']['outcome'].startswith('refused') and 'BUNDLE.json says' in rows['size-lie']['outcome']
    assert rows['legit-30M']['outcome'] == 'installed 1', rows


def test_warmup_under_compile_mode_error_says_to_run_it_without(warm, tmp_path):
    _, record = warm
    result = dg('warmup', record, DG_JIT_CACHE_DIR=str(tmp_path / 'cold'), DG_JIT_COMPILE='error')
    assert result.returncode != 0
    assert 'without DG_JIT_COMPILE=error' in result.stdout + result.stderr, result.stdout + result.stderr
