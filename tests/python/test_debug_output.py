"""DG_JIT_DEBUG / DG_JIT_PRINT_COMPILER_COMMAND / DG_PRINT_CONFIGS output reaching stderr with no logging set-up,
and user-configured logging left in charge. Each case runs in a fresh interpreter (the handler is set up at
import) and reads its stderr."""
import logging

import pytest
import torch

from deep_gemm._log_setup import requested_level
from pyrun import run_python

COMPILE = "import deep_gemm; print(deep_gemm.compile_only('layout_transpose_sf', 'sm_90a')['compiled'])"


@pytest.fixture(scope='module')
def compiled_cache(tmp_path_factory):
    """A cache holding the layout kernel, built by a process with DG_JIT_DEBUG and the command switch set; its
    result is checked by the first test."""
    cache = tmp_path_factory.mktemp('dg_cache')
    result = run_python(COMPILE, DG_JIT_CACHE_DIR=str(cache), DG_JIT_DEBUG='1', DG_JIT_PRINT_COMPILER_COMMAND='1')
    return cache, result


def test_debug_and_command_records_reach_stderr_without_logging_setup(compiled_cache):
    _, result = compiled_cache
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'True'
    assert '[deep_gemm DEBUG] cache miss for layout_transpose_sf' in result.stderr
    assert '[deep_gemm INFO] compiling layout_transpose_sf: ' in result.stderr  # the compiler command
    assert '[deep_gemm INFO] compiled kernel layout_transpose_sf' in result.stderr


def test_cache_hit_logged_at_debug(compiled_cache):
    cache, _ = compiled_cache
    result = run_python(COMPILE, DG_JIT_CACHE_DIR=str(cache), DG_JIT_DEBUG='1')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'False'
    assert '[deep_gemm DEBUG] cache hit for layout_transpose_sf' in result.stderr


def test_nothing_printed_without_a_switch(compiled_cache):
    cache, _ = compiled_cache
    result = run_python(COMPILE, DG_JIT_CACHE_DIR=str(cache), DG_JIT_DEBUG='0')
    assert result.returncode == 0, result.stderr
    assert 'deep_gemm' not in result.stderr


def test_info_switch_does_not_show_debug_records():
    code = """
        import deep_gemm
        deep_gemm._C._log(10, 'a debug record')
        deep_gemm._C._log(20, 'an info record')
    """
    result = run_python(code, DG_PRINT_CONFIGS='1', DG_JIT_DEBUG='')
    assert result.returncode == 0, result.stderr
    assert '[deep_gemm INFO] an info record' in result.stderr
    assert 'a debug record' not in result.stderr


def test_logging_configured_before_import_is_respected():
    code = """
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format='user:%(levelname)s:%(message)s')
        import deep_gemm
        deep_gemm._C._log(20, 'an info record')
        deep_gemm._C._log(30, 'a warning record')
    """
    result = run_python(code, DG_JIT_DEBUG='1')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['user:WARNING:a warning record']  # the user's level and format
    assert 'record' not in result.stderr


def test_logging_configured_after_import_gets_each_record_once():
    code = """
        import logging, sys
        import deep_gemm
        logging.basicConfig(stream=sys.stdout, format='user:%(message)s')
        deep_gemm._C._log(20, 'an info record')
    """
    result = run_python(code, DG_PRINT_CONFIGS='1')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['user:an info record']
    assert 'record' not in result.stderr


def test_user_level_on_the_deep_gemm_logger_is_kept():
    code = """
        import logging
        logging.getLogger('deep_gemm').setLevel(logging.WARNING)
        import deep_gemm
        deep_gemm._C._log(20, 'an info record')
        deep_gemm._C._log(30, 'a warning record')
    """
    result = run_python(code, DG_JIT_DEBUG='1')
    assert result.returncode == 0, result.stderr
    assert 'an info record' not in result.stderr
    assert '[deep_gemm WARNING] a warning record' in result.stderr


@pytest.mark.parametrize('value, level', [('1', logging.DEBUG), ('true', logging.DEBUG), ('0', None), ('', None),
                                          ('off', None)])
def test_requested_level(value, level):
    assert requested_level({'DG_JIT_DEBUG': value}) == level
    assert requested_level({'DG_JIT_DEBUG': value, 'DG_PRINT_CONFIGS': '1'}) == (level or logging.INFO)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_print_configs_shows_the_chosen_config(tmp_path):
    code = """
        import torch, deep_gemm
        a = torch.randn(200, 256, device='cuda', dtype=torch.bfloat16)
        b = torch.randn(384, 256, device='cuda', dtype=torch.bfloat16)
        d = torch.empty(200, 384, device='cuda', dtype=torch.bfloat16)
        deep_gemm.bf16_gemm_nt(a, b, d)
        torch.cuda.synchronize()
    """
    result = run_python(code, DG_PRINT_CONFIGS='1', DG_JIT_CACHE_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '[deep_gemm INFO] ' in result.stderr and 'M=200 N=384 K=256' in result.stderr, result.stderr
