"""DG_JIT_RECORD + warm-up: a run records the kernels it uses, `python -m deep_gemm warmup` compiles them into
another cache (no GPU needed), and a run on that cache compiles nothing. CPU: with the layout kernel
(compile_only); GPU: with real GEMM calls. Warm-ups from call lists (op + shapes, planned without a GPU):
CPU: planning, errors and an NVRTC compile of a few small kernels into a temporary cache; GPU: a cache
warmed with no GPU visible serves the same calls on the GPU without a compile."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import deep_gemm
from deep_gemm import _C
from deep_gemm._warmup import KernelRecord, read_record
from deep_gemm._warmup_calls import PlanTarget, parse_call, plan_call
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
    assert 'this is not CUDA' in result.details[0]  # the compiler's log, which `failed` keeps to one line


def test_arch_override_is_used(recorded, cache_dir, capsys):
    assert main(['warmup', str(recorded), '--arch', 'sm_90x', '--quiet']) == 1
    assert 'layout_transpose_sf (sm_90x): ' in capsys.readouterr().err


def test_cli_prints_the_compiler_log_of_a_failed_kernel(recorded, cache_dir, tmp_path, capsys):
    line = json.loads(recorded.read_text().splitlines()[0])
    line.update(name='broken_kernel', symbol='broken', code='this is not CUDA;\n')
    record = tmp_path / 'broken.jsonl'
    record.write_text(json.dumps(line) + '\n')
    assert main(['warmup', str(record), '--quiet']) == 1
    err = capsys.readouterr().err
    assert 'failed: broken_kernel (sm_90a): ' in err
    assert '\n    ' in err and 'this is not CUDA' in err  # the compiler's log, indented under the failure


def test_malformed_record_names_the_line(tmp_path, capsys):
    path = tmp_path / 'bad.jsonl'
    path.write_text('\n{"format": 1, "name": "k"}\n')
    assert main(['warmup', str(path)]) == 1
    assert f'{path}:2 is not a DG_JIT_RECORD line' in capsys.readouterr().err
    with pytest.raises(ValueError, match=r':2 is not a DG_JIT_RECORD line'):
        read_record(str(path))


# Script prelude: counts the kernels the JIT compiles (its "compiling kernel" log lines) into `compiles`.
COUNT_COMPILES = """
    compiles = []
    class Count(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith('compiling kernel '):
                compiles.append(record.getMessage())
    logging.getLogger('deep_gemm').addHandler(Count())
    logging.getLogger('deep_gemm').setLevel(logging.INFO)
"""

GEMM_STEP = """
    import logging, torch, deep_gemm
""" + COUNT_COMPILES + """    torch.manual_seed(0)
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


# ---- warm-ups from call lists (op + shapes, planned without tensors or a GPU) ----

H200 = PlanTarget('sm_90a', 132, 232448, False)
# Three kernels: a BF16 GEMM, an FP8 GEMM and the scale layout kernel the FP8 op uses for row-major scales.
SMALL_CALLS = [{'op': 'bf16_gemm_nt', 'm': 200, 'n': 384, 'k': 256},
               {'op': 'fp8_gemm_nt', 'm': 200, 'n': 384, 'k': 256}]


@pytest.fixture
def nvrtc(monkeypatch):
    monkeypatch.setenv('DG_JIT_USE_NVRTC', '1')
    _C.reload_settings()


def test_call_list_warms_a_cache_then_finds_it(cache_dir, nvrtc, tmp_path, capsys):
    calls = tmp_path / 'calls.json'
    calls.write_text(json.dumps(SMALL_CALLS))
    args = ['warmup', '--calls', str(calls), '--arch', 'sm_90a', '--num-sms', '132', '--json']
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary['calls'], summary['kernels'], summary['compiled'], summary['cached'], summary['failed']) == (2, 3, 3, 0, [])
    assert summary['target'].startswith('sm_90a, 132 SMs, 232448 B')
    entries = _C.cache_list(str(cache_dir))
    assert sorted(e['name'] for e in entries) == ['layout_transpose_sf', 'sm90_bf16_gemm', 'sm90_fp8_gemm_1d2d']
    assert all(e['arch'] == 'sm_90a' and e['manifest_ok'] for e in entries)
    # The same list again, one call given as text: everything is found in the cache.
    assert main(['warmup', '--call', 'bf16_gemm_nt:m=200,n=384,k=256', '--calls', str(calls), '--num-sms', '132',
                 '--arch', 'sm_90a', '-q']) == 0
    assert capsys.readouterr().out.startswith(f'warmup: 3 calls -> 3 kernels into {cache_dir}: 0 compiled, 3 already cached')


