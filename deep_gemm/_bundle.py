"""Cache bundles: ``python -m deep_gemm cache export FILE`` / ``cache import FILE`` (docs/cache.md).

A bundle is a tar archive (gzip-compressed) that holds, relative to nothing (it can be unpacked anywhere):

- ``BUNDLE.json``: format, the deep_gemm version, the compiler (kind and version: the toolkit) and the driver
  version of the exporting machine (``null`` on a machine without a GPU), and per entry its directory name,
  kernel name, key, arch, and each file's size and SHA-256; and the cache's tuning table as ``tuning``, rows
  of (GPU model, variable, signature, config, heuristic µs, tuned µs), merged into the importing cache's table;
- ``entries/kernel.<name>.<key>/{manifest,kernel.cubin[,kernel.cu,kernel.ptx,kernel.sass]}``.

Import reads the whole archive and verifies it before installing anything: ``BUNDLE.json`` first, then every
member a regular file with an expected name (no directories, links, devices, absolute or ``..`` paths), listed
there, no member twice, its size checked before it is read and its hash while it is copied into a private
staging folder, nothing listed missing. Each entry is then installed by the JIT core
(``_C.cache_install_entry``, one file in memory at a time): written into a build directory, checked against
its own manifest, renamed into place under the key lock. A verified bundle is still only as trustworthy as whoever made it: the hashes catch
damage, not a bundle built to harm you. Import bundles you made or got from someone you trust.
"""
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import time
import zlib
from typing import Dict, List, Optional

from . import _C
from ._version import __version__ as version

FORMAT = 1
_ENTRY_FILES = ('manifest', 'kernel.cubin', 'kernel.cu', 'kernel.ptx', 'kernel.sass')
_ENTRY_DIR = re.compile(r'kernel\.[A-Za-z0-9_-]{1,64}\.[0-9a-f]{32}')
_MEMBER = re.compile(r'entries/(' + _ENTRY_DIR.pattern + r')/(' + '|'.join(re.escape(f) for f in _ENTRY_FILES) + r')')
# Import reads BUNDLE.json whole (its parsed form takes several times its size) and every other member in
# chunks; installing holds one file at a time. Members are cubins and their dumps, far below the cap: the
# caps keep an import under 64 MB of memory whatever a bundle holds.
_MAX_LISTING_BYTES = 2 << 20
_MAX_MEMBER_BYTES = 32 << 20
_CHUNK = 1 << 20


class BundleError(ValueError):
    """A bundle that is malformed, damaged or tampered with."""


def _manifest_fields(text: bytes) -> Dict[str, str]:
    fields = {}
    for line in text.decode('utf-8', 'replace').splitlines():
        key, _, value = line.partition(' ')
        fields[key] = value
    return fields


def _driver_version() -> Optional[str]:
    try:
        import torch
        if torch.cuda.is_available():
            return str(torch._C._cuda_getDriverVersion())
    except Exception:
        pass
    return None


