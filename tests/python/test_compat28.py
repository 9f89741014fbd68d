"""DeepGEMM 2.8 call forms and the small parity fixes (docs/compat_2_8.md), on CPU and meta tensors:
alpha= / epilogue= on the GEMM wrappers, use_deterministic_algorithms, shutdown, the stored mk alignment,
the testing / utils names, and the K-grouped FP8 scale shapes."""

import io
import os
import subprocess
import sys

import pytest
import torch

import deep_gemm
from deep_gemm import _compat28
from compile_check import traced_targets

FP8, F32, BF16 = torch.float8_e4m3fn, torch.float32, torch.bfloat16


def _fp8_operands(m=64, n=256, k=256, device='cpu'):
    a = (torch.empty(m, k, dtype=FP8, device=device), torch.ones(m, k // 128, dtype=F32, device=device))
    b = (torch.empty(n, k, dtype=FP8, device=device), torch.full((n // 128, k // 128), 3.0, dtype=F32, device=device))
    return a, b, torch.empty(m, n, dtype=BF16, device=device)


# ---- alpha= / epilogue= ----------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'fp8_gemm_nn', 'fp8_gemm_tn', 'fp8_gemm_tt',
                                  'bf16_gemm_nt', 'bf16_gemm_nn', 'bf16_gemm_tn', 'bf16_gemm_tt'])
def test_dense_gemms_take_alpha_and_epilogue_last(name):
    import inspect
    params = list(inspect.signature(getattr(deep_gemm, name)).parameters.values())
    assert [p.name for p in params[-2:]] == ['alpha', 'epilogue']
    assert params[-2].default is None and params[-1].default is None


@pytest.mark.parametrize('name', ['m_grouped_fp8_gemm_nt_contiguous', 'm_grouped_fp8_gemm_nt_masked'])
def test_grouped_fp8_gemms_take_epilogue_last(name):
    """epilogue after every 2.6.1 parameter (only the SGLang fork's keywords of the masked GEMM follow it)."""
    import inspect
    params = list(inspect.signature(getattr(deep_gemm, name)).parameters.values())
    if name == 'm_grouped_fp8_gemm_nt_masked':
        assert [p.name for p in params[-3:]] == ['max_block_n', 'enable_overlap', 'signal']
        params = params[:-3]
    assert params[-1].name == 'epilogue' and params[-1].default is None
    assert 'alpha' not in [p.name for p in params]


def test_skip_head_mid_takes_no_2_8_keywords():
    import inspect
    params = [p.name for p in inspect.signature(deep_gemm.fp8_gemm_nt_skip_head_mid).parameters.values()]
    assert 'alpha' not in params and 'epilogue' not in params


def test_fp8_alpha_keeps_the_sfb_dtype_check():
    # Scaling an int32 (packed UE8M0) sfb would turn it into floats that pass the op's float32 check.
    a, b, d = _fp8_operands()
    packed = (b[0], b[1].to(torch.int32))
    with pytest.raises(TypeError, match='fp8_gemm_nt: sfb must have dtype float32 to take alpha; got int32'):
        deep_gemm.fp8_gemm_nt(a, packed, d, alpha=2.0)


def _capture(monkeypatch, name):
    calls = []
    monkeypatch.setitem(deep_gemm._wrappers.__dict__, f'_c_{name}', lambda *args: calls.append(args))
    return calls


@pytest.mark.parametrize('alpha', [None, 1.0, 1])
def test_fp8_alpha_one_passes_the_arguments_unchanged(monkeypatch, alpha):
    calls = _capture(monkeypatch, 'fp8_gemm_nt')
    a, b, d = _fp8_operands()
    deep_gemm.fp8_gemm_nt(a, b, d, alpha=alpha)
    assert len(calls) == 1 and calls[0][1] is b  # the very same pair: today's call


def test_fp8_alpha_scales_b_scales(monkeypatch):
    calls = _capture(monkeypatch, 'fp8_gemm_nt')
    a, b, d = _fp8_operands()
    deep_gemm.fp8_gemm_nt(a, b, d, None, None, None, None, 'nk', False, 0.5)  # 2.8's positional alpha
    sfb = calls[0][1][1]
    assert calls[0][1][0] is b[0]
    assert torch.equal(sfb, b[1] * 0.5) and torch.equal(b[1], torch.full_like(b[1], 3.0))  # caller's scales untouched


def test_fp8_alpha_reaches_the_kernel_validation():
    a, b, d = _fp8_operands()
    with pytest.raises(RuntimeError, match='fp8_gemm_nt: requires CUDA tensors'):
        deep_gemm.fp8_gemm_nt(a, b, d, alpha=2.0)
    with pytest.raises(TypeError, match='fp8_gemm_nt: alpha must be a real number or None; got str'):
        deep_gemm.fp8_gemm_nt(a, b, d, alpha='2')
    with pytest.raises(TypeError, match='alpha must be a real number'):
        deep_gemm.fp8_gemm_nt(a, b, d, alpha=True)


@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'bf16_gemm_tn', 'm_grouped_fp8_gemm_nt_contiguous', 'm_grouped_fp8_gemm_nt_masked'])
def test_epilogue_other_than_none_is_rejected(name):
    fn = getattr(deep_gemm, name)
    with pytest.raises(NotImplementedError, match=rf'^{name}: epilogue must be None \(or kind 0\).*got \'swiglu\''):
        fn(None, None, None, None, None, epilogue='swiglu')
    with pytest.raises(NotImplementedError, match='epilogue must be None'):
        fn(None, None, None, None, None, epilogue=2)


def test_epilogue_none_or_kind_zero_is_the_plain_call(monkeypatch):
    calls = _capture(monkeypatch, 'fp8_gemm_nt')
    a, b, d = _fp8_operands()
    deep_gemm.fp8_gemm_nt(a, b, d, epilogue=None)
    deep_gemm.fp8_gemm_nt(a, b, d, epilogue=0)
    assert len(calls) == 2 and all(c[1] is b for c in calls)


def test_bf16_alpha_one_runs_our_kernel(monkeypatch):
    calls = _capture(monkeypatch, 'bf16_gemm_nt')
    a, b, d = torch.empty(8, 64, dtype=BF16), torch.empty(16, 64, dtype=BF16), torch.empty(8, 16, dtype=BF16)
    deep_gemm.bf16_gemm_nt(a, b, d, alpha=1.0)
    deep_gemm.bf16_gemm_nt(a, b, d, None, 'nk', None, None)
    assert len(calls) == 2


@pytest.mark.parametrize('lay', ['nt', 'nn', 'tn', 'tt'])
def test_bf16_alpha_goes_to_cublaslt(monkeypatch, lay):
    calls = _capture(monkeypatch, f'bf16_gemm_{lay}')
    a, b, d = torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16)
    # Validated as bf16_gemm_<lay> (errors under its name), then the cuBLASLt route's CPU kernel says it needs
    # CUDA; our kernel's entry is not called.
    with pytest.raises(RuntimeError, match=f'^bf16_gemm_{lay}: requires CUDA tensors'):
        getattr(deep_gemm, f'bf16_gemm_{lay}')(a, b, d, alpha=2.0)
    with pytest.raises(ValueError, match=f'^bf16_gemm_{lay}: '):
        getattr(deep_gemm, f'bf16_gemm_{lay}')(a, b, torch.empty(64, 65, dtype=BF16), alpha=2.0)
    assert calls == []


