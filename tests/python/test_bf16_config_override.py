"""DG_BF16_GEMM_CONFIG (forced dense BF16 GEMM config, for tuning).

The value is parsed by the BF16 host code at the first dense BF16 call, which needs a Hopper GPU, so the error
and effect checks are GPU tests (skipped here otherwise). Without a GPU: the registry documents the variable
and the sweep's candidates match the list the C++ unit test validates.
"""
import logging
import os
import re
import sys

import pytest
import torch

import deep_gemm
from deep_gemm import _C

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ENV = 'DG_BF16_GEMM_CONFIG'
_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
_needs_hopper = pytest.mark.skipif(not _HAS_HOPPER, reason='needs a Hopper (sm_90) GPU')


@pytest.fixture
def bf16_config(monkeypatch):
    """set(value) puts `value` in DG_BF16_GEMM_CONFIG (None unsets it) and reloads the settings, as the sweep
    does; the environment is restored afterwards."""
    def set_(value, **extra):
        if value is None:
            monkeypatch.delenv(_ENV, raising=False)
        else:
            monkeypatch.setenv(_ENV, value)
        for name, v in extra.items():
            monkeypatch.setenv(name, v)
        deep_gemm.reload_settings()
    yield set_
    monkeypatch.undo()
    deep_gemm.reload_settings()


def test_registry_documents_the_variable():
    entry = next(e for e in _C.setting_registry() if e['name'] == _ENV)
    assert entry['type'] == 'string' and entry['default'] == ''
    assert 'block_m,block_n,stages[,multicast]' in entry['doc'] and 'grouped' in entry['doc']


def test_sweep_candidates_match_the_cpp_check():
    sys.path.insert(0, os.path.join(_ROOT, 'benchmarks'))
    try:
        import sweep_bf16_configs as sweep
    finally:
        sys.path.pop(0)
    with open(os.path.join(_ROOT, 'tests', 'cpp', 'test_bf16_config_override.cpp')) as f:
        source = f.read()
    block = re.search(r'kSweepCandidates\[\] = \{(.*?)\};', source, re.S).group(1)
    checked = set(re.findall(r'"([0-9,]+)"', block))
    swept = {sweep.cfg_str(c) for c in sweep.LARGE_M + sweep.SMALL_M if c is not None}
    assert swept == checked


# ---- GPU ----------------------------------------------------------------------------------------------

def _nt_case(m, n, k, seed):
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((m, k), device='cuda', generator=g).to(torch.bfloat16)
    b = torch.randn((n, k), device='cuda', generator=g).to(torch.bfloat16)
    return a, b, a.double() @ b.double().t()


def _check(d, ref, what):
    from deep_gemm.testing import calc_diff
    torch.cuda.synchronize()
    assert not torch.isnan(d).any(), f'{what}: NaN in output'
    assert float(calc_diff(d.double(), ref)) < 1e-5, what


@_needs_hopper
@pytest.mark.gpu
@pytest.mark.parametrize('value,problem', [
    ('128,100,0', 'block_n 100 is not one of 16..256 (step 16)'),
    ('128,256', '2 comma-separated fields'),
    ('96,128,0', 'block_m 96 is not one of 64, 128'),
    ('128,128,2', 'stages 2 is not one of 0, 3..16'),
    ('128,128,0,2', 'multicast 2 is not one of 0, 1'),
    ('legacy', '1 comma-separated field'),
    ('128,256,8', 'bytes of shared memory'),  # well-formed, but does not fit
])
def test_bad_value_is_a_clear_runtime_error(bf16_config, value, problem):
    a, b, ref = _nt_case(256, 512, 256, seed=1)
    d = torch.full((256, 512), float('nan'), device='cuda', dtype=torch.bfloat16)
    bf16_config(value)
    with pytest.raises(RuntimeError) as info:
        deep_gemm.bf16_gemm_nt(a, b, d)
    message = str(info.value)
    assert message.startswith('bf16_gemm_nt: ') and _ENV in message and problem in message, message
    # Fixed in the same process: reload_settings() is enough.
    bf16_config(None)
    deep_gemm.bf16_gemm_nt(a, b, d)
    _check(d, ref, 'after unsetting the variable')


