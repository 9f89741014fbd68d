"""DG_FP8_GEMM_CONFIG and DG_BF16_GEMM_CONFIG share one field syntax (csrc/jit_kernels/impls/config_fields.hpp):
blanks around the value and around each field are ignored, so a value spelled with spaces forces the same config
as without them. Checked through the CPU planner (_plan_gemm_call applies the forced config as the op does)."""
import pytest

import deep_gemm
from deep_gemm import _C

SPELLINGS = ['128,112,0', ' 128 , 112 , 0 ', '\t128,\t112 ,0\t', '128, 112, 0']


@pytest.fixture
def env(monkeypatch):
    def set_(name, value):
        monkeypatch.setenv(name, value)
        deep_gemm.reload_settings()
    yield set_
    monkeypatch.undo()
    deep_gemm.reload_settings()


def planned(op):
    return [symbol for _, symbol, _ in _C._plan_gemm_call(op, 256, 1024, 512)]


@pytest.mark.parametrize('name,op', [('DG_FP8_GEMM_CONFIG', 'fp8_gemm_nt'), ('DG_BF16_GEMM_CONFIG', 'bf16_gemm_nt')])
def test_blanks_are_ignored_by_both_variables(env, name, op):
    results = []
    for value in SPELLINGS:
        env(name, value)
        results.append(planned(op))
    assert all(r == results[0] for r in results), results
    assert '_bm128_bn112_' in results[0][0]  # the forced tile, not the heuristic's


def test_fp8_choosers_and_blank_values(env):
    env('DG_FP8_GEMM_CONFIG', '')
    model = planned('fp8_gemm_nt')
    env('DG_FP8_GEMM_CONFIG', '   ')  # blank: no override, as for DG_BF16_GEMM_CONFIG
    assert planned('fp8_gemm_nt') == model
    env('DG_FP8_GEMM_CONFIG', 'rules')
    rules = planned('fp8_gemm_nt')
    env('DG_FP8_GEMM_CONFIG', ' rules\t')
    assert planned('fp8_gemm_nt') == rules


@pytest.mark.parametrize('value,error', [
    ('128;112;0', "fields are separated by ','"),
    ('128 112 0', "fields are separated by ','"),
    ('128,,0', "block_n '' is not a non-negative integer"),
    ('128,-112,0', "block_n '-112' is not a non-negative integer"),
    ('128,112', '2 comma-separated fields instead of 3 to 7'),
    ('96, 112, 0', 'block_m 96 is not one of 64, 128, 192, 256'),
])
def test_fp8_errors_name_the_value(env, value, error):
    env('DG_FP8_GEMM_CONFIG', value)
    with pytest.raises(RuntimeError) as info:
        planned('fp8_gemm_nt')
    assert f"DG_FP8_GEMM_CONFIG='{value}'" in str(info.value) and error in str(info.value)


def test_fp8_1d1d_forced_tile_reaches_dense_and_k_grouped_plans(env):
    # DG_FP8_1D1D_GEMM_CONFIG: the 1D1D kernel's forced tile (the FP32-output dense GEMM and the K-grouped op), not
    # DG_FP8_GEMM_CONFIG's kernel; blanks ignored as for the others.
    def plans():
        dense = _C._plan_gemm_call('fp8_gemm_nt', 256, 1024, 512, recipe=(1, 1, 128), d_fp32=True)
        k_grouped = _C._plan_gemm_call('k_grouped_fp8_gemm_nt_contiguous', 256, 1024, 768, num_groups=2, ks=[512, 256])
        return [s for _, s, _ in dense + k_grouped if 'gemm' in s]
    model = plans()
    assert all('_bn176_' not in s for s in model)
    env('DG_FP8_1D1D_GEMM_CONFIG', ' 128 , 176 ')
    forced = plans()
    assert len(forced) == 2 and all('_bm128_bn176_' in s for s in forced), forced
    assert planned('fp8_gemm_nt') == [s for _, s, _ in _C._plan_gemm_call('fp8_gemm_nt', 256, 1024, 512)]
    env('DG_FP8_1D1D_GEMM_CONFIG', '128,128,0,0,1')
    forced = plans()
    assert len(forced) == 2 and all('_bm128_bn128_' in s and '_pp' in s for s in forced), forced
    env('DG_FP8_1D1D_GEMM_CONFIG', '128,160,0,0,0,1')
    forced = plans()
    assert len(forced) == 2 and all('_bm128_bn160_' in s and '_mcb' in s for s in forced), forced
    env('DG_FP8_1D1D_GEMM_CONFIG', '128,128,0,0,0,0,1')  # C prefetch: only kernels with a C get it
    with_c = [s for c in (False, True) for _, s, _ in _C._plan_gemm_call(
        'fp8_gemm_nt', 256, 1024, 512, recipe=(1, 1, 128), d_fp32=True, with_c=c) if 'gemm' in s]
    assert [('_pfc' in s) for s in with_c] == [False, True], with_c
    env('DG_FP8_1D1D_GEMM_CONFIG', '128,192')
    with pytest.raises(RuntimeError) as info:
        plans()
    assert "DG_FP8_1D1D_GEMM_CONFIG='128,192'" in str(info.value) and 'block_n 192 is not one of 16..176 (step 16)' in str(info.value)
