"""Model presets of the warm-up (deep_gemm/_warmup_presets.py, data in deep_gemm/presets/): every preset expands to
calls the planner accepts without a GPU, the shapes are the model config's arithmetic (recomputed here from
DeepSeek-V3's config.json numbers, independently of the data file's expressions), and unknown names fail clearly.
Nothing is compiled except where a test says so."""
import json
import math

import pytest

import deep_gemm
from deep_gemm import _C
from deep_gemm import _warmup_presets as presets
from deep_gemm._warmup_calls import _FIELDS, PlanTarget, plan_call
from deep_gemm.cli import main

H200 = PlanTarget('sm_90a', 132, 232448, False)

# deepseek-ai/DeepSeek-V3 config.json (DeepSeek-R1: the same numbers), written out again here so a wrong
# number in the data file is caught.
V3 = dict(hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048, num_attention_heads=128, q_lora_rank=1536,
          kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=256,
          n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=3, num_hidden_layers=61, vocab_size=129280)

# Each model's presets under its first name (its other names are aliases: test_names_cover_tp_and_ep_layouts).
_FIRST_NAMES = {model['names'][0] for _, model in presets._models()}
PLANNED = [name for name in presets.preset_names() if any(name.startswith(first + '-') for first in _FIRST_NAMES)]


def by_gemm(name):
    """{gemm name: [calls]} of a preset."""
    out = {}
    for gemm, call in presets.expand(name):
        out.setdefault(gemm, []).append(call)
    return out


def shapes(name):
    """{gemm name: {(n, k, num_groups)}}."""
    return {g: {(c['n'], c['k'], c.get('num_groups', 1)) for c in calls} for g, calls in by_gemm(name).items()}


def test_data_file_holds_the_config_numbers():
    models = dict(presets._models())
    assert models['deepseek-v3'] is models['deepseek-r1']
    assert models['deepseek-v3']['config'] == V3
    for gemm in models['deepseek-v3']['gemms']:
        assert gemm['derivation'], gemm['name']  # every shape says where it comes from


def test_names_cover_tp_and_ep_layouts():
    names = set(presets.preset_names())
    for model in ('deepseek-v3', 'deepseek-r1'):
        assert {f'{model}-tp{t}' for t in (1, 2, 4, 8)} <= names
        assert {f'{model}-ep{e}' for e in (8, 16, 32, 64, 128, 256)} <= names
        assert f'{model}-tp8-ep8' in names
    for layout in ('tp1', 'ep32', 'tp4-ep64'):
        assert presets.preset_calls(f'deepseek-r1-{layout}') == presets.preset_calls(f'deepseek-v3-{layout}')


def test_every_preset_expands_to_calls_the_planner_accepts():
    kernels = set()
    assert 'deepseek-v3-tp8' in PLANNED and not any(name.startswith('deepseek-r1') for name in PLANNED)
    for name in PLANNED:
        calls = presets.preset_calls(name)
        assert calls, name
        for call in calls:
            assert set(call) <= _FIELDS and isinstance(call['op'], str), (name, call)
            assert all(isinstance(call[f], int) and call[f] > 0 for f in ('n', 'k')), (name, call)
            records = plan_call(call, H200)  # raises on anything the op would reject
            assert records and records[0].name.startswith('sm90_'), (name, call)
            kernels.update(records)
    assert len(kernels) > 50  # many configs, each compiled once by a warm-up