@_needs_hopper
@pytest.mark.gpu
@pytest.mark.parametrize('layout', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('value', ['128,256,0,1', '64,96,0', '128,160,0,1', '128,192,3,0', '64,48,8'])
def test_forced_configs_compute_correctly(bf16_config, layout, value):
    m, n, k = 2112, 1040, 576  # odd M block count for the multicast pairs, N not a multiple of the tiles
    a, b, ref = _nt_case(m, n, k, seed=len(value) + 7 * ord(layout[0]) + ord(layout[1]))
    a_arg = a if layout[0] == 'n' else a.t().contiguous()
    b_arg = b if layout[1] == 't' else b.t().contiguous()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    bf16_config(value)
    getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d)
    _check(d, ref, f'{layout} {value}')


@_needs_hopper
@pytest.mark.gpu
@pytest.mark.parametrize('layout', ['nt', 'tn'])
def test_direct_store_epilogue_takes_all_stages(bf16_config, layout):
    """D rows not 16-byte aligned (row stride N + 2): the direct-store epilogue, which reserves no staging, so
    128x256 fits 4 stages (the TMA-store epilogue's 64 KB staging allows 3). Nothing outside the view is written."""
    m, n, k = 1104, 1000, 640  # M: no multiple of BLOCK_M, but 16-byte rows for the transposed (tn) A
    a, b, ref = _nt_case(m, n, k, seed=11 + ord(layout[0]))
    a_arg = a if layout[0] == 'n' else a.t().contiguous()
    b_arg = b if layout[1] == 't' else b.t().contiguous()
    d_wide = torch.full((m, n + 2), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, :n]
    bf16_config('128,256,4,0')
    getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d)
    _check(d, ref, f'{layout} direct store, 128x256, 4 stages')
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    # The TMA-store epilogue (aligned D) cannot take 4 stages of this tile.
    d_aligned = torch.empty((m, n), device='cuda', dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match='bytes of shared memory'):
        getattr(deep_gemm, f'bf16_gemm_{layout}')(a_arg, b_arg, d_aligned)


@_needs_hopper
@pytest.mark.gpu
def test_reload_switches_the_config(bf16_config, caplog):
    """Same shape, three values in one process: each reload chooses again (the value is part of the memo key)."""
    a, b, ref = _nt_case(1536, 1536, 512, seed=3)
    d = torch.empty((1536, 1536), device='cuda', dtype=torch.bfloat16)
    with caplog.at_level(logging.INFO, logger='deep_gemm'):
        for value, expected in (('128,64,0,0', 'BLOCK_M=128 BLOCK_N=64 '), ('64,112,4', 'BLOCK_M=64 BLOCK_N=112 stages=4'),
                                (None, None)):
            caplog.clear()
            bf16_config(value, DG_PRINT_CONFIGS='1')
            d.fill_(float('nan'))
            deep_gemm.bf16_gemm_nt(a, b, d)
            _check(d, ref, f'config {value}')
            lines = [r.getMessage() for r in caplog.records if 'bf16_gemm_nt' in r.getMessage()]
            if expected:
                assert any(expected in line and f'forced by {_ENV}' in line for line in lines), lines
            else:
                assert not any(_ENV in line for line in lines), lines


@_needs_hopper
@pytest.mark.gpu
def test_grouped_ops_ignore_it(bf16_config):
    """The override is for the dense ops: a K-grouped call runs with its heuristics even when the value is bad."""
    ks, m, n = [128, 256], 264, 200
    g = torch.Generator(device='cuda').manual_seed(5)
    a = torch.randn((sum(ks), m), device='cuda', generator=g).to(torch.bfloat16)
    b = torch.randn((sum(ks), n), device='cuda', generator=g).to(torch.bfloat16)
    ks_tensor = torch.tensor(ks, device='cuda', dtype=torch.int32)
    d = torch.full((len(ks), m, n), float('nan'), device='cuda', dtype=torch.float32)
    bf16_config('not,a,config')
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor)
    starts = [0, ks[0]]
    for gi, (k0, kg) in enumerate(zip(starts, ks)):
        _check(d[gi], a[k0:k0 + kg].double().t() @ b[k0:k0 + kg].double(), f'k-grouped group {gi}')
