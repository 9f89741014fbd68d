"""``python -m deep_gemm tune`` and the tuning table (docs/cache.md, "Tuning table"): the candidates a call
plans, the table through the planner (a pick changes the planned kernel on its GPU model only), ``cache ls``,
the bundle round trip, the winner rule, and a clear error without a GPU. The tune run itself: GPU test."""
import os

import pytest

import deep_gemm
from deep_gemm import _C
from deep_gemm._tune import pick_winner
from pyrun import run_dg as dg

SHAPE = ('fp8_gemm_nt', 4096, 7168, 2048)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache root for this test (settings reloaded both ways)."""
    root = str(tmp_path / 'cache')
    monkeypatch.setenv('DG_JIT_CACHE_DIR', root)
    monkeypatch.delenv('DG_FP8_GEMM_CONFIG', raising=False)
    monkeypatch.delenv('DG_JIT_TUNING', raising=False)
    deep_gemm.reload_settings()
    yield root
    monkeypatch.undo()
    deep_gemm.reload_settings()


def planned(**kwargs):
    return [symbol for _, symbol, _ in _C._plan_gemm_call(*SHAPE, **kwargs)]


def tune_first_candidate(root):
    """Writes the first candidate of SHAPE as the pick of the default GPU model (132 SMs, 1980 MHz)."""
    found = _C._gemm_call_candidates(*SHAPE)
    config, _, symbol, _ = found['candidates'][0]
    _C._tuning_table_merge(root, [('sm132-1900mhz', found['variable'], found['signature'], config, 10.0, 9.0)])
    deep_gemm.reload_settings()
    return config, symbol


def test_candidates_plan_as_their_forced_config(cache, monkeypatch):
    found = _C._gemm_call_candidates(*SHAPE)
    assert found['variable'] == 'DG_FP8_GEMM_CONFIG'
    assert found['heuristic'][1] == planned()[0]
    symbols = [symbol for _, _, symbol, _ in found['candidates']]
    assert len(symbols) >= 3 and len(set(symbols)) == len(symbols) and found['heuristic'][1] not in symbols
    for config, _, symbol, _ in found['candidates'][:5]:
        monkeypatch.setenv('DG_FP8_GEMM_CONFIG', config)
        deep_gemm.reload_settings()
        assert planned()[0] == symbol, config


def test_a_pick_changes_the_plan_of_its_gpu_model_only(cache, monkeypatch):
    heuristic = planned()[0]
    _, tuned = tune_first_candidate(cache)
    assert tuned != heuristic
    assert planned()[0] == tuned
    assert planned(clock_mhz=1755)[0] == heuristic    # another clocks class
    monkeypatch.setenv('DG_JIT_TUNING', '0')
    deep_gemm.reload_settings()
    assert planned()[0] == heuristic


def test_cache_ls_and_info_show_the_table(cache):
    config, _ = tune_first_candidate(cache)
    out = dg('cache', 'ls', DG_JIT_CACHE_DIR=cache)
    assert out.returncode == 0 and 'tuning table: 1 picks' in out.stdout and f'DG_FP8_GEMM_CONFIG={config}' in out.stdout, out
    out = dg('info', DG_JIT_CACHE_DIR=cache)
    assert out.returncode == 0 and '1 picks' in out.stdout, out


def test_bundle_carries_the_table(cache, tmp_path):
    config, _ = tune_first_candidate(cache)
    bundle, other = str(tmp_path / 'b.tar.gz'), str(tmp_path / 'other')
    out = dg('cache', 'export', bundle, DG_JIT_CACHE_DIR=cache)
    assert out.returncode == 0 and '1 tuned picks' in out.stdout, out
    out = dg('cache', 'import', bundle, DG_JIT_CACHE_DIR=other)
    assert out.returncode == 0 and '1 tuned picks merged' in out.stdout, out
    assert _C._tuning_table(other) == _C._tuning_table(cache)
    assert _C._tuning_table(other)[0][3] == config


def test_an_untrusted_table_is_ignored_by_the_planner(cache):
    heuristic = planned()[0]
    tune_first_candidate(cache)
    os.chmod(os.path.join(cache, 'tuning', 'table'), 0o666)
    deep_gemm.reload_settings()
    assert planned()[0] == heuristic
    with pytest.raises(RuntimeError, match='cannot be trusted'):
        _C._tuning_table(cache)


def test_winner_must_beat_the_noise_in_every_round():
    base = [10.0, 10.2, 10.1]  # noise 0.2
    assert pick_winner({None: base, 'a': [9.0, 9.1, 9.0], 'b': [9.5, 9.6, 9.5]}) == 'a'
    assert pick_winner({None: base, 'a': [9.0, 10.1, 9.0]}) is None      # lost one round
    assert pick_winner({None: base, 'a': [9.9, 10.0, 9.85]}) is None     # within the noise
    assert pick_winner({None: base}) is None


def test_tune_without_a_gpu_is_a_clear_error():
    import torch
    if torch.cuda.is_available():
        pytest.skip('a GPU is visible')
    out = dg('tune', '--call', 'fp8_gemm_nt:m=4096,n=7168,k=2048')
    assert out.returncode == 1 and 'needs an NVIDIA Hopper GPU' in out.stderr, out
    out = dg('tune')
    assert out.returncode == 2 and 'nothing to tune' in out.stderr, out


@pytest.mark.gpu
def test_tune_one_call_on_a_gpu(cache, hopper):
    from deep_gemm._tune import format_table, tune
    results = tune(['fp8_gemm_nt:m=4096,n=7168,k=2048'], progress=False, rounds=3)
    assert len(results) == 1 and results[0].error is None, results
    r = results[0]
    assert r.candidates >= 3 and r.heuristic_us > 0 and not r.wrong, r
    table = _C._tuning_table(cache)
    assert (r.config is None) == (table == []), (r, table)
    if r.config:
        assert r.tuned_us < r.heuristic_us and table[0][3] == r.config
    assert 'heuristic us' in format_table(results)


def test_warmup_plans_with_the_picks_of_its_target_gpu_model(cache):
    from deep_gemm._warmup_calls import PlanTarget, parse_call, plan_call
    heuristic = planned()[0]
    _, tuned = tune_first_candidate(cache)
    call = parse_call('fp8_gemm_nt:m=4096,n=7168,k=2048')
    assert plan_call(call, PlanTarget('sm_90a', 132, 232448, False))[0].symbol == tuned
    assert plan_call(call, PlanTarget('sm_90a', 132, 232448, False, 1755))[0].symbol == heuristic


def test_a_tuned_kernel_missing_under_compile_error_is_the_usual_error(cache, monkeypatch):
    """A tuned pick is planned like any config, so DG_JIT_COMPILE=error names its kernel as missing (the GPU
    path builds its planned source through the same cache lookup)."""
    _, tuned = tune_first_candidate(cache)
    name, symbol, code = _C._plan_gemm_call(*SHAPE)[0]
    assert symbol == tuned
    monkeypatch.setenv('DG_JIT_COMPILE', 'error')
    deep_gemm.reload_settings()
    with pytest.raises(RuntimeError, match='DG_JIT_COMPILE=error: kernel sm90_fp8_gemm_1d2d .* is not in the kernel cache'):
        _C.build_source(name, symbol, code, 'sm_90a')
