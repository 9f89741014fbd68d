"""Triton's on-disk cache for the legacy kernels, and the ``DG_JIT_DEBUG`` log of their compiles.

Triton keeps its own cache (default ``~/.triton/cache``). The legacy kernels put theirs next to the other
deep_gemm kernels, in ``$DG_JIT_CACHE_DIR/triton`` (the same default root as the C++ JIT:
``$HOME/.deep_gemm``), unless ``TRITON_CACHE_DIR`` is set, which then wins. The directory is chosen per
launch of a legacy kernel (:func:`launch_scope`), so it is in place before Triton compiles anything for
them, and other Triton kernels of the process keep Triton's own setting. That directory is checked as the
C++ JIT checks its cache (:func:`checked_cache_dir`); under ``DG_JIT_COMPILE=error`` a kernel missing from
Triton's cache raises instead of compiling (:func:`_no_compile_manager_class`).

With ``DG_JIT_DEBUG`` set, every compile Triton does for a legacy kernel (the first use of each kernel,
config and argument specialisation; the autotuner compiles each candidate config) is logged at DEBUG
level on the ``deep_gemm`` logger: kernel, config, compile time, and whether Triton's disk cache had it.
Nothing here imports Triton at module import.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os

LOG = logging.getLogger("deep_gemm")

_FALSE_VALUES = ("", "0", "false", "no", "off")


def debug_enabled(environ=os.environ) -> bool:
    return environ.get("DG_JIT_DEBUG", "").strip().lower() not in _FALSE_VALUES


def deep_gemm_cache_root(environ=os.environ) -> str:
    """The C++ JIT's cache root: ``$DG_JIT_CACHE_DIR``, else ``$HOME/.deep_gemm``, else a per-user
    directory under ``$TMPDIR`` (or ``/tmp``)."""
    path = environ.get("DG_JIT_CACHE_DIR", "")
    if path:
        return os.path.normpath(os.path.abspath(path))
    home = environ.get("HOME", "")
    if home:
        return os.path.join(home, ".deep_gemm")
    # As the C++ JIT (csrc/jit/settings.cpp): an absolute TMPDIR, else /tmp (a relative one is ignored).
    tmp = environ.get("TMPDIR", "")
    return os.path.join(tmp if tmp.startswith("/") else "/tmp", f"deep_gemm-{os.getuid()}")


def legacy_cache_dir(environ=os.environ):
    """The directory to put Triton's cache in for a legacy launch, or None to leave Triton's choice
    (``TRITON_CACHE_DIR`` is set: the user decides)."""
    if environ.get("TRITON_CACHE_DIR", ""):
        return None
    return os.path.join(deep_gemm_cache_root(environ), "triton")


def _config_text(metadata: dict, constants: dict) -> str:
    """``BLOCK_M=128 BLOCK_N=256 ... num_warps=8 num_stages=3`` from Triton's compile metadata."""
    parts = [f"{k}={v}" for k, v in sorted(constants.items()) if k.isupper()]
    parts += [f"{k}={metadata[k]}" for k in ("num_warps", "num_stages") if k in metadata]
    return " ".join(parts)


def log_compile(*, src, metadata, metadata_group=None, times=None, cache_hit: bool) -> None:
    """A Triton compilation listener (``triton.knobs.compilation.listener``): one DEBUG record per compile."""
    name = getattr(src, "name", None) or getattr(getattr(src, "fn", None), "__name__", "?")
    constants = {}
    for key, value in (getattr(src, "constants", None) or {}).items():
        # Triton keys constexprs by argument path tuples; name them through the kernel's argument list.
        if isinstance(key, tuple) and len(key) == 1:
            arg_names = getattr(getattr(src, "fn", None), "arg_names", None) or []
            key = arg_names[key[0]] if key[0] < len(arg_names) else key[0]
        constants[str(key)] = value
    total_us = getattr(times, "total", None) if times is not None else None
    seconds = f"{total_us / 1e6:.3f} s" if isinstance(total_us, (int, float)) else "?"
    LOG.debug("legacy Triton kernel %s [%s]: %s in %s", name, _config_text(metadata or {}, constants),
              "loaded from Triton's cache (hit)" if cache_hit else "compiled (cache miss)", seconds)