def test_planned_kernels_follow_the_call_and_the_target():
    (fp8, layout) = plan_call({'op': 'fp8_gemm_nt', 'm': 200, 'n': 384, 'k': 256}, H200)
    assert fp8.name == 'sm90_fp8_gemm_1d2d' and '_m0_n384_k256' in fp8.symbol and fp8.arch == 'sm_90a'
    assert layout.symbol == 'deep_gemm_layout_transpose_sf'
    assert '_m200_n384_k0' in plan_call(parse_call('fp8_gemm_tn:m=200,n=384,k=256'), H200)[0].symbol  # tn: "mn"
    assert '_m0_n0_k256' in plan_call({**SMALL_CALLS[0], 'compiled_dims': 'k'}, H200)[0].symbol
    (with_c, _) = plan_call(parse_call('fp8_gemm_nt:m=200,n=384,k=256,c_dtype=float32'), H200)
    assert with_c.symbol.endswith('_cf32') or '_cf32_' in with_c.symbol
    (d32, _) = plan_call(parse_call('fp8_gemm_nt:m=200,n=384,k=256,recipe=1;1;128,d_dtype=float32'), H200)
    assert d32.name == 'sm90_fp8_gemm_1d1d'
    # K-grouped FP8: one kernel for all groups (each group's K is a runtime value).
    kg = plan_call(parse_call('k_grouped_fp8_gemm_nt_contiguous:m=256,n=512,ks=512;1024;0'), H200)
    assert [r.name for r in kg] == ['sm90_fp8_gemm_1d1d'] and '_k0_kgrouped' in kg[0].symbol
    _C.set_ignore_compile_dims(True)  # a process knob the plan follows, as the op does
    try:
        assert '_m0_n0_k0' in plan_call(SMALL_CALLS[0], H200)[0].symbol
    finally:
        _C.set_ignore_compile_dims(False)
    # The SM count is part of what the config choice sees: the plan passes the target's on.
    for sms in (132, 78):
        (kernel,) = plan_call(SMALL_CALLS[0], PlanTarget('sm_90a', sms, 232448, False))
        planned = _C._plan_gemm_call('bf16_gemm_nt', 200, 384, 256, num_sms=sms)
        assert [(kernel.name, kernel.symbol, kernel.code)] == planned


@pytest.mark.parametrize('call,error', [
    ({'op': 'fp8_gemm_xx', 'm': 1, 'n': 1, 'k': 1}, "unknown op 'fp8_gemm_xx'; known: fp8_gemm_nt"),
    ({'op': 'fp8_gemm_nt', 'm': 128, 'n': 128}, "missing field 'k'"),
    ({'m': 128}, "missing field 'op'"),
    ({'op': 'fp8_gemm_nt', 'm': 128, 'n': 128, 'k': 128, 'kk': 1}, "unknown fields ['kk']"),
    ('fp8_gemm_nt:m=128,n=x,k=128', "field 'n' must be an int; got 'x'"),
    ('fp8_gemm_nt:m=128,n', "a call field must be name=value"),
    ('fp8_gemm_nt:m=128,n=128,k=128,recipe=1;2;3', 'fp8_gemm_nt: recipe must be (1, 128, 128) (1D2D kernel, BF16 output), (1, 32, 32) (1D2D kernel, block-32 scales) or (1, 1, 128) (1D1D kernel, FP32 output) on SM90; got (1, 2, 3)'),
    ('fp8_gemm_nt:m=128,n=128,k=128,d_dtype=float32', 'd_dtype must be bfloat16 with this recipe'),
    ('bf16_gemm_nt:m=0,n=128,k=128', 'bf16_gemm_nt: m, n and k must be positive'),
    ('bf16_gemm_nt:m=128,n=128,k=128,recipe=1;1;128', 'bf16_gemm_nt: a BF16 GEMM takes no recipe'),
    ('k_grouped_fp8_gemm_nt_contiguous:m=64,n=64,k=100,ks=128', 'ks must have num_groups = 1 values summing to k = 100'),
    ('m_grouped_fp8_gemm_nt_masked:m=256,n=512,k=512,num_groups=2,c_dtype=bfloat16', 'the grouped modes take no C'),
    ('layout_transpose_sf:m=3', 'layout_transpose_sf is a helper kernel and takes no fields'),
    ('m_grouped_bf16_gemm_nt_contiguous:m=256,n=256,k=256,use_psum_layout=yes', "'use_psum_layout' must be true or false"),
    ('fp8_gemm_nt:m=128,n=128,k=128,block_size_multiple_of=512;1', 'no kernel config has BLOCK_M a multiple of 512'),
])
def test_bad_calls_fail_clearly(call, error):
    with pytest.raises((ValueError, TypeError, RuntimeError)) as info:
        plan_call(parse_call(call) if isinstance(call, str) else call, H200)
    assert error in str(info.value)


