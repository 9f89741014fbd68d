"""The overlapped masked FP8 GEMM's surface on the CPU (m_grouped_fp8_gemm_nt_masked's max_block_n,
enable_overlap and signal; docs/compat_2_8.md): binding and positional forms, validation on CPU and meta tensors,
the torch.library form under torch.compile, and the kernels it plans (the tile-signal variant; the default call's
source unchanged). The GPU side: test_masked_overlap_gpu.py."""
import inspect
import re

import pytest
import torch

import deep_gemm
from deep_gemm import _C
from compile_check import traced_targets

OP = 'm_grouped_fp8_gemm_nt_masked'
FP8, F32, BF16, I32 = torch.float8_e4m3fn, torch.float32, torch.bfloat16, torch.int32


def _args(device, g=4, m=100, n=256, k=256):
    a = (torch.empty(g, m, k, dtype=FP8, device=device), torch.ones(g, m, k // 128, dtype=F32, device=device))
    b = (torch.empty(g, n, k, dtype=FP8, device=device), torch.ones(g, n // 128, k // 128, dtype=F32, device=device))
    d = torch.empty(g, m, n, dtype=BF16, device=device)
    masked_m = torch.zeros(g, dtype=I32, device=device)
    return a, b, d, masked_m


def _signal(device, g=4, m=100, extra=0, dtype=I32):
    return torch.zeros(g * ((m + 63) // 64) + extra, dtype=dtype, device=device)


def test_parameters_follow_every_existing_one():
    params = list(inspect.signature(deep_gemm.m_grouped_fp8_gemm_nt_masked).parameters)
    assert params == ['a', 'b', 'd', 'masked_m', 'expected_m', 'recipe', 'recipe_a', 'recipe_b', 'compiled_dims',
                      'disable_ue8m0_cast', 'epilogue', 'max_block_n', 'enable_overlap', 'signal']
    sig = inspect.signature(deep_gemm.m_grouped_fp8_gemm_nt_masked)
    assert sig.parameters['max_block_n'].default == 256 and sig.parameters['enable_overlap'].default is False
    assert sig.parameters['signal'].default is None
    # The C entry: the same parameters, without the Python-only epilogue.
    assert _C.m_grouped_fp8_gemm_nt_masked.__text_signature__.endswith(
        "disable_ue8m0_cast=False, max_block_n=256, enable_overlap=False, signal=None)")
    assert 'int max_block_n=256, bool enable_overlap=False, Tensor(b!)? signal=None) -> ()' in \
        str(torch.ops.deep_gemm.m_grouped_fp8_gemm_nt_masked.default._schema)


def test_positional_forms_bind_as_before():
    """DeepGEMM's positional forms (up to disable_ue8m0_cast, and 2.8's epilogue after it) still validate and
    return None; a meta call goes through the torch.library form."""
    a, b, d, masked_m = _args('meta')
    fn = deep_gemm.m_grouped_fp8_gemm_nt_masked
    assert fn(a, b, d, masked_m, 8) is None
    assert fn(a, b, d, masked_m, 8, (1, 128, 128), None, None, 'nk', False) is None
    assert fn(a, b, d, masked_m, 8, None, None, None, 'nk', False, None) is None
    assert fn(a, b, d, masked_m, 8, max_block_n=160) is None


@pytest.mark.parametrize('device', ['cpu', 'meta'])
def test_validation(device):
    fn = deep_gemm.m_grouped_fp8_gemm_nt_masked
    a, b, d, masked_m = _args(device)
    sig = _signal(device)
    with pytest.raises(ValueError, match=rf'^{OP}: enable_overlap=True needs signal, an int32 tensor of at least G \* ceil\(M / 64\) '
                                         r'zeros; got None'):
        fn(a, b, d, masked_m, 8, enable_overlap=True)
    with pytest.raises(ValueError, match=rf'^{OP}: signal is only written with enable_overlap=True'):
        fn(a, b, d, masked_m, 8, signal=sig)
    with pytest.raises(TypeError, match=rf'^{OP}: signal must have dtype int32'):
        fn(a, b, d, masked_m, 8, enable_overlap=True, signal=_signal(device, dtype=torch.int64))
    with pytest.raises(ValueError, match=rf'^{OP}: signal must be a 1-D tensor'):
        fn(a, b, d, masked_m, 8, enable_overlap=True, signal=sig.view(2, -1))
    with pytest.raises(ValueError, match=rf'^{OP}: signal must be contiguous'):
        fn(a, b, d, masked_m, 8, enable_overlap=True, signal=_signal(device, extra=8)[::2])
    with pytest.raises(ValueError, match=rf'^{OP}: signal must have at least G \* ceil\(M / 64\) = 4 \* 2 = 8 elements; got shape \[7\]'):
        fn(a, b, d, masked_m, 8, enable_overlap=True, signal=sig[:7])
    with pytest.raises(ValueError, match=rf'^{OP}: max_block_n is the largest BLOCK_N .* at least 16; got 8'):
        fn(a, b, d, masked_m, 8, max_block_n=8)
    with pytest.raises(TypeError, match=rf'^{OP}: max_block_n must be an int; got float'):
        fn(a, b, d, masked_m, 8, max_block_n=128.0)
    a0, b0, d0, m0 = _args(device, k=0)
    with pytest.raises(ValueError, match=rf'^{OP}: enable_overlap=True needs M, N, K and G > 0 .*got G=4, M=100, N=256, K=0'):
        fn(a0, b0, d0, m0, 8, enable_overlap=True, signal=sig)
    if device == 'cpu':
        # A valid call: validation passes, then the CPU kernel says it needs CUDA.
        with pytest.raises(RuntimeError, match=rf'^{OP}: requires CUDA tensors'):
            fn(a, b, d, masked_m, 8, enable_overlap=True, signal=sig)
        with pytest.raises(RuntimeError, match=rf'^{OP}: requires CUDA tensors'):
            fn(a, b, d, masked_m, 8, max_block_n=64)
        with pytest.raises(ValueError, match=rf'^{OP}: the output signal overlaps the input d'):
            fn(a, b, d, masked_m, 8, enable_overlap=True, signal=d.view(torch.int32).view(-1))
    else:
        # The torch.library form (meta tensors take it) cannot return the tile.
        with pytest.raises(NotImplementedError, match=rf'^{OP}: enable_overlap=True runs eagerly only'):
            fn(a, b, d, masked_m, 8, enable_overlap=True, signal=sig)


def test_torch_ops_form_takes_the_new_arguments():
    a, b, d, masked_m = _args('meta')
    op = torch.ops.deep_gemm.m_grouped_fp8_gemm_nt_masked
    assert op(a[0], a[1], b[0], b[1], d, masked_m, 8, max_block_n=128) is None
    with pytest.raises(NotImplementedError, match='enable_overlap=True runs eagerly only'):
        op(a[0], a[1], b[0], b[1], d, masked_m, 8, enable_overlap=True, signal=_signal('meta'))
    with pytest.raises(ValueError, match='max_block_n is the largest BLOCK_N'):
        op(a[0], a[1], b[0], b[1], d, masked_m, 8, max_block_n=0)


def test_compile_fullgraph_traces_max_block_n():
    a, b, d, masked_m = _args('cpu')

    def f(a0, sfa, b0, sfb, d, masked_m):
        deep_gemm.m_grouped_fp8_gemm_nt_masked((a0, sfa), (b0, sfb), d, masked_m, 8, max_block_n=128)
        return d

    targets = traced_targets(f, (a[0], a[1], b[0], b[1], d, masked_m), f'{OP}: requires CUDA tensors')
    assert any(f'deep_gemm.{OP}' in t for t in targets), targets


def test_compile_with_overlap_says_eager_only():
    a, b, d, masked_m = _args('cpu')
    sig = _signal('cpu')

    def f(a0, sfa, b0, sfb, d, masked_m, sig):
        return deep_gemm.m_grouped_fp8_gemm_nt_masked((a0, sfa), (b0, sfb), d, masked_m, 8, enable_overlap=True, signal=sig)

    torch._dynamo.reset()
    with pytest.raises(Exception, match='enable_overlap=True runs eagerly only'):
        torch.compile(f, backend='aot_eager', fullgraph=True)(a[0], a[1], b[0], b[1], d, masked_m, sig)


# ---- planned kernels -----------------------------------------------------------------------------------

def _plan(**kw):
    (_, symbol, code), = _C._plan_gemm_call(OP, 256, 7168, 2048, num_groups=16, expected_m=64, **kw)
    return symbol, code


def _tile(symbol):
    bm, bn = re.search(r'_bm(\d+)_bn(\d+)_', symbol).groups()
    return int(bm), int(bn)


def test_planned_overlap_kernel_signals():
    symbol, code = _plan(enable_overlap=True)
    assert symbol.endswith('_signal'), symbol
    assert 'DG_PARAM_DECLS(DG_SM90_FP8_GEMM_1D2D_SIGNAL_PARAMS)' in code and ', nullptr, nullptr, tile_signal' in code
    assert ', 128u, true>(' in code  # (the granularity, at its default, is named before the flag)
    # The same call without overlap is today's kernel: the default arguments, given or not, plan the same text,
    # with no trace of the signal.
    plain_symbol, plain_code = _plan()
    assert (plain_symbol, plain_code) == _plan(max_block_n=256, enable_overlap=False) == _plan(max_block_n=1000)
    assert 'signal' not in plain_code and 'signal' not in plain_symbol
    assert _tile(symbol) == _tile(plain_symbol)
    assert plain_code.replace(plain_symbol, '') == \
        code.replace(symbol, '').replace(', 128u, true>(', '>(').replace(', nullptr, nullptr, tile_signal', '') \
            .replace('_SIGNAL_PARAMS', '_PARAMS').replace(', 128u>::kSmemBytes', '>::kSmemBytes')


@pytest.mark.parametrize('max_block_n', [16, 64, 100, 160])
def test_planned_tile_honours_max_block_n(max_block_n):
    for overlap in (False, True):
        _, bn = _tile(_plan(max_block_n=max_block_n, enable_overlap=overlap)[0])
        assert bn <= max_block_n and bn % 16 == 0, (max_block_n, bn)
    assert _tile(_plan()[0])[1] > 64  # (the cap matters for this shape)


def test_forced_config_above_max_block_n_is_refused(monkeypatch):
    monkeypatch.setenv('DG_FP8_GEMM_CONFIG', '64,128,0,0,0')
    deep_gemm.reload_settings()
    try:
        with pytest.raises(RuntimeError, match=r'BLOCK_N 128 .* exceeds max_block_n 64'):
            _plan(max_block_n=64)
        assert _tile(_plan(max_block_n=128)[0]) == (64, 128)
    finally:
        monkeypatch.undo()
        deep_gemm.reload_settings()


def test_warmup_call_plans_the_overlap_kernel():
    from deep_gemm._warmup_calls import plan_call, plan_target
    target = plan_target('sm_90a', 132, 232448)
    call = {'op': OP, 'max_m': 256, 'n': 7168, 'k': 2048, 'num_groups': 16, 'expected_m': 64}
    plain = [r.symbol for r in plan_call(call, target)]
    signal = [r.symbol for r in plan_call({**call, 'enable_overlap': True, 'max_block_n': 64}, target)]
    assert not any(s.endswith('_signal') for s in plain), plain
    gemm = [s for s in signal if s.endswith('_signal')]
    assert len(gemm) == 1 and _tile(gemm[0])[1] <= 64, signal


def test_compile_mode_fields_carry_the_overlap_arguments():
    """SGLang's set_compile_mode(1) warm-up (deep_gemm/_compat025.py) plans the kernel the call would run."""
    from deep_gemm._compat025 import plan_fields
    a, b, d, masked_m = _args('meta')
    sig = _signal('meta')
    fields = plan_fields(OP, (a, b, d, masked_m, 8, None, None, None, 'nk', False, 160, True, sig))
    assert fields['max_block_n'] == 160 and fields['enable_overlap'] is True
    assert 'max_block_n' not in plan_fields(OP, (a, b, d, masked_m, 8))
