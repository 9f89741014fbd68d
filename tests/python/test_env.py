"""DG_* environment handling through the Python layer: values are read at the first JIT use (not at
import), malformed values raise RuntimeError naming the variable, reload_settings() re-reads them."""

import pytest

import deep_gemm
from deep_gemm import _C
from pyrun import run_python


@pytest.fixture
def env(monkeypatch):
    yield monkeypatch
    monkeypatch.undo()
    _C.reload_settings()


def test_malformed_value_fails_at_first_jit_use_not_import():
    result = run_python('''
        import deep_gemm
        print('imported')
        try:
            deep_gemm.compile_only('layout_transpose_sf', 'sm_90a')
        except RuntimeError as e:
            print('RuntimeError:', e)
    ''', DG_JIT_CPP_STANDARD='abc')
    assert result.returncode == 0, result.stderr
    assert 'imported' in result.stdout
    assert 'RuntimeError: ' in result.stdout and 'DG_JIT_CPP_STANDARD' in result.stdout and 'abc' in result.stdout


@pytest.mark.parametrize('name,value', [('DG_JIT_CPP_STANDARD', 'abc'), ('DG_JIT_CPP_STANDARD', '14'), ('DG_JIT_USE_NVRTC', 'maybe'),
                                        ('DG_JIT_DEBUG', '2x'), ('DG_PRINT_CONFIGS', 'yes please')])
def test_malformed_values_name_the_variable(env, name, value):
    env.setenv(name, value)
    _C.reload_settings()
    with pytest.raises(RuntimeError, match=name):
        deep_gemm.get_settings()
    with pytest.raises(RuntimeError, match=name):
        deep_gemm.compile_only('layout_transpose_sf', 'sm_90a')


def test_settings_read_and_reload(env, tmp_path):
    env.setenv('DG_JIT_CACHE_DIR', str(tmp_path))
    env.setenv('DG_PRINT_CONFIGS', '1')
    env.setenv('DG_JIT_CPP_STANDARD', '17')
    _C.reload_settings()
    s = deep_gemm.get_settings()
    assert s['cache_dir'] == str(tmp_path) and s['print_configs'] is True and s['cpp_standard'] == 17
    env.setenv('DG_PRINT_CONFIGS', '0')
    assert deep_gemm.get_settings()['print_configs'] is True  # read once ...
    _C.reload_settings()
    assert deep_gemm.get_settings()['print_configs'] is False  # ... until reloaded


def test_registry_documents_every_variable():
    names = {entry['name'] for entry in _C.setting_registry()}
    for name in ('DG_JIT_CACHE_DIR', 'DG_JIT_USE_NVRTC', 'DG_JIT_NVCC_COMPILER', 'DG_JIT_CPP_STANDARD', 'DG_JIT_DEBUG',
                 'DG_JIT_PTXAS_VERBOSE', 'DG_JIT_DUMP_SASS', 'DG_PRINT_CONFIGS'):
        assert name in names