# Directories already checked by this process. Once one passed, nobody else can swap it or change its owner or mode
# (its ancestors passed the same rules), so each launch need not pay the checks again (~12 µs of system calls).
_checked_dirs: dict = {}


def checked_cache_dir(directory: str) -> str:
    """``directory`` (``<root>/triton``), created if absent and checked as the C++ JIT checks its own cache
    directories (owner, mode, no symlink, the root's ancestors; docs/cache.md), once per process: Triton loads
    whatever its cache holds, so a directory someone else could write is refused with ``RuntimeError``."""
    checked = _checked_dirs.get(directory)
    if checked is None:
        _C = importlib.import_module("deep_gemm._C")  # not at module import: see the module docstring
        checked = _checked_dirs[directory] = _C.cache_prepare_dir(os.path.dirname(directory),
                                                                 os.path.basename(directory))
    return checked


def _no_compile_manager_class(base):
    """A Triton cache manager for ``DG_JIT_COMPILE=error``: a kernel that Triton's cache lacks raises instead of
    being compiled. ``triton.compile`` looks its metadata (``<kernel>.json``) up first; a miss there is the
    compile."""
    class NoCompileCacheManager(base):
        def __init__(self, key, override=False, dump=False):
            super().__init__(key, override=override, dump=dump)
            self._gated = not override and not dump

        def get_group(self, filename):
            group = super().get_group(filename)
            if group is None and self._gated and filename.endswith(".json"):
                raise RuntimeError(
                    f"DG_JIT_COMPILE=error: legacy Triton kernel {filename[:-5]} is not in Triton's cache "
                    f"{self.cache_dir}; run the job's legacy ops once without DG_JIT_COMPILE=error on a machine of "
                    "the same GPU model to fill it (docs/legacy.md)")
            return group
    return NoCompileCacheManager


@contextlib.contextmanager
def launch_scope(debug: bool, environ=os.environ):
    """Around one launch of a legacy kernel: Triton's cache directory set to :func:`legacy_cache_dir`
    (unless ``TRITON_CACHE_DIR`` is set), and with ``debug`` a compilation listener that logs each
    compile, chained to any listener already installed. Both are restored afterwards.

    The directory is set on Triton's knob object directly (not through its setter, which would also
    export ``TRITON_CACHE_DIR`` to the environment of the whole process)."""
    import triton

    cache_knobs = triton.knobs.cache
    compilation = triton.knobs.compilation
    directory = legacy_cache_dir(environ)
    if directory is not None:
        directory = checked_cache_dir(directory)
    no_compile = importlib.import_module("deep_gemm._C").get_settings()["compile_mode"] == "error"
    missing = object()
    saved_dir = cache_knobs.__dict__.get("dir", missing)
    saved_manager = cache_knobs.__dict__.get("manager_class", missing)
    saved_listener = compilation.listener
    if directory is not None:
        cache_knobs.__dict__["dir"] = directory
    if no_compile:
        from triton.runtime.cache import FileCacheManager
        cache_knobs.__dict__["manager_class"] = _no_compile_manager_class(cache_knobs.manager_class or FileCacheManager)
    if debug:
        def listener(**kwargs):
            log_compile(**kwargs)
            if saved_listener is not None:
                saved_listener(**kwargs)
        compilation.listener = listener
    try:
        yield directory
    finally:
        for name, saved, changed in (("dir", saved_dir, directory is not None),
                                     ("manager_class", saved_manager, no_compile)):
            if not changed:
                continue
            if saved is missing:
                cache_knobs.__dict__.pop(name, None)
            else:
                cache_knobs.__dict__[name] = saved
        if debug:
            compilation.listener = saved_listener