def _create_exclusive(path: str):
    """A new temporary file beside ``path`` (same folder, so the final rename is atomic), created with O_EXCL
    under a random name: a name planted in a shared folder (a symlink to a victim's file) is never followed.
    Returns (open binary file, its path)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OSError(f'cannot write the bundle {path}: the folder {folder} does not exist')
    try:
        fd, tmp = tempfile.mkstemp(prefix=f'.{os.path.basename(path)}.', suffix='.tmp', dir=folder)
    except OSError as e:
        raise OSError(f'cannot write the bundle {path}: {e.strerror} (creating a file in {folder})') from None
    return os.fdopen(fd, 'wb'), tmp


def export_bundle(root: str, path: str, dirs: Optional[List[str]] = None) -> dict:
    """Writes the entries of the cache at ``root`` (all, or the entry directories ``dirs``) to ``path``
    (atomically: a temporary file renamed). Entries whose cubin does not match their manifest are left out
    and listed in the result's ``skipped``."""
    entries = [e['path'] for e in _C.cache_list(root)] if dirs is None else list(dirs)
    compiler = _C.compiler_info()
    listed, skipped, payload = [], [], []
    for entry in sorted(set(entries)):
        name = os.path.basename(entry)
        files = {}
        for file in _ENTRY_FILES:
            full = os.path.join(entry, file)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, 'rb') as f:
                    files[file] = f.read()
        manifest = _manifest_fields(files.get('manifest', b''))
        cubin = files.get('kernel.cubin')
        if (not _ENTRY_DIR.fullmatch(name) or cubin is None or
                manifest.get('cubin_sha256') != hashlib.sha256(cubin).hexdigest()):
            skipped.append(entry)
            continue
        listed.append({'dir': name, 'name': manifest.get('name'), 'key': manifest.get('key'),
                       'arch': manifest.get('arch'), 'compiler': manifest.get('compiler'),
                       'files': {file: {'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
                                 for file, data in files.items()}})
        payload += [(f'entries/{name}/{file}', data) for file, data in files.items()]
    now = int(time.time())
    header = {'format': FORMAT, 'deep_gemm_version': version, 'created': now,
              'compiler': {'kind': compiler.get('kind'), 'version': compiler.get('version')},
              'driver_version': _driver_version(), 'entries': listed,
              'tuning': [list(row) for row in _C._tuning_table(root)]}
    listing = json.dumps(header, indent=1).encode()
    if len(listing) > _MAX_LISTING_BYTES:
        raise BundleError(f'{path}: {len(listed)} entries are more than one bundle holds; export fewer '
                          '(--from-record) into several bundles')
    out, tmp = _create_exclusive(path)
    try:
        with out, tarfile.open(fileobj=out, mode='w:gz', format=tarfile.PAX_FORMAT) as tar:
            for member, data in [('BUNDLE.json', listing)] + payload:  # BUNDLE.json first: import reads it first
                info = tarfile.TarInfo(member)
                info.size, info.mode, info.mtime = len(data), 0o644, now
                tar.addfile(info, io.BytesIO(data))
        os.chmod(tmp, 0o644)  # as before: mkstemp makes it 0600
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return {'file': path, 'entries': len(listed), 'skipped': skipped, 'compiler': header['compiler'],
            'tuning': len(header['tuning'])}


def _listing(path: str, text: bytes) -> Dict[str, tuple]:
    """Checks the shape of ``BUNDLE.json`` and returns its header and {member name: (entry, size, sha256)}.
    Every malformed field raises BundleError saying which."""
    def bad(what):
        return BundleError(f'{path}: malformed BUNDLE.json: {what}')
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise bad(f'not JSON ({e})')
    if not isinstance(header, dict):
        raise bad('not an object')
    if header.get('format') != FORMAT:
        raise BundleError(f"{path}: bundle format {header.get('format')!r}, this deep_gemm reads {FORMAT}")
    entries = header.get('entries')
    if not isinstance(entries, list):
        raise bad('"entries" is not a list')
    listed = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get('dir'), str) or not _ENTRY_DIR.fullmatch(entry['dir']):
            raise bad(f'entry {i} has no valid "dir" (kernel.<name>.<key>)')
        files = entry.get('files')
        if not isinstance(files, dict) or 'manifest' not in files or 'kernel.cubin' not in files:
            raise bad(f'entry {entry["dir"]} does not list its manifest and kernel.cubin in "files"')
        for file, meta in files.items():
            if file not in _ENTRY_FILES:
                raise bad(f'entry {entry["dir"]} lists an unexpected file {file!r}')
            if (not isinstance(meta, dict) or type(meta.get('size')) is not int or not 0 <= meta['size'] <= _MAX_MEMBER_BYTES
                    or not isinstance(meta.get('sha256'), str) or not re.fullmatch(r'[0-9a-f]{64}', meta['sha256'])):
                raise bad(f'entry {entry["dir"]}, file {file!r}: needs a "size" (at most {_MAX_MEMBER_BYTES} bytes) '
                          'and a "sha256"')
            name = f'entries/{entry["dir"]}/{file}'
            if name in listed:
                raise bad(f'{name} is listed twice')
            listed[name] = (entry, meta['size'], meta['sha256'])
    return header, listed