def test_tp_shapes_are_the_config_arithmetic():
    c = V3
    for tp in (1, 2, 4, 8):
        s = shapes(f'deepseek-v3-tp{tp}')
        assert s['attn.q_a_proj'] == {(c['q_lora_rank'], c['hidden_size'], 1)} == {(1536, 7168, 1)}
        assert s['attn.kv_a_proj_with_mqa'] == {(512 + 64, 7168, 1)}
        assert s['attn.fused_qkv_a_proj'] == {(1536 + 512 + 64, 7168, 1)}
        assert s['attn.q_b_proj'] == {(128 * (128 + 64) // tp, 1536, 1)}
        assert s['attn.kv_b_proj'] == {(128 * (128 + 128) // tp, 512, 1)}
        assert s['attn.o_proj'] == {(7168, 128 * 128 // tp, 1)}
        assert s['dense_mlp.gate_up_proj'] == {(2 * 18432 // tp, 7168, 1)}
        assert s['dense_mlp.down_proj'] == {(7168, 18432 // tp, 1)}
        assert s['shared_expert.gate_up_proj'] == {(2 * 2048 // tp, 7168, 1)}
        assert s['shared_expert.down_proj'] == {(7168, 2048 // tp, 1)}
        assert s['lm_head'] == {(129280 // tp, 7168, 1)}
        # no EP: all 256 experts on every rank, their intermediate split tp ways
        assert s['experts.gate_up_proj (contiguous)'] == s['experts.gate_up_proj (masked)'] == {(4096 // tp, 7168, 256)}
        assert s['experts.down_proj (contiguous)'] == s['experts.down_proj (masked)'] == {(7168, 2048 // tp, 256)}
    tp8 = shapes('deepseek-v3-tp8')  # the numbers spelled out once
    assert tp8['attn.q_b_proj'] == {(3072, 1536, 1)} and tp8['attn.kv_b_proj'] == {(4096, 512, 1)}
    assert tp8['attn.o_proj'] == {(7168, 2048, 1)} and tp8['dense_mlp.down_proj'] == {(7168, 2304, 1)}
    assert tp8['lm_head'] == {(16160, 7168, 1)}
    assert [c['op'] for c in by_gemm('deepseek-v3-tp8')['lm_head']][0] == 'bf16_gemm_nt'


def test_ep_shapes_are_the_config_arithmetic():
    for ep in (8, 16, 32, 64, 128, 256):
        g = by_gemm(f'deepseek-v3-ep{ep}')
        local = 256 // ep
        for calls in (g['experts.gate_up_proj (contiguous)'], g['experts.gate_up_proj (masked)']):
            assert {(c['n'], c['k'], c['num_groups']) for c in calls} == {(2 * 2048, 7168, local)}  # whole experts
        for calls in (g['experts.down_proj (contiguous)'], g['experts.down_proj (masked)']):
            assert {(c['n'], c['k'], c['num_groups']) for c in calls} == {(7168, 2048, local)}
        # prefill: 8 rows per token on a rank; decode: room for every rank's tokens, 8/256 of them on average
        assert sorted(c['m'] for c in g['experts.down_proj (contiguous)']) == [8 * t for t in (512, 1024, 2048, 4096, 8192, 16384)]
        masked = {c['max_m']: c['expected_m'] for c in g['experts.down_proj (masked)']}
        assert masked == {t * ep: math.ceil(t * ep * 8 / 256) for t in (16, 32, 64, 128, 256)}
        assert shapes(f'deepseek-v3-ep{ep}')['attn.q_b_proj'] == {(24576, 1536, 1)}  # data-parallel attention
    ep32 = by_gemm('deepseek-v3-ep32')
    assert {(c['max_m'], c['expected_m'], c['num_groups']) for c in ep32['experts.gate_up_proj (masked)']} >= {(4096, 128, 8)}
    both = shapes('deepseek-v3-tp8-ep8')
    assert both['attn.o_proj'] == {(7168, 2048, 1)} and both['experts.down_proj (masked)'] == {(7168, 2048, 32)}


def test_unknown_presets_fail_clearly(capsys):
    for bad in ('nope', 'deepseek-v3', 'deepseek-v3-tp3', 'deepseek-v3-ep512', 'deepseek-v3-tp8ep8', 'deepseek-v3-ep8-tp8'):
        with pytest.raises(ValueError, match=rf"^warmup: unknown preset '{bad}'; presets are <model>-tp<T>"):
            presets.preset_calls(bad)
    with pytest.raises(ValueError, match=r"unknown preset 'nope'.*deepseek-v3 \(tp \[1, 2, 4, 8\]"):
        deep_gemm.warmup(preset='nope', progress=False)
    assert main(['warmup', '--preset', 'nope']) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err


def test_preset_list(capsys):
    for args in (['warmup', '--preset', 'list'], ['warmup', '--list-presets']):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert 'deepseek-v3 / deepseek-r1 (presets/deepseek_v3.json)' in out
        assert '  deepseek-v3-tp8\n' in out and '  deepseek-r1-ep256\n' in out


def test_warmup_builds_each_planned_kernel_once(monkeypatch):
    # build_source replaced: what a preset hands to the compiler, without compiling
    built = []
    monkeypatch.setattr(_C, 'build_source', lambda name, symbol, code, arch: built.append(symbol) or {'compiled': True})
    result = deep_gemm.warmup(preset='deepseek-v3-ep32', arch='sm_90a', num_sms=132, smem_optin=232448, progress=False)
    assert result.failed == [] and result.calls == len(presets.preset_calls('deepseek-v3-ep32'))
    assert result.compiled == result.kernels == len(built) == len(set(built))
    planned = {r.symbol for call in presets.preset_calls('deepseek-v3-ep32') for r in plan_call(call, H200)}
    assert set(built) == planned
    both = deep_gemm.warmup(preset=['deepseek-v3-ep32'], calls=['bf16_gemm_nt:m=64,n=256,k=512'], arch='sm_90a',
                            num_sms=132, smem_optin=232448, progress=False)
    assert both.calls == result.calls + 1


def test_data_errors_name_the_file_and_the_gemm(tmp_path, monkeypatch):
    data = json.load(open(f'{presets.PRESET_DIR}/deepseek_v3.json'))
    data['names'] = ['toy']
    data['layouts'] = {'tp': [3], 'ep': [8]}
    (tmp_path / 'toy.json').write_text(json.dumps(data))
    monkeypatch.setattr(presets, 'PRESET_DIR', str(tmp_path))
    presets._models.cache_clear()
    try:
        with pytest.raises(ValueError, match=r'toy.json: attn.kv_b_proj n: 32768 / 3 is not exact'):
            presets.preset_calls('toy-tp3')
        data['gemms'][0]['n'] = 'q_lora_rank + __import__("os")'
        (tmp_path / 'toy.json').write_text(json.dumps(data))
        presets._models.cache_clear()
        with pytest.raises(ValueError, match=r'only ints, names, \+ - \* / // and parentheses are allowed'):
            presets.preset_calls('toy-ep8')
    finally:
        monkeypatch.undo()
        presets._models.cache_clear()


@pytest.fixture
def nvrtc_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('DG_JIT_CACHE_DIR', str(tmp_path / 'warm'))
    monkeypatch.setenv('DG_JIT_USE_NVRTC', '1')
    monkeypatch.delenv('DG_JIT_RECORD', raising=False)
    _C.reload_settings()
    yield tmp_path / 'warm'
    monkeypatch.undo()
    _C.reload_settings()


def test_two_small_preset_calls_compile(nvrtc_cache):
    # The smallest dense and masked calls of a preset compile (NVRTC, sm_90a: a few seconds); the rest is planned only.
    calls = [next(c for g, c in presets.expand('deepseek-v3-ep32') if g == gemm)
             for gemm in ('attn.kv_a_proj_with_mqa', 'experts.down_proj (masked)')]
    assert calls == [{'op': 'fp8_gemm_nt', 'n': 576, 'k': 7168, 'm': 1},
                     {'op': 'm_grouped_fp8_gemm_nt_masked', 'n': 7168, 'k': 2048, 'max_m': 512, 'num_groups': 8, 'expected_m': 16}]
    result = deep_gemm.warmup(calls=calls, arch='sm_90a', num_sms=132, smem_optin=232448, progress=False)
    assert (result.kernels, result.compiled, result.failed) == (3, 3, [])
    names = sorted(e['name'] for e in _C.cache_list(str(nvrtc_cache)))
    assert names == ['layout_transpose_sf', 'sm90_fp8_gemm_1d2d', 'sm90_fp8_gemm_1d2d']
