"""What setup.py asks of the build, checked without building: package metadata, and the
DG_JIT_USE_RUNTIME_API=1 variant's macro and libcudart link arguments (the link arguments are proven by linking
a small program that calls the Runtime API with them). The Runtime-API loader itself is compiled in CI by
CMake (target dg_jit_runtime_api); generated sources are checked against their generators."""
import os
import runpy
import shutil
import subprocess
import sys

import pytest
import setuptools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def setup_kwargs(monkeypatch, **env):
    """The keyword arguments setup.py passes to setuptools.setup (nothing is built)."""
    captured = {}
    monkeypatch.setattr(setuptools, 'setup', lambda **kwargs: captured.update(kwargs))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)
    runpy.run_path(os.path.join(ROOT, 'setup.py'), run_name='setup')
    return captured


def test_package_metadata(monkeypatch):
    kwargs = setup_kwargs(monkeypatch, DG_JIT_USE_RUNTIME_API='0')
    assert kwargs['python_requires'] == '>=3.10'
    assert kwargs['install_requires'] == ['torch>=2.11,<2.16', 'tqdm']  # the torch range CI tests at both ends
    assert {'deep_gemm', 'deep_gemm.cli', 'deep_gemm.testing', 'deep_gemm.utils'} <= set(kwargs['packages'])
    (ext,) = kwargs['ext_modules']
    assert ('DG_JIT_USE_RUNTIME_API', '1') not in ext.define_macros
    assert not any('cudart' in arg for arg in ext.extra_link_args)


@pytest.mark.parametrize('version, allowed', [('2.11.0+cu130', True), ('2.15.0+cu132', True), ('2.13.1', True),
                                              ('2.10.1', False), ('2.16.0', False), ('3.0.0', False)])
def test_build_refuses_an_untested_torch(monkeypatch, version, allowed):
    import torch
    monkeypatch.setattr(torch, '__version__', version)
    if allowed:
        assert setup_kwargs(monkeypatch)['install_requires'][0] == 'torch>=2.11,<2.16'
        return
    with pytest.raises(SystemExit, match=r'supports torch>=2.11,<2.16 .*DG_ALLOW_UNTESTED_TORCH=1'):
        setup_kwargs(monkeypatch)
    # The override builds, and pins the installed torch so that pip keeps the one the extension was built for.
    kwargs = setup_kwargs(monkeypatch, DG_ALLOW_UNTESTED_TORCH='1')
    assert kwargs['install_requires'][0] == f"torch=={version.split('+')[0]}"


def test_runtime_api_build_defines_the_macro_and_links_cudart(monkeypatch, tmp_path):
    kwargs = setup_kwargs(monkeypatch, DG_JIT_USE_RUNTIME_API='1')
    (ext,) = kwargs['ext_modules']
    assert ('DG_JIT_USE_RUNTIME_API', '1') in ext.define_macros
    link_args = [arg for arg in ext.extra_link_args if arg != '-ldl']
    assert any(arg.startswith('-l') and 'cudart' in arg for arg in link_args), link_args
    compiler = shutil.which(os.environ.get('CXX', 'g++')) or shutil.which('g++')
    if compiler is None:
        pytest.skip('no C++ compiler')
    source = tmp_path / 'probe.cpp'
    source.write_text('#include <cuda_runtime_api.h>\n'
                      'int main() { int v = 0; return cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0 ? 0 : 1; }\n')
    include = [arg for arg in ext.include_dirs if os.path.isfile(os.path.join(arg, 'cuda_runtime_api.h'))]
    assert include, ext.include_dirs
    result = subprocess.run([compiler, str(source), f'-I{include[0]}', '-o', str(tmp_path / 'probe'), *link_args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # Runs without a GPU or driver too: the runtime library answers its own version.
    assert subprocess.run([str(tmp_path / 'probe')], timeout=60).returncode == 0


def test_wgmma_headers_match_their_generator():
    # wgmma_atoms.cuh and wgmma_tf32.cuh are generated; --check compares them with the generator's output.
    ptx = os.path.join(ROOT, 'deep_gemm', 'include', 'deep_gemm', 'ptx')
    checked = subprocess.run([sys.executable, 'gen_wgmma.py', '--check'], cwd=ptx, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stderr
