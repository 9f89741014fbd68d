"""Cache bundles: ``python -m deep_gemm cache export FILE`` / ``cache import FILE`` (docs/cache.md).

A bundle is a tar archive (gzip-compressed) that holds, relative to nothing (it can be unpacked anywhere):

- ``BUNDLE.json``: format, the deep_gemm version, the compiler (kind and version: the toolkit) and the driver
  version of the exporting machine (``null`` on a machine without a GPU), and per entry its directory name,
  kernel name, key, arch, and each file's size and SHA-256; and the cache's tuning table as ``tuning``, rows
  of (GPU model, variable, signature, config, heuristic µs, tuned µs), merged into the importing cache's table;
- ``entries/kernel.<name>.<key>/{manifest,kernel.cubin[,kernel.cu,kernel.ptx,kernel.sass]}``.

Import reads the whole archive and verifies it before installing anything: every member a regular file
with an expected name (no directories, links, devices, absolute or ``..`` paths), no member twice, sizes and
hashes as ``BUNDLE.json`` lists them, nothing listed missing. Each entry is then installed by the JIT core
(``_C.cache_install_entry``): written into a build directory, checked against its own manifest, renamed into
place under the key lock. A verified bundle is still only as trustworthy as whoever made it: the hashes catch
damage, not a bundle built to harm you. Import bundles you made or got from someone you trust.
"""
import hashlib
import io
import json
import os
import re
import tarfile
import time
from typing import Dict, List, Optional

from . import _C
from ._version import __version__ as version

FORMAT = 1
_ENTRY_FILES = ('manifest', 'kernel.cubin', 'kernel.cu', 'kernel.ptx', 'kernel.sass')
_ENTRY_DIR = re.compile(r'kernel\.[A-Za-z0-9_-]{1,64}\.[0-9a-f]{32}')
_MEMBER = re.compile(r'entries/(' + _ENTRY_DIR.pattern + r')/(' + '|'.join(re.escape(f) for f in _ENTRY_FILES) + r')')
_MAX_MEMBER_BYTES = 1 << 30


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
    tmp = f'{path}.tmp.{os.getpid()}'
    try:
        with tarfile.open(tmp, 'w:gz', format=tarfile.PAX_FORMAT) as tar:
            for member, data in [('BUNDLE.json', json.dumps(header, indent=1).encode())] + payload:
                info = tarfile.TarInfo(member)
                info.size, info.mode, info.mtime = len(data), 0o644, now
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {'file': path, 'entries': len(listed), 'skipped': skipped, 'compiler': header['compiler'],
            'tuning': len(header['tuning'])}


def read_bundle(path: str) -> dict:
    """Reads and verifies the bundle at ``path``; returns its header with each entry's ``data`` (file name ->
    bytes). Raises BundleError naming the first problem."""
    members: Dict[str, bytes] = {}
    try:
        with tarfile.open(path, 'r:*') as tar:
            for info in tar:
                name = info.name
                if not info.isreg():
                    raise BundleError(f'{path}: member {name!r} is not a regular file (links, directories and '
                                      'devices are refused)')
                if name != 'BUNDLE.json' and not _MEMBER.fullmatch(name):
                    raise BundleError(f'{path}: unexpected member {name!r}')
                if name in members:
                    raise BundleError(f'{path}: member {name!r} appears twice')
                if info.size > _MAX_MEMBER_BYTES:
                    raise BundleError(f'{path}: member {name!r} is too large ({info.size} bytes)')
                data = tar.extractfile(info).read()
                if len(data) != info.size:
                    raise BundleError(f'{path}: member {name!r} is truncated')
                members[name] = data
    except (tarfile.TarError, EOFError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise BundleError(f'{path}: not a readable bundle ({e})')
    if 'BUNDLE.json' not in members:
        raise BundleError(f'{path}: no BUNDLE.json')
    try:
        header = json.loads(members.pop('BUNDLE.json'))
        if header.get('format') != FORMAT:
            raise BundleError(f"{path}: bundle format {header.get('format')!r}, this deep_gemm reads {FORMAT}")
        entries = header['entries']
        listed = {f"entries/{e['dir']}/{file}": (e, meta) for e in entries for file, meta in e['files'].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, BundleError):
            raise
        raise BundleError(f'{path}: malformed BUNDLE.json ({e})')
    for name in members:
        if name not in listed:
            raise BundleError(f'{path}: member {name!r} is not listed in BUNDLE.json')
    for name, (entry, meta) in listed.items():
        if name not in members:
            raise BundleError(f'{path}: {name!r} is listed in BUNDLE.json but missing')
        data = members[name]
        if len(data) != meta.get('size') or hashlib.sha256(data).hexdigest() != meta.get('sha256'):
            raise BundleError(f'{path}: {name!r} does not match its size and SHA-256 in BUNDLE.json')
        entry.setdefault('data', {})[name.rsplit('/', 1)[1]] = data
    tuning = header.setdefault('tuning', [])  # (bundles of earlier versions have none)
    row_types = (str, str, str, str, (int, float), (int, float))
    if not isinstance(tuning, list) or not all(
            isinstance(row, list) and len(row) == 6 and all(isinstance(v, t) and not isinstance(v, bool)
                                                            for v, t in zip(row, row_types)) for row in tuning):
        raise BundleError(f'{path}: malformed tuning rows in BUNDLE.json')
    for entry in entries:
        manifest = _manifest_fields(entry['data'].get('manifest', b''))
        cubin = entry['data'].get('kernel.cubin')
        if cubin is None or manifest.get('cubin_sha256') != hashlib.sha256(cubin).hexdigest():
            raise BundleError(f"{path}: entry {entry['dir']} has no cubin matching its manifest")
    return header


def import_bundle(root: str, path: str) -> dict:
    """Verifies the bundle at ``path`` completely, then installs its entries into the cache at ``root``."""
    header = read_bundle(path)
    installed, present = [], []
    for entry in header['entries']:
        files = sorted(entry['data'].items())
        (installed if _C.cache_install_entry(root, entry['dir'], files) else present).append(entry['dir'])
    if header['tuning']:
        _C._tuning_table_merge(root, [tuple(row) for row in header['tuning']])
    return {'file': path, 'installed': installed, 'present': present, 'compiler': header.get('compiler'),
            'driver_version': header.get('driver_version'), 'tuning': len(header['tuning'])}