def _bf16_layout_operands(lay, m, n, k, row_pad, device):
    """a, b, d of bf16_gemm_<lay> for an M x N x K problem; MN-major operands ('t' a, 'n' b) are stored [K, M]
    / [K, N] with rows of M + row_pad / N + row_pad elements."""
    def stored(rows, cols, mn_major):
        if not mn_major:
            return torch.empty(rows, cols, dtype=BF16, device=device)
        return torch.empty(cols, rows + row_pad, dtype=BF16, device=device)[:, :rows]
    return stored(m, k, lay[0] == 't'), stored(n, k, lay[1] == 'n'), torch.empty(m, n, dtype=BF16, device=device)


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type and message are compared)
        return type(e), str(e)
    return None


@pytest.mark.parametrize('device', ['meta', 'cpu'])
@pytest.mark.parametrize('lay', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('row_pad', [0, 7])
def test_bf16_alpha_accepts_exactly_what_the_plain_call_accepts(lay, row_pad, device):
    """M = N = 257: an MN-major operand's rows are 514 bytes (row_pad 0: not 16-byte aligned, rejected by both
    routes with the same ValueError) or padded to 264 elements (row_pad 7: accepted by both; meta validates
    only, CPU then stops at the device check)."""
    fn = getattr(deep_gemm, f'bf16_gemm_{lay}')
    a, b, d = _bf16_layout_operands(lay, 257, 257, 320, row_pad, device)
    plain, scaled = _error_of(lambda: fn(a, b, d)), _error_of(lambda: fn(a, b, d, alpha=0.75))
    assert plain == scaled, (plain, scaled)
    if lay == 'nt' or row_pad == 7:  # accepted
        if device == 'meta':
            assert plain is None
        else:
            assert plain[0] is RuntimeError and plain[1].startswith(f'bf16_gemm_{lay}: requires CUDA tensors'), plain
    else:
        assert plain[0] is ValueError and plain[1].startswith(f'bf16_gemm_{lay}: ') and 'multiple of 16 bytes' in plain[1], plain


def test_bf16_alpha_meta_validates_and_traces():
    a, b, d = (torch.empty(64, 64, dtype=BF16, device='meta') for _ in range(3))
    deep_gemm.bf16_gemm_nt(a, b, d, alpha=0.25)  # meta: validation only
    def f(a, b, d):
        deep_gemm.bf16_gemm_nt(a, b, d, alpha=0.25)
        deep_gemm.fp8_gemm_nt(fa, fb, fd, alpha=0.5)
        return d

    fa, fb, fd = _fp8_operands()
    targets = ' '.join(traced_targets(f, [torch.empty(64, 64, dtype=BF16) for _ in range(3)], 'requires CUDA tensors'))
    assert 'deep_gemm._cublaslt_gemm_scaled' in targets and 'deep_gemm.fp8_gemm_nt' in targets, targets


# ---- use_deterministic_algorithms / shutdown ------------------------------------------------------------

def test_use_deterministic_algorithms_is_stored_and_checked():
    old = deep_gemm.get_deterministic_algorithms()
    try:
        deep_gemm.use_deterministic_algorithms(True)
        assert deep_gemm.get_deterministic_algorithms() is True
        deep_gemm.use_deterministic_algorithms(False)
        assert deep_gemm.get_deterministic_algorithms() is False
        with pytest.raises(TypeError, match='enabled must be a bool; got int'):
            deep_gemm.use_deterministic_algorithms(1)
    finally:
        deep_gemm.use_deterministic_algorithms(old)
    assert 'split-K' in deep_gemm.use_deterministic_algorithms.__doc__


def test_shutdown_twice_without_gpu():
    deep_gemm.shutdown()
    deep_gemm.shutdown()


def test_shutdown_runs_at_exit():
    code = ('import deep_gemm, deep_gemm._compat28 as c\n'
            'real = c._C._cublaslt_shutdown\n'
            'class Spy:\n'
            '    def __getattr__(self, n): return getattr(deep_gemm._C, n)\n'
            '    def _cublaslt_shutdown(self): print("released"); real()\n'
            'c._C = Spy()\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'released'


# ---- mk alignment ------------------------------------------------------------------------------------------

@pytest.fixture
def restore_alignment():
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    yield
    deep_gemm.set_mk_alignment_for_contiguous_layout(old)


def test_set_mk_alignment_stores_the_value(restore_alignment):
    for value in (256, 384, 64, 128):
        deep_gemm.set_mk_alignment_for_contiguous_layout(value)
        assert deep_gemm.get_mk_alignment_for_contiguous_layout() == value
        assert deep_gemm.get_m_alignment_for_contiguous_layout() == value
    deep_gemm.set_mk_alignment_for_contiguous_layout(new_value=256)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
    for bad in (0, -128):
        with pytest.raises(ValueError, match='the alignment must be positive'):
            deep_gemm.set_mk_alignment_for_contiguous_layout(bad)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256


def test_theoretical_alignment_takes_expected_m_and_num_groups():
    base = deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout()
    assert base == 128
    assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(1024, 8) == base
    assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(expected_m=7, num_groups=256) == base
    with pytest.raises(ValueError, match='num_groups must be positive or None; got 0'):
        deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(128, 0)


@pytest.mark.parametrize('device', ['cpu', 'meta'])
@pytest.mark.parametrize('family', ['fp8', 'bf16'])
def test_contiguous_ops_reject_an_alignment_they_cannot_honour(restore_alignment, device, family):
    m, n, k, g = 256, 128, 128, 2
    layout = torch.zeros(m, dtype=torch.int32, device=device)
    if family == 'fp8':
        a = (torch.empty(m, k, dtype=FP8, device=device), torch.ones(m, 1, dtype=F32, device=device))
        b = (torch.empty(g, n, k, dtype=FP8, device=device), torch.ones(g, 1, 1, dtype=F32, device=device))
        fn, name = deep_gemm.m_grouped_fp8_gemm_nt_contiguous, 'm_grouped_fp8_gemm_nt_contiguous'
    else:
        a, b = torch.empty(m, k, dtype=BF16, device=device), torch.empty(g, n, k, dtype=BF16, device=device)
        fn, name = deep_gemm.m_grouped_bf16_gemm_nt_contiguous, 'm_grouped_bf16_gemm_nt_contiguous'
    d = torch.empty(m, n, dtype=BF16, device=device)
    deep_gemm.set_mk_alignment_for_contiguous_layout(64)
    with pytest.raises(NotImplementedError, match=rf'^{name}: the SM90 grouped kernels need groups aligned to a multiple of 128 '
                                                  r'rows \(their BLOCK_M\); get_mk_alignment_for_contiguous_layout\(\) is 64'):
        fn(a, b, d, layout)
    deep_gemm.set_mk_alignment_for_contiguous_layout(256)  # a multiple of 128: honoured (validation passes)
    if device == 'meta':
        fn(a, b, d, layout)
    else:
        with pytest.raises(RuntimeError, match='requires CUDA tensors'):
            fn(a, b, d, layout)


# ---- testing / utils names ---------------------------------------------------------------------------------

def test_testing_names():
    from deep_gemm.testing import empty_suppress, suppress_stdout_stderr  # noqa: F401
    from deep_gemm.testing.numeric import assert_bitwise_equal
    assert deep_gemm.testing.assert_bitwise_equal is assert_bitwise_equal
    assert deep_gemm.testing.utils.assert_bitwise_equal is assert_bitwise_equal
    x = torch.tensor([1.0, float('nan')])
    assert_bitwise_equal(x, x.clone(), 'same')
    with pytest.raises(AssertionError, match='^lbl: 2 of 8 bytes differ'):
        assert_bitwise_equal(x, torch.tensor([1.0, 2.0]), 'lbl')  # 2.0 and the NaN share two low zero bytes
    with empty_suppress() as ctx:
        assert ctx is not None


def test_suppress_stdout_stderr_silences_file_descriptors():
    code = ('import os, sys\n'
            'from deep_gemm.testing import suppress_stdout_stderr\n'
            'with suppress_stdout_stderr():\n'
            '    print("hidden"); os.write(1, b"hidden-fd\\n"); os.write(2, b"hidden-err\\n")\n'
            'print("shown")\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout == 'shown\n' and out.stderr == ''


def test_dist_names(monkeypatch, capsys):
    from deep_gemm.utils.dist import dist_print, init_dist, uneven_all_gather
    assert deep_gemm.utils.init_dist is init_dist and deep_gemm.init_dist is init_dist
    assert deep_gemm.utils.uneven_all_gather is uneven_all_gather and deep_gemm.uneven_all_gather is uneven_all_gather
    assert 'init_dist' in deep_gemm.__all__ and 'uneven_all_gather' in deep_gemm.utils.__all__
    dist_mod = deep_gemm.utils.dist
    monkeypatch.setattr(dist_mod, '_local_rank', None)
    with pytest.raises(RuntimeError, match='dist_print: call deep_gemm.utils.dist.init_dist first'):
        dist_print('x')
    barriers = []
    monkeypatch.setattr(dist_mod.dist, 'barrier', lambda: barriers.append(1))
    for rank, once, shown in ((0, True, True), (1, True, False), (1, False, True)):
        monkeypatch.setattr(dist_mod, '_local_rank', rank)
        dist_print('hello', once_in_node=once)
        assert (capsys.readouterr().out == 'hello\n') is shown
    assert len(barriers) == 3


# ---- K-grouped FP8 scale shapes -------------------------------------------------------------------------

def _k_grouped_args(m, n, ks, sfa, sfb, device):
    sum_k = sum(ks)
    a = (torch.empty(sum_k * m, dtype=FP8, device=device), sfa)
    b = (torch.empty(sum_k * n, dtype=FP8, device=device), sfb)
    d = torch.empty(len(ks), m, n, dtype=F32, device=device)
    return a, b, d, ks, torch.tensor(ks, dtype=torch.int32).to(device)


@pytest.mark.parametrize('device', ['cpu', 'meta'])
def test_k_grouped_fp8_takes_deepgemm_scale_shapes(device):
    m, n, ks = 256, 384, [128, 256, 256]  # sum(ks)/128 = 5
    ok = 'requires CUDA tensors'
    forms = {
        'deepgemm (.T of a [5, M] buffer)': (torch.ones(5, m, device=device).T, torch.ones(5, n, device=device).T),
        'deepgemm (contiguous)': (torch.ones(m, 5, device=device), torch.ones(n, 5, device=device)),
        'ours': (torch.ones(5, m, device=device), torch.ones(5, n, device=device)),
        'mixed': (torch.ones(m, 5, device=device), torch.ones(5, n, device=device)),
    }
    for label, (sfa, sfb) in forms.items():
        args = _k_grouped_args(m, n, ks, sfa, sfb, device)
        if device == 'meta':
            deep_gemm.k_grouped_fp8_gemm_nt_contiguous(*args)
        else:
            with pytest.raises(RuntimeError, match=ok):
                deep_gemm.k_grouped_fp8_gemm_nt_contiguous(*args)
    bad = _k_grouped_args(m, n, ks, torch.ones(m, 4, device=device), torch.ones(n, 5, device=device), device)
    with pytest.raises(ValueError, match=r'sfa must have shape \[M, S\] = \[256, 5\] \(DeepGEMM\'s form; S = sum\(ceil\(ks / 128\)\), '
                                         r'the compact layout\) or its transpose \[5, 256\]; got \[256, 4\]'):
        deep_gemm.k_grouped_fp8_gemm_nt_contiguous(*bad)
    bad = _k_grouped_args(m, n, ks, torch.ones(m, 5, device=device), torch.ones(6, n, device=device), device)
    with pytest.raises(ValueError, match=r'sfb must have shape \[N, S\] = \[384, 5\]'):
        deep_gemm.k_grouped_fp8_gemm_nt_contiguous(*bad)


def test_unimplemented_stub_says_why():
    with pytest.raises(NotImplementedError, match='k_grouped_fp8_gemm_tn_contiguous: needs SM100 .*; use k_grouped_fp8_gemm_nt_contiguous'):
        deep_gemm.k_grouped_fp8_gemm_tn_contiguous(None, None, None, [], None)
