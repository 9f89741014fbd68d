"""Build script for deep_gemm.

`pip install --no-build-isolation .` (or `-e .`) compiles the host-side extension `deep_gemm._C` against
the installed PyTorch. No CUDA code is compiled here: kernels are JIT-compiled at run time from the
headers under deep_gemm/include, which ship as package data.

Build-time environment:
  CUDA_HOME / CUDA_PATH       CUDA toolkit root (default /usr/local/cuda); only its headers are needed
  DG_JIT_USE_RUNTIME_API=1    load kernels through the CUDA Runtime API (links libcudart) instead of
                              the dlopen'ed Driver API
  DG_ALLOW_UNTESTED_TORCH=1   build against a torch outside TORCH_TESTED (pinning that torch)

Each build records the torch it was built against and a digest of its sources in deep_gemm/_build_info.py
(deep_gemm/_build_stamp.py): `import deep_gemm` under another torch stops with one clear line, and
scripts/run_tests.sh skips a rebuild when nothing changed.
"""
import glob
import importlib.util
import os
import re
import shutil
import sys

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_build_stamp():
    """deep_gemm/_build_stamp.py, loaded by path (importing the package would need the extension)."""
    spec = importlib.util.spec_from_file_location('_dg_build_stamp', os.path.join(ROOT, 'deep_gemm', '_build_stamp.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _BuildExtension(BuildExtension.with_options(use_ninja=True)):
    """Builds _C, then records the torch it was built against (checked by `import deep_gemm`)."""

    def run(self):
        import torch
        stamp = _load_build_stamp()
        digest = stamp.sources_digest(ROOT)  # the sources as they are compiled
        super().run()
        stamp.write_record(ROOT, torch.__version__, digest)
        target = os.path.join(self.build_lib, 'deep_gemm')
        if not self.inplace and os.path.isdir(target):  # a wheel: the record goes into it with _C
            shutil.copy(os.path.join(ROOT, 'deep_gemm', stamp.RECORD_NAME), target)


def _read_version() -> str:
    with open(os.path.join(ROOT, 'deep_gemm', '_version.py')) as f:
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read())
    assert match, 'deep_gemm/_version.py must define __version__'
    return match.group(1)


def _cuda_home() -> str:
    for var in ('CUDA_HOME', 'CUDA_PATH'):
        path = os.environ.get(var)
        if path and os.path.isfile(os.path.join(path, 'include', 'cuda.h')):
            return path
    for path in ('/usr/local/cuda',):
        if os.path.isfile(os.path.join(path, 'include', 'cuda.h')):
            return path
    sys.exit('deep_gemm: cannot find the CUDA toolkit headers (cuda.h); set CUDA_HOME to the toolkit root')


def _env_flag(name: str) -> bool:
    value = os.environ.get(name, '0').strip().lower()
    if value in ('1', 'true', 'yes', 'on'):
        return True
    if value in ('', '0', 'false', 'no', 'off'):
        return False
    sys.exit(f'deep_gemm: {name}={value!r} is not a boolean; use 0 or 1')


def _cudart_link_args(cuda_home: str):
    """Where to find libcudart for DG_JIT_USE_RUNTIME_API=1: the toolkit, else torch's nvidia wheel."""
    candidates = [os.path.join(cuda_home, 'lib64'), os.path.join(cuda_home, 'lib')]
    try:
        import nvidia  # the pip CUDA runtime wheels (nvidia-cuda-runtime)
        for base in nvidia.__path__:
            candidates += glob.glob(os.path.join(base, '*', 'lib')) + glob.glob(os.path.join(base, 'cuda_runtime', 'lib'))
    except ImportError:
        pass
    for lib_dir in candidates:
        if os.path.exists(os.path.join(lib_dir, 'libcudart.so')):
            return [f'-L{lib_dir}', '-lcudart', f'-Wl,-rpath,{lib_dir}']
        versioned = sorted(glob.glob(os.path.join(lib_dir, 'libcudart.so.[0-9]*')))
        if versioned:
            name = os.path.basename(versioned[-1])
            return [f'-L{lib_dir}', f'-l:{name}', f'-Wl,-rpath,{lib_dir}']
    sys.exit('deep_gemm: DG_JIT_USE_RUNTIME_API=1 needs libcudart (CUDA toolkit lib64 or the nvidia-cuda-runtime wheel)')


def _sources():
    patterns = ['csrc/jit/*.cpp', 'csrc/jit_kernels/**/*.cpp', 'csrc/apis/*.cpp', 'csrc/python/*.cpp', 'csrc/python_api.cpp']
    files = []
    for pattern in patterns:
        files += sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return [os.path.relpath(f, ROOT) for f in files]


def _extension():
    cuda_home = _cuda_home()
    use_runtime_api = _env_flag('DG_JIT_USE_RUNTIME_API')
    cxx_flags = ['-std=c++20', '-O3', '-g0', '-fvisibility=hidden', '-Wno-deprecated-declarations',
                 '-Wno-unused-function', '-DFMT_HEADER_ONLY']
    link_args = ['-ldl']
    define_macros = [('DG_VERSION', f'"{_read_version()}"')]
    if use_runtime_api:
        define_macros.append(('DG_JIT_USE_RUNTIME_API', '1'))
        link_args += _cudart_link_args(cuda_home)
    return CppExtension(
        name='deep_gemm._C',
        sources=_sources(),
        include_dirs=[os.path.join(ROOT, 'csrc'), os.path.join(cuda_home, 'include')],
        define_macros=define_macros,
        libraries=['c10_cuda'],  # current CUDA stream / device guard (ships with every CUDA torch wheel)
        extra_compile_args={'cxx': cxx_flags},
        extra_link_args=link_args,
    )


# The torch releases the extension is built and tested against (CI: the requirements-dev.txt pin, the newest).
TORCH_TESTED = ((2, 11), (2, 15))


def _torch_requirement() -> str:
    """Refuses to build against an untested torch (DG_ALLOW_UNTESTED_TORCH=1 builds anyway), and pins the
    range so pip does not swap the torch the extension was just compiled against for another one."""
    import torch
    version = tuple(int(p) for p in re.findall(r'\d+', torch.__version__)[:2])
    (lo_major, lo_minor), (hi_major, hi_minor) = TORCH_TESTED
    supported = f'torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}'
    if TORCH_TESTED[0] <= version <= TORCH_TESTED[1]:
        return supported
    if _env_flag('DG_ALLOW_UNTESTED_TORCH'):
        return f'torch=={torch.__version__.split("+")[0]}'
    sys.exit(f'deep_gemm: supports {supported} (tested: {lo_major}.{lo_minor} and {hi_major}.{hi_minor}); the '
             f'installed torch is {torch.__version__}. Install a supported torch first, or build anyway with '
             f'DG_ALLOW_UNTESTED_TORCH=1')


setup(
    name='deep_gemm',
    version=_read_version(),
    description='JIT-compiled FP8/BF16 GEMM kernels for NVIDIA Hopper (sm_90a), DeepGEMM-compatible API',
    packages=find_packages(include=['deep_gemm', 'deep_gemm.*'])
             + find_packages(include=['third_party', 'third_party.*']),  # tilelang_ops import path
    package_data={
        'deep_gemm': ['include/**/*.cuh', 'include/**/*.h', 'include/**/*.hpp', '_C.pyi', 'py.typed', 'presets/*.json'],
    },
    include_package_data=True,
    ext_modules=[_extension()],
    cmdclass={'build_ext': _BuildExtension},
    python_requires='>=3.10',  # torch 2.11 needs 3.10
    install_requires=[_torch_requirement(), 'tqdm'],  # built against the torch already installed (README)
    zip_safe=False,
)
