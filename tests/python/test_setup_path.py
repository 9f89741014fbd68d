"""The road from a fresh clone to green tests (README "Set up" and "Run the tests"): the test requirements leave the
built-against torch alone, the test command checks its tools before it builds, the CMake configure names the
missing package (GoogleTest, fmt) and finds the SASS tools afresh (rejecting a pre-13 cuobjdump), the extension
records its torch (a mismatch is one clear ImportError) and is not rebuilt when nothing changed, the example ends
cleanly without a GPU, and `import deep_gemm` works from the folder that holds the clone."""
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

import deep_gemm
from deep_gemm import _build_stamp
from pyrun import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CMAKE = shutil.which('cmake')


def requirement_names(path):
    names = []
    with open(path) as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line:
                names.append(line if line.startswith('-r ') else re.split(r'[<>=!~\[; ]', line)[0].lower())
    return names


def test_test_requirements_leave_torch_alone():
    # README's test line installs requirements-test.txt into an environment whose extension is built against
    # some torch; nothing there may pull another torch in. CI's own environment adds the pin on top.
    test = requirement_names(os.path.join(ROOT, 'requirements-test.txt'))
    assert 'pytest' in test and 'matplotlib' in test
    assert not any(name.startswith(('torch', 'triton', '-r')) for name in test)
    assert requirement_names(os.path.join(ROOT, 'requirements-dev.txt')) == ['torch', '-r requirements-test.txt']


def run_tests_check_only(tmp_path, **env):
    return subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'run_tests.sh'), '--check-only'],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


def test_run_tests_checks_its_tools_before_building(tmp_path):
    result = run_tests_check_only(tmp_path)
    assert result.returncode == 0, result.stderr
    # A Python without pytest: the script stops at once with the install command, before CMake runs.
    (tmp_path / 'pytest.py').write_text('raise ImportError("not installed")\n')
    result = run_tests_check_only(tmp_path, PYTHONPATH=str(tmp_path))
    assert result.returncode == 1
    assert 'pytest: pip install -r requirements-test.txt' in result.stderr
    assert 'C++ core' not in result.stdout