def _stage_member(path: str, name: str, source, size: int, sha256: str, target: str) -> None:
    """Copies one member into ``target`` in chunks, hashing as it goes; raises BundleError unless its size
    and SHA-256 are those listed."""
    digest, done = hashlib.sha256(), 0
    with open(target, 'xb') as out:
        while chunk := source.read(min(_CHUNK, size - done + 1)):
            done += len(chunk)
            if done > size:
                break
            digest.update(chunk)
            out.write(chunk)
    if done != size or digest.hexdigest() != sha256:
        raise BundleError(f'{path}: {name!r} does not match its size and SHA-256 in BUNDLE.json')


def read_bundle(path: str, staging: str) -> dict:
    """Reads and verifies the bundle at ``path``, copying each member into the folder ``staging``; returns the
    header of ``BUNDLE.json`` with each entry's ``files`` ({file name: staged path}). Memory stays bounded
    whatever the bundle holds or claims: ``BUNDLE.json`` comes first and is small, every other member is
    checked against it (name, size) before it is read, and read in chunks. Raises BundleError naming the
    first problem."""
    header, listed, staged = None, None, {}
    try:
        with tarfile.open(path, 'r:*') as tar:
            for info in tar:
                name = info.name
                if not info.isreg():
                    raise BundleError(f'{path}: member {name!r} is not a regular file (links, directories and '
                                      'devices are refused)')
                if listed is None:
                    if name != 'BUNDLE.json':
                        raise BundleError(f'{path}: the first member is {name!r}, not BUNDLE.json')
                    if info.size > _MAX_LISTING_BYTES:
                        raise BundleError(f'{path}: BUNDLE.json is too large ({info.size} bytes)')
                    header, listed = _listing(path, tar.extractfile(info).read(_MAX_LISTING_BYTES))
                    continue
                if name != 'BUNDLE.json' and not _MEMBER.fullmatch(name):
                    raise BundleError(f'{path}: unexpected member {name!r}')
                if name in staged or name == 'BUNDLE.json':
                    raise BundleError(f'{path}: member {name!r} appears twice')
                if name not in listed:
                    raise BundleError(f'{path}: member {name!r} is not listed in BUNDLE.json')
                _, size, sha256 = listed[name]
                if info.size != size:
                    raise BundleError(f'{path}: {name!r} has {info.size} bytes, BUNDLE.json says {size}')
                staged[name] = os.path.join(staging, str(len(staged)))
                _stage_member(path, name, tar.extractfile(info), size, sha256, staged[name])
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        if isinstance(e, FileNotFoundError) and e.filename == path:
            raise
        raise BundleError(f'{path}: not a readable bundle ({e})')
    if listed is None:
        raise BundleError(f'{path}: no BUNDLE.json')
    for name, (entry, _, _) in listed.items():
        if name not in staged:
            raise BundleError(f'{path}: {name!r} is listed in BUNDLE.json but missing')
        entry.setdefault('staged', {})[name.rsplit('/', 1)[1]] = staged[name]
    tuning = header.setdefault('tuning', [])  # (bundles of earlier versions have none)
    row_types = (str, str, str, str, (int, float), (int, float))
    if not isinstance(tuning, list) or not all(
            isinstance(row, list) and len(row) == 6 and all(isinstance(v, t) and not isinstance(v, bool)
                                                            for v, t in zip(row, row_types)) for row in tuning):
        raise BundleError(f'{path}: malformed tuning rows in BUNDLE.json')
    for entry in header['entries']:
        with open(entry['staged']['manifest'], 'rb') as f:
            manifest = _manifest_fields(f.read())
        if manifest.get('cubin_sha256') != entry['files']['kernel.cubin']['sha256']:
            raise BundleError(f"{path}: entry {entry['dir']} has no cubin matching its manifest")
    return header


def import_bundle(root: str, path: str) -> dict:
    """Verifies the bundle at ``path`` completely, then installs its entries into the cache at ``root``."""
    installed, present = [], []
    with tempfile.TemporaryDirectory(prefix='deep_gemm-import-') as staging:
        header = read_bundle(path, staging)
        for entry in header['entries']:
            files = sorted(entry['staged'].items())
            (installed if _C.cache_install_entry(root, entry['dir'], files) else present).append(entry['dir'])
        if header['tuning']:
            _C._tuning_table_merge(root, [tuple(row) for row in header['tuning']])
    return {'file': path, 'installed': installed, 'present': present, 'compiler': header.get('compiler'),
            'driver_version': header.get('driver_version'), 'tuning': len(header['tuning'])}
