"""DG_JIT_RECORD + warm-up: a run records the kernels it uses, `python -m deep_gemm warmup` compiles them into
another cache (no GPU needed), and a run on that cache compiles nothing. CPU: with the layout kernel
(compile_only); GPU: with real GEMM calls."""
import json
import os

import pytest
import torch

import deep_gemm
from deep_gemm import _C
from deep_gemm._warmup import KernelRecord, read_record
from deep_gemm.cli import main
from pyrun import run_python

COMPILE = "import deep_gemm; print(deep_gemm.compile_only('layout_transpose_sf')['compiled'])"


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    """A record written by two processes on one cache (the first compiles, the second finds the kernel)."""
    base = tmp_path_factory.mktemp('recorded')
    record = base / 'kernels.jsonl'
    for expected in ('True', 'False'):
        result = run_python(COMPILE, DG_JIT_CACHE_DIR=str(base / 'cache'), DG_JIT_RECORD=str(record))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == expected
    return record


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv('DG_JIT_CACHE_DIR', str(tmp_path / 'warm'))
    monkeypatch.delenv('DG_JIT_RECORD', raising=False)
    _C.reload_settings()
    yield tmp_path / 'warm'
    monkeypatch.undo()
    _C.reload_settings()


def test_record_has_one_line_per_process_and_reads_back_once(recorded):
    lines = recorded.read_text().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    entry = json.loads(lines[0])
    assert entry['format'] == 1 and entry['name'] == 'layout_transpose_sf' and entry['arch'] == 'sm_90a'
    assert entry['symbol'] == 'deep_gemm_layout_transpose_sf' and '#include <deep_gemm/' in entry['code']
    assert read_record(str(recorded)) == [KernelRecord(entry['name'], entry['symbol'], entry['arch'], entry['code'])]


def test_warmup_then_a_run_compiles_nothing(recorded, cache_dir, capsys):
    assert main(['warmup', str(recorded), '--quiet']) == 0
    out = capsys.readouterr().out
    assert out.startswith(f'warmup: 1 kernels into {cache_dir}: 1 compiled, 0 already cached, 0 failed')
    assert main(['warmup', str(recorded), '--json']) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary['compiled'], summary['cached'], summary['failed']) == (0, 1, [])
    result = run_python(COMPILE, DG_JIT_CACHE_DIR=str(cache_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'False'  # found in the warmed cache: no compile


def test_parallel_warmup_counts_and_failures(recorded, cache_dir):
    (good,) = read_record(str(recorded))
    variants = [KernelRecord(good.name, good.symbol, good.arch, good.code + f'\n// variant {i}\n') for i in range(3)]
    broken = KernelRecord('broken_kernel', 'broken', 'sm_90a', 'this is not CUDA;\n')
    result = deep_gemm.warmup(variants + [broken, variants[0]], jobs=2, progress=False)
    assert (result.compiled, result.cached, result.total) == (3, 0, 4)  # the duplicate is dropped
    assert len(result.failed) == 1 and result.failed[0].startswith('broken_kernel (sm_90a): ')


def test_arch_override_is_used(recorded, cache_dir, capsys):
    assert main(['warmup', str(recorded), '--arch', 'sm_90x', '--quiet']) == 1
    assert 'layout_transpose_sf (sm_90x): ' in capsys.readouterr().err


def test_malformed_record_names_the_line(tmp_path, capsys):
    path = tmp_path / 'bad.jsonl'
    path.write_text('\n{"format": 1, "name": "k"}\n')
    assert main(['warmup', str(path)]) == 1
    assert f'{path}:2 is not a DG_JIT_RECORD line' in capsys.readouterr().err
    with pytest.raises(ValueError, match=r':2 is not a DG_JIT_RECORD line'):
        read_record(str(path))


GEMM_STEP = """
    import logging, torch, deep_gemm
    compiles = []
    class Count(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith('compiling kernel '):
                compiles.append(record.getMessage())
    logging.getLogger('deep_gemm').addHandler(Count())
    logging.getLogger('deep_gemm').setLevel(logging.INFO)
    torch.manual_seed(0)
    for m, n, k in ((200, 384, 256), (64, 7168, 2048)):
        a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16)
        b = torch.randn(n, k, device='cuda', dtype=torch.bfloat16)
        d = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
        deep_gemm.bf16_gemm_nt(a, b, d)
        a8, sfa = deep_gemm.per_token_cast_to_fp8(a.float(), use_ue8m0=False)
        b8, sfb = deep_gemm.per_block_cast_to_fp8(b.float(), use_ue8m0=False)
        deep_gemm.fp8_gemm_nt((a8, sfa), (b8, sfb), d)
    torch.cuda.synchronize()
    print(len(compiles))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_recorded_gemm_step_warms_a_fresh_cache(tmp_path):
    record = tmp_path / 'kernels.jsonl'
    first = run_python(GEMM_STEP, DG_JIT_CACHE_DIR=str(tmp_path / 'a'), DG_JIT_RECORD=str(record))
    assert first.returncode == 0, first.stderr
    assert int(first.stdout.split()[-1]) > 0  # a cold cache compiled
    warm = run_python(f"import sys; from deep_gemm.cli import main; sys.exit(main(['warmup', {str(record)!r}, '-q']))",
                      DG_JIT_CACHE_DIR=str(tmp_path / 'b'))
    assert warm.returncode == 0, warm.stderr + warm.stdout
    again = run_python(GEMM_STEP, DG_JIT_CACHE_DIR=str(tmp_path / 'b'))
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == '0', again.stdout  # every kernel came from the warmed cache