def configure(tmp_path, *args):
    """A CMake configure of the repository into a scratch folder (nothing is built)."""
    build = tmp_path / 'build'
    return build, subprocess.run([CMAKE, '-S', ROOT, '-B', str(build), '-G', 'Ninja', *args],
                                 capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(CMAKE is None or shutil.which('ninja') is None, reason='needs cmake and ninja')
def test_configure_without_googletest_fails_with_the_package_name(tmp_path):
    build, result = configure(tmp_path, '-DDG_REQUIRE_GTEST=ON', '-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON')
    assert result.returncode != 0
    assert 'apt-get install libgtest-dev' in result.stderr
    # The SASS tools are looked up at every configure, never kept in the cache of a build folder.
    with open(build / 'CMakeCache.txt') as f:
        assert not re.search(r'^\w*(cuobjdump|nvdisasm)\w*:', f.read(), re.M | re.I)


@pytest.mark.skipif(CMAKE is None or shutil.which('ninja') is None, reason='needs cmake and ninja')
def test_configure_without_fmt_headers_says_what_to_install(tmp_path):
    empty = tmp_path / 'no_fmt_here'
    empty.mkdir()
    _, result = configure(tmp_path, '-DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON', f'-DDG_FMT_INCLUDE={empty}')
    assert result.returncode != 0
    assert 'apt-get install libfmt-dev' in result.stderr


def fake_cuobjdump(folder, release):
    folder.mkdir()
    tool = folder / 'cuobjdump'
    tool.write_text(f'#!/bin/sh\necho "Cuda compilation tools, release {release}, V{release}.1"\n')
    tool.chmod(0o755)
    return str(folder)


@pytest.mark.skipif(CMAKE is None, reason='needs cmake')
def test_sass_tools_reject_a_cuobjdump_older_than_cuda_13(tmp_path):
    old, new = fake_cuobjdump(tmp_path / 'old', '12.8'), fake_cuobjdump(tmp_path / 'new', '13.0')

    def found(*dirs):
        result = subprocess.run([CMAKE, f'-DDG_TOOL_HINTS={";".join(dirs)}', '-P',
                                 os.path.join(ROOT, 'cmake', 'DgSassTools.cmake')],
                                env={**os.environ, 'PATH': '/usr/bin:/bin'}, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return re.search(r"cuobjdump='([^']*)'", result.stdout + result.stderr).group(1)

    assert found(old, new) == os.path.join(new, 'cuobjdump')
    assert found(old) == ''


def test_extension_records_the_torch_it_was_built_for():
    record = _build_stamp.read_record(os.path.dirname(deep_gemm.__file__))
    assert record['TORCH_VERSION'] == torch.__version__


def test_another_torch_is_one_clear_import_error():
    with pytest.raises(ImportError) as info:
        _build_stamp.check_torch({'TORCH_VERSION': '2.15.0+cu130', 'SOURCE_ROOT': '/src/deep_gemm'}, '2.11.0+cu130')
    text = str(info.value)
    assert 'built for torch 2.15.0+cu130' in text and 'torch 2.11.0+cu130 is running' in text
    assert ('cd /src/deep_gemm && CXX=/usr/bin/g++ pip install --no-build-isolation --config-settings '
            'editable_mode=compat -e .') in text
    _build_stamp.check_torch({'TORCH_VERSION': '2.11.0+cu130'}, '2.11.0+cu130')  # the same torch: no error
    _build_stamp.check_torch({}, '2.11.0+cu130')  # a tree never built by setup.py: no record, no check
    # The real import, in a process whose torch claims another version: stopped before _C is loaded.
    result = run_python("import torch; torch.__version__ = '0.0.1'; import deep_gemm")
    assert result.returncode != 0
    assert f'ImportError: deep_gemm was built for torch {torch.__version__}, but torch 0.0.1 is running' in result.stderr


def test_an_unchanged_build_is_not_redone(tmp_path):
    (tmp_path / 'csrc').mkdir()
    (tmp_path / 'deep_gemm').mkdir()
    (tmp_path / 'setup.py').write_text('# build\n')
    (tmp_path / 'csrc' / 'op.cpp').write_text('int f() { return 1; }\n')
    root = str(tmp_path)
    _build_stamp.write_record(root, '2.11.0', _build_stamp.sources_digest(root))
    assert _build_stamp.up_to_date(root, '2.11.0') == 'no deep_gemm/_C*.so'
    (tmp_path / 'deep_gemm' / '_C.cpython-311-x86_64-linux-gnu.so').write_bytes(b'')
    assert _build_stamp.up_to_date(root, '2.11.0') == ''
    assert _build_stamp.up_to_date(root, '2.15.0') == 'built for torch 2.11.0, running 2.15.0'
    (tmp_path / 'csrc' / 'op.cpp').write_text('int f() { return 2; }\n')
    assert _build_stamp.up_to_date(root, '2.11.0') == 'sources changed'
    os.remove(tmp_path / 'deep_gemm' / _build_stamp.RECORD_NAME)
    assert _build_stamp.up_to_date(root, '2.11.0') == 'never built here'


def test_example_ends_cleanly_without_a_gpu():
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'examples', 'fp8_gemm.py')],
                            env={**os.environ, 'CUDA_VISIBLE_DEVICES': ''}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert 'no CUDA GPU visible' in result.stdout


def test_import_from_the_folder_that_holds_the_clone(tmp_path):
    # A clone named deep_gemm, Python started next to it: the installed package is imported, not the clone's root
    # as a namespace package (README's editable install uses editable_mode=compat, which puts the clone on sys.path).
    os.symlink(ROOT, tmp_path / 'deep_gemm')
    result = subprocess.run([sys.executable, '-c', 'import deep_gemm; print(deep_gemm.__version__)'], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == deep_gemm.__version__
