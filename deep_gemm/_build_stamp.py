"""What the extension ``deep_gemm._C`` was built from: the torch it was compiled against, and a digest of the
sources that went into it. setup.py writes the record (``deep_gemm/_build_info.py``, not in git) at every build.

``import deep_gemm`` checks the record before it loads ``_C``: an extension built for another torch fails to load
with an undefined C++ symbol that does not say why; the check says which torch it was built for, which one is
running, and how to rebuild. ``scripts/run_tests.sh`` runs this file (``--up-to-date``) to skip rebuilding an
extension whose sources and torch have not changed.

Torch-free and free of package imports, so that setup.py and the test script can load it by path.
"""
import glob
import hashlib
import os
import sys

RECORD_NAME = '_build_info.py'
# The inputs of the extension's build besides torch: the C++ sources and the build script.
_SOURCE_PATTERNS = ('setup.py', 'csrc/**/*.cpp', 'csrc/**/*.hpp', 'csrc/**/*.h')
_BUILD_ENV = ('DG_JIT_USE_RUNTIME_API',)


def sources_digest(root: str) -> str:
    """SHA-256 over the extension's source files (paths and contents) and the build-time settings."""
    h = hashlib.sha256()
    files = sorted({os.path.relpath(f, root) for p in _SOURCE_PATTERNS
                    for f in glob.glob(os.path.join(root, p), recursive=True)})
    for rel in files:
        h.update(rel.encode() + b'\0')
        with open(os.path.join(root, rel), 'rb') as f:
            h.update(f.read() + b'\0')
    for name in _BUILD_ENV:
        h.update(f'{name}={os.environ.get(name, "")}\0'.encode())
    return h.hexdigest()


def write_record(root: str, torch_version: str, digest: str) -> None:
    """Called by setup.py: records the torch and the sources (`digest`, taken before compiling) of this build."""
    text = (f'# Written by setup.py at build time (deep_gemm/_build_stamp.py); not in git.\n'
            f'TORCH_VERSION = {torch_version!r}\n'
            f'SOURCES_DIGEST = {digest!r}\n'
            f'SOURCE_ROOT = {root!r}\n')
    with open(os.path.join(root, 'deep_gemm', RECORD_NAME), 'w') as f:
        f.write(text)


def read_record(package_dir: str) -> dict:
    """The record's values, or {} when there is none (a tree that was never built)."""
    path = os.path.join(package_dir, RECORD_NAME)
    if not os.path.isfile(path):
        return {}
    values = {}
    with open(path) as f:
        exec(f.read(), {}, values)  # our own generated file: three assignments
    return values


def rebuild_command(source_root: str) -> str:
    return (f'cd {source_root} && CXX=/usr/bin/g++ pip install --no-build-isolation '
            f'--config-settings editable_mode=compat -e .')


def check_torch(record: dict, running: str) -> None:
    """Raises ImportError when the extension was built against a torch other than the running one."""
    built = record.get('TORCH_VERSION')
    if built is not None and built != running:
        raise ImportError(f'deep_gemm was built for torch {built}, but torch {running} is running; rebuild it against '
                          f'this torch: {rebuild_command(record.get("SOURCE_ROOT", "<the deep_gemm clone>"))}')


def up_to_date(root: str, running_torch: str) -> str:
    """Why the in-place extension of `root` must be rebuilt, or '' when it is up to date."""
    record = read_record(os.path.join(root, 'deep_gemm'))
    if not record:
        return 'never built here'
    if not glob.glob(os.path.join(root, 'deep_gemm', '_C*.so')):
        return 'no deep_gemm/_C*.so'
    if record.get('TORCH_VERSION') != running_torch:
        return f'built for torch {record.get("TORCH_VERSION")}, running {running_torch}'
    if record.get('SOURCES_DIGEST') != sources_digest(root):
        return 'sources changed'
    return ''


if __name__ == '__main__':
    # python3 deep_gemm/_build_stamp.py --up-to-date: exit 0 when the in-place build is current, else 1 and why.
    if sys.argv[1:] != ['--up-to-date']:
        sys.exit('usage: python3 deep_gemm/_build_stamp.py --up-to-date')
    import torch
    reason = up_to_date(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), torch.__version__)
    print(reason or 'up to date')
    sys.exit(1 if reason else 0)