def test_failed_calls_are_listed_and_the_rest_is_built(cache_dir, nvrtc, capsys):
    assert main(['warmup', '--call', 'layout_transpose_sf', '--call', 'nope:m=1', '--call', 'bf16_gemm_nt:m=1,n=2',
                 '--arch', 'sm_90a', '-q']) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith('warmup: 3 calls -> 1 kernels into')
    assert "failed: call 2 'nope:m=1': unknown op 'nope'" in captured.err
    assert "failed: call 3 'bf16_gemm_nt:m=1,n=2': missing field 'k'" in captured.err
    assert [e['name'] for e in _C.cache_list(str(cache_dir))] == ['layout_transpose_sf']
    result = deep_gemm.warmup(calls=[SMALL_CALLS[0]], arch='sm90', progress=False)  # not an arch name
    assert result.failed and "arch must look like 'sm_90a'; got 'sm90'" in result.failed[0]


def test_warmup_needs_something_to_warm(capsys):
    assert main(['warmup']) == 2
    assert 'nothing to warm' in capsys.readouterr().err


# Runs the calls of WARM_CALLS through the ops with random inputs (values do not matter here) and prints the
# number of kernels compiled.
WARM_CALLS = [
    {'op': 'bf16_gemm_nt', 'm': 200, 'n': 384, 'k': 256},
    {'op': 'bf16_gemm_tn', 'm': 256, 'n': 512, 'k': 384, 'd_dtype': 'float32'},
    {'op': 'fp8_gemm_nt', 'm': 64, 'n': 7168, 'k': 2048},
    {'op': 'fp8_gemm_nt', 'm': 200, 'n': 384, 'k': 256, 'recipe': [1, 1, 128], 'd_dtype': 'float32', 'c_dtype': 'float32'},
    {'op': 'fp8_gemm_nt', 'm': 300, 'n': 2112, 'k': 1536, 'recipe': [1, 32, 32]},
    {'op': 'm_grouped_fp8_gemm_nt_masked', 'num_groups': 4, 'max_m': 256, 'n': 512, 'k': 1024, 'expected_m': 100},
]
RUN_CALLS = """
    import json, logging, sys, torch, deep_gemm
""" + COUNT_COMPILES + """    cuda = dict(device='cuda')
    def fp8(*shape): return torch.randn(*shape, **cuda).to(torch.float8_e4m3fn)
    def sf(*shape): return torch.rand(*shape, **cuda) + 0.5  # row-major (K-major) scales: the op converts them
    def blocks(x): return (x + 127) // 128
    for c in json.loads(sys.argv[1]):
        op, n, k = c['op'], c['n'], c['k']
        if op == 'bf16_gemm_nt':
            m = c['m']
            deep_gemm.bf16_gemm_nt(torch.randn(m, k, dtype=torch.bfloat16, **cuda), torch.randn(n, k, dtype=torch.bfloat16, **cuda),
                                   torch.empty(m, n, dtype=torch.bfloat16, **cuda))
        elif op == 'bf16_gemm_tn':
            m = c['m']
            deep_gemm.bf16_gemm_tn(torch.randn(k, m, dtype=torch.bfloat16, **cuda), torch.randn(k, n, dtype=torch.bfloat16, **cuda),
                                   torch.empty(m, n, dtype=torch.float32, **cuda))
        elif op == 'fp8_gemm_nt' and c.get('recipe') == [1, 1, 128]:
            m = c['m']
            deep_gemm.fp8_gemm_nt((fp8(m, k), sf(m, blocks(k))), (fp8(n, k), sf(n, blocks(k))),
                                  torch.empty(m, n, dtype=torch.float32, **cuda), c=torch.randn(m, n, **cuda), recipe=(1, 1, 128))
        elif op == 'fp8_gemm_nt' and c.get('recipe') == [1, 32, 32]:
            m, b32 = c['m'], lambda x: (x + 31) // 32
            deep_gemm.fp8_gemm_nt((fp8(m, k), sf(m, b32(k))), (fp8(n, k), sf(b32(n), b32(k))),
                                  torch.empty(m, n, dtype=torch.bfloat16, **cuda), recipe=(1, 32, 32))
        elif op == 'fp8_gemm_nt':
            m = c['m']
            deep_gemm.fp8_gemm_nt((fp8(m, k), sf(m, blocks(k))), (fp8(n, k), sf(blocks(n), blocks(k))),
                                  torch.empty(m, n, dtype=torch.bfloat16, **cuda))
        elif op == 'm_grouped_fp8_gemm_nt_masked':
            g, m = c['num_groups'], c['max_m']
            masked_m = torch.tensor([m, 0, 37, m // 2][:g], dtype=torch.int32, **cuda)
            deep_gemm.m_grouped_fp8_gemm_nt_masked((fp8(g, m, k), sf(g, m, blocks(k))), (fp8(g, n, k), sf(g, blocks(n), blocks(k))),
                                                   torch.empty(g, m, n, dtype=torch.bfloat16, **cuda), masked_m, c['expected_m'])
        else:
            raise SystemExit(f'no runner for {op}')
    torch.cuda.synchronize()
    print(len(compiles))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_call_list_warmed_without_a_gpu_serves_a_gpu_run(tmp_path):
    """The warm-up sees no GPU (CUDA_VISIBLE_DEVICES=''): it plans for --arch and this GPU's SM count; a run of
    the same calls on the GPU then compiles nothing."""
    calls = tmp_path / 'calls.json'
    calls.write_text(json.dumps(WARM_CALLS))
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    smem = _C.device_info(0)['max_smem_per_block_optin']
    warm = run_python(f"import sys; from deep_gemm.cli import main; sys.exit(main(['warmup', '--calls', {str(calls)!r}, "
                      f"'--arch', 'sm_90a', '--num-sms', '{num_sms}', '--smem-optin', '{smem}', '--json']))",
                      DG_JIT_CACHE_DIR=str(tmp_path / 'cache'), CUDA_VISIBLE_DEVICES='')
    assert warm.returncode == 0, warm.stderr + warm.stdout
    summary = json.loads(warm.stdout)
    assert 'given or default values' in summary['target'] and summary['failed'] == [] and summary['compiled'] == summary['kernels'] > 0
    run = subprocess.run([sys.executable, '-c', textwrap.dedent(RUN_CALLS), json.dumps(WARM_CALLS)], capture_output=True,
                         text=True, timeout=600, env={**os.environ, 'DG_JIT_CACHE_DIR': str(tmp_path / 'cache')})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == '0', run.stdout + run.stderr  # every kernel came from the warmed cache


def test_progress_off_a_terminal_prints_one_line_per_tenth(capsys):
    from deep_gemm._warmup import WarmupResult, _Progress
    result = WarmupResult()
    bar = _Progress(25, enabled=True)  # capsys's stderr is not a terminal
    for i in range(25):
        result.cached += 1
        bar.update(result)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    # The first kernel (decile 0), then each further tenth up to 25/25: 11 lines, counts and tqdm's meter in each.
    assert len(lines) == 11, lines
    assert lines[0].startswith('warmup:') and '1/25' in lines[0] and '0 compiled, 1 cached, 0 failed' in lines[0]
    assert '25/25' in lines[-1] and '100%' in lines[-1] and '25 cached' in lines[-1]
    assert not any('\r' in line for line in lines)


def test_progress_disabled_prints_nothing(capsys):
    from deep_gemm._warmup import WarmupResult, _Progress
    bar = _Progress(5, enabled=False)
    bar.update(WarmupResult(cached=5))
    bar.close()
    assert capsys.readouterr().err == ''
