"""CPU checks of the sgl-deep-gemm 0.2.5 / SGLang / DeepGEMM 2.8.1 / LMDeploy call forms of docs/compat_2_8.md
("sgl-deep-gemm 0.2.5"): compile mode, the epilogue classes, fp8_einsum's (d, None), batched_syrk / batched_symm
(validation, meta tensors, torch.compile), LMDeploy's old names and the SM90 Mega MoE errors."""
import pytest
import torch

import deep_gemm
from deep_gemm import _compat025, _wrappers
from deep_gemm.epilogue import Alpha, BF16StochasticRounding, Epilogue, FP8CastWithClamp, FP8Quantization, Identity

BF16, FP8 = torch.bfloat16, torch.float8_e4m3fn


def _fp8_pair(rows, k, device='cpu'):
    return (torch.empty(rows, k, dtype=FP8, device=device), torch.ones(rows, (k + 127) // 128, device=device))


# ---- compile mode -------------------------------------------------------------------------------------------

@pytest.fixture
def compile_mode():
    yield
    deep_gemm.set_compile_mode(0)


def test_compile_mode_switch(compile_mode):
    assert deep_gemm.get_compile_mode() == 0
    deep_gemm.set_compile_mode(1)
    assert deep_gemm.get_compile_mode() == 1
    deep_gemm.set_compile_mode(0)
    assert deep_gemm.get_compile_mode() == 0
    for bad in (2, -1, True, '1'):
        with pytest.raises(ValueError, match='set_compile_mode: mode must be 0'):
            deep_gemm.set_compile_mode(bad)


def test_compile_mode_compiles_instead_of_launching(compile_mode, monkeypatch):
    import deep_gemm._warmup as warmup_module
    seen = []

    def fake_warmup(calls, progress):
        seen.extend(calls)
        return warmup_module.WarmupResult(compiled=1)
    monkeypatch.setattr(warmup_module, 'warmup', fake_warmup)
    a, b = _fp8_pair(256, 512), (torch.empty(1024, 512, dtype=FP8), torch.ones(8, 4))
    d = torch.empty(256, 1024, dtype=BF16)
    deep_gemm.set_compile_mode(1)
    deep_gemm.fp8_gemm_nt(a, b, d)  # CPU tensors: a launch would raise "requires CUDA tensors"
    assert seen == [{'op': 'fp8_gemm_nt', 'm': 256, 'n': 1024, 'k': 512, 'd_dtype': 'bfloat16', 'compiled_dims': 'nk'}]
    deep_gemm.set_compile_mode(0)
    with pytest.raises(RuntimeError, match='requires CUDA'):
        deep_gemm.fp8_gemm_nt(a, b, d)
    assert len(seen) == 1


def test_compile_mode_skips_bf16_alpha_through_cublaslt(compile_mode, monkeypatch):
    seen = []
    monkeypatch.setattr(deep_gemm._C, '_cublaslt_gemm_scaled', lambda *args: seen.append(args))
    a, b, d = torch.empty(64, 128, dtype=BF16), torch.empty(32, 128, dtype=BF16), torch.empty(64, 32, dtype=BF16)
    deep_gemm.set_compile_mode(1)
    deep_gemm.bf16_gemm_nt(a, b, d, alpha=2.0)
    assert seen == []
    deep_gemm.set_compile_mode(0)
    deep_gemm.bf16_gemm_nt(a, b, d, alpha=2.0)
    assert len(seen) == 1


def test_compile_mode_reports_failures(compile_mode, monkeypatch):
    import deep_gemm._warmup as warmup_module
    monkeypatch.setattr(warmup_module, 'warmup',
                        lambda calls, progress: warmup_module.WarmupResult(failed=['x'], details=['nvcc: boom']))
    deep_gemm.set_compile_mode(1)
    with pytest.raises(RuntimeError, match=r'bf16_gemm_nt \(compile mode 1\): nvcc: boom'):
        deep_gemm.bf16_gemm_nt(torch.empty(64, 128, dtype=BF16), torch.empty(32, 128, dtype=BF16), torch.empty(64, 32, dtype=BF16))


def _plan(name, *args):
    return _compat025.plan_fields(name, args)


def test_compile_mode_plans_the_grouped_and_transposed_forms():
    """The warm-up call each form maps to; the planner accepts every one (no compile)."""
    from deep_gemm._warmup_calls import plan_call, plan_target
    g, m, n, k = 4, 512, 256, 384
    calls = [
        _plan('m_grouped_fp8_gemm_nt_contiguous', _fp8_pair(m, k), (torch.empty(g, n, k, dtype=FP8), None),
              torch.empty(m, n, dtype=BF16), torch.empty(m, dtype=torch.int32), None, None, None, 'nk', False, False, True, None),
        _plan('m_grouped_fp8_gemm_nt_masked', (torch.empty(g, m, k, dtype=FP8), None), (torch.empty(g, n, k, dtype=FP8), None),
              torch.empty(g, m, n, dtype=BF16), torch.empty(g, dtype=torch.int32), 96, None, None, None, 'nk', False),
        _plan('bf16_gemm_tn', torch.empty(k, m, dtype=BF16), torch.empty(n, k, dtype=BF16), torch.empty(m, n, dtype=torch.float32),
              torch.empty(m, n, dtype=torch.float32), 'mn'),
        _plan('k_grouped_fp8_gemm_nt_contiguous', None, None, torch.empty(2, m, n, dtype=torch.float32), [256, 128],
              None, None, [1, 1, 128], 'mn', False),
        _plan('fp8_gemm_nt_skip_head_mid', _fp8_pair(m, k), (torch.empty(2 * 96, k, dtype=FP8), None),
              torch.empty(m, 2 * 160, dtype=BF16), (64, 64, 32), None, 'nk', False),
    ]
    assert calls[0]['num_groups'] == g and calls[0]['m'] == m and 'expected_m' not in calls[0]
    assert (calls[1]['num_groups'], calls[1]['m'], calls[1]['expected_m']) == (g, m, 96)
    assert (calls[2]['k'], calls[2]['c_dtype'], calls[2]['d_dtype']) == (k, 'float32', 'float32')
    assert calls[3]['ks'] == [256, 128] and 'k' not in calls[3] and calls[3]['recipe'] == [1, 1, 128]
    assert calls[4]['n'] == 2 * 96 and calls[4]['head_splits'] == [64, 64, 32]
    target = plan_target('sm_90a')
    for call in calls:
        assert plan_call(call, target), call


# ---- epilogue classes ---------------------------------------------------------------------------------------

@pytest.fixture
def captured(monkeypatch):
    calls = {}
    for name in ('fp8_gemm_nt', 'bf16_gemm_nt', 'm_grouped_fp8_gemm_nt_masked'):
        monkeypatch.setattr(_wrappers, f'_c_{name}', lambda *args, _n=name: calls.setdefault(_n, args))
    monkeypatch.setattr(deep_gemm._compat28, 'bf16_scaled', lambda *args: calls.setdefault('bf16_scaled', args) and True)
    return calls


def test_identity_is_the_plain_store(captured):
    a, b, d = _fp8_pair(128, 256), _fp8_pair(128, 256), torch.empty(128, 128, dtype=BF16)
    deep_gemm.fp8_gemm_nt(a, b, d, epilogue=Identity())
    assert captured['fp8_gemm_nt'][1] is b  # scales untouched: no alpha
    del captured['fp8_gemm_nt']
    deep_gemm.fp8_gemm_nt(a, b, d, epilogue=Epilogue())  # the base class: 0.2.5's kind 0
    assert captured['fp8_gemm_nt'][1] is b
    deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, None, 1, epilogue=Identity())
    assert 'm_grouped_fp8_gemm_nt_masked' in captured


def test_alpha_epilogue_is_alpha(captured):
    a, b, d = _fp8_pair(128, 256), _fp8_pair(128, 256), torch.empty(128, 128, dtype=BF16)
    deep_gemm.fp8_gemm_nt(a, b, d, epilogue=Alpha(0.25))
    assert torch.equal(captured['fp8_gemm_nt'][1][1], b[1] * 0.25)
    with pytest.raises(ValueError, match='fp8_gemm_nt: give alpha= or epilogue=Alpha'):
        deep_gemm.fp8_gemm_nt(a, b, d, alpha=2.0, epilogue=Alpha(0.25))


def test_alpha_epilogue_on_bf16_goes_through_cublaslt(monkeypatch):
    seen = []
    monkeypatch.setattr(deep_gemm._C, '_cublaslt_gemm_scaled', lambda *args: seen.append(args))
    a, b, d = torch.empty(64, 128, dtype=BF16), torch.empty(32, 128, dtype=BF16), torch.empty(64, 32, dtype=BF16)
    deep_gemm.bf16_gemm_nt(a, b, d, epilogue=Alpha(3))
    assert len(seen) == 1 and seen[0][-1] == 3.0


def test_alpha_epilogue_on_grouped_gemm_is_rejected():
    with pytest.raises(NotImplementedError, match='m_grouped_fp8_gemm_nt_masked: epilogue Alpha is taken by the dense'):
        deep_gemm.m_grouped_fp8_gemm_nt_masked(None, None, None, None, 1, epilogue=Alpha(2))


@pytest.mark.parametrize('epilogue,what', [
    (lambda: FP8CastWithClamp(torch.empty(1), clamp_value=448.0), 'FP8CastWithClamp needs an FP8 output D with scales sfd'),
    (lambda: FP8Quantization(torch.empty(1)), 'FP8Quantization needs an FP8 output D with scales sfd'),
    (lambda: BF16StochasticRounding(), 'BF16StochasticRounding needs stochastic rounding'),
])
@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'bf16_gemm_nn', 'm_grouped_fp8_gemm_nt_contiguous'])
def test_sm100_epilogues_raise_naming_the_feature(name, epilogue, what):
    with pytest.raises(NotImplementedError, match=rf'^{name}: epilogue {what}.*SM100'):
        getattr(deep_gemm, name)(None, None, None, None, None, epilogue=epilogue())


def test_einsum_epilogues():
    d = torch.empty(2, 3, 64, dtype=BF16, device='meta')
    x, y = torch.empty(2, 3, 128, dtype=BF16, device='meta'), torch.empty(3, 64, 128, dtype=BF16, device='meta')
    deep_gemm.einsum('bhr,hdr->bhd', x, y, d, None, False, Identity())  # meta: validated, nothing run
    deep_gemm.einsum('bhr,hdr->bhd', x, y, d, None, Identity())  # 2.8's 6th positional epilogue
    with pytest.raises(ValueError, match='einsum: epilogue must be None or Identity'):
        deep_gemm.einsum('bhr,hdr->bhd', x, y, d, epilogue=Alpha(2))


def _fp8_einsum_args():
    x, sx = torch.empty(2, 3, 128, dtype=FP8, device='meta'), torch.empty(2, 3, 1, device='meta')
    y, sy = torch.empty(3, 128, 128, dtype=FP8, device='meta'), torch.empty(3, 1, 1, device='meta')
    return (x, sx), (y, sy), torch.empty(2, 3, 128, dtype=BF16, device='meta')


def test_fp8_einsum_025_forms():
    a, b, d = _fp8_einsum_args()
    deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, (d, None))  # 0.2.5's pair without scales: a bfloat16 d
    deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, d, None, (1, 128, 128), Identity())
    with pytest.raises(ValueError, match=r'fp8_einsum: d given as a \(d, sfd\) pair with scales .* SM100-only'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, (d, torch.empty(1, device='meta')))
    with pytest.raises(ValueError, match='fp8_einsum: epilogue must be None or Identity'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, d, epilogue=FP8Quantization(torch.empty(1)))
    with pytest.raises(ValueError, match=r'fp8_einsum: d.shape\[2\] \(D\) must equal'):  # (d, None) is validated as d
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, (d[:, :, :64], None))


# ---- batched_syrk / batched_symm ------------------------------------------------------------------------------

def _meta(*shape, dtype=BF16):
    return torch.empty(*shape, dtype=dtype, device='meta')


def test_batched_syrk_symm_bind_on_meta():
    deep_gemm.batched_syrk(_meta(4, 64, 256), _meta(4, 64, 64))
    deep_gemm.batched_syrk(_meta(64, 256).t(), _meta(256, 256, dtype=torch.float32))  # M-major, 2-D, float32 d
    deep_gemm.batched_symm(_meta(4, 64, 64), _meta(4, 64, 32), _meta(4, 64, 32))
    deep_gemm.batched_symm(_meta(64, 64), _meta(32, 64).t(), _meta(64, 32))


@pytest.mark.parametrize('call,error,match', [
    (lambda: deep_gemm.batched_syrk(_meta(4, 64, 256), _meta(4, 64, 32)), ValueError, r'batched_syrk: d must be \[\.\., M, M\]'),
    (lambda: deep_gemm.batched_syrk(_meta(4, 64, 256), _meta(3, 64, 64)), ValueError, 'batched_syrk: the batch sizes differ'),
    (lambda: deep_gemm.batched_syrk(_meta(4, 64, 256), _meta(64, 64)), ValueError, 'must all be 2-D or all 3-D'),
    (lambda: deep_gemm.batched_syrk(_meta(2, 4, 64, 256), _meta(2, 4, 64, 64)), ValueError, 'must be 2-D or 3-D'),
    (lambda: deep_gemm.batched_syrk('a', _meta(64, 64)), TypeError, 'batched_syrk: a must be a torch.Tensor'),
    (lambda: deep_gemm.batched_syrk(_meta(4, 64, 256, dtype=torch.float32), _meta(4, 64, 64, dtype=torch.float32)),
     TypeError, 'batched_syrk: a must have dtype bfloat16'),
    (lambda: deep_gemm.batched_syrk(_meta(4, 64, 260)[..., :250], _meta(4, 64, 64)), ValueError, r'^batched_syrk: .*16'),
    (lambda: deep_gemm.batched_symm(_meta(4, 64, 32), _meta(4, 64, 32), _meta(4, 64, 32)), ValueError,
     r'batched_symm: a must be \[\.\., M, M\]'),
    (lambda: deep_gemm.batched_symm(_meta(4, 64, 64), _meta(4, 64, 32), _meta(4, 64, 16)), ValueError, 'batched_symm: a must be'),
    (lambda: deep_gemm.batched_syrk(torch.zeros(2, 16, 64, dtype=BF16), torch.zeros(2, 16, 16, dtype=BF16)), RuntimeError,
     'batched_syrk: requires CUDA'),
])
def test_batched_syrk_symm_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_batched_syrk_symm_compile():
    @torch.compile(fullgraph=True, backend='eager')
    def f(a, b, d1, d2):
        deep_gemm.batched_syrk(a, d1)
        deep_gemm.batched_symm(d1, b, d2)
    f(_meta(2, 64, 128), _meta(2, 64, 32), _meta(2, 64, 64), _meta(2, 64, 32))


# ---- LMDeploy's old names, Mega MoE ---------------------------------------------------------------------------

def test_lmdeploy_fallbacks(monkeypatch):
    from deep_gemm.jit_kernels.gemm import gemm_fp8_fp8_bf16_nt
    seen = []
    monkeypatch.setattr(_wrappers, '_c_fp8_gemm_nt', lambda *args: seen.append(args))
    lhs, rhs, out = _fp8_pair(128, 256), _fp8_pair(128, 256), torch.empty(128, 128, dtype=BF16)
    gemm_fp8_fp8_bf16_nt(lhs, rhs, out)
    assert seen[0][:3] == (lhs, rhs, out)
    sf = torch.rand(130, 3)
    aligned = deep_gemm.get_col_major_tma_aligned_tensor(sf)
    assert torch.equal(aligned, sf) and aligned.stride() == (1, 132)


@pytest.mark.parametrize('make', [lambda: deep_gemm.fp8_mega_moe(None, None), lambda: deep_gemm.mega_moe_pre_dispatch_sm90(),
                                  lambda: deep_gemm.SM90SymmBuffer(None, 8, 128, 8, 7168, 2048)])
def test_sm90_mega_moe_is_out_of_scope(make):
    with pytest.raises(NotImplementedError, match='SM90 Mega MoE is not implemented in deep_gemm: .*several GPUs.*symmetric memory'):
        make()


# ---- K-grouped packed UE8M0 scales in 0.2.5's form ---------------------------------------------------------------

def test_k_grouped_packed_ue8m0_025_form():
    from deep_gemm.utils import get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor as pack
    ks, mn = [256, 0, 384], 12
    sf = torch.exp2(torch.randint(-8, 8, (sum(k // 128 for k in ks), mn)).float())
    want = pack(sf, None, ks, 128, 128)
    layout = torch.tensor(ks, dtype=torch.int32)
    for padded in (False, True):  # every K_g a multiple of k_alignment: the padded and compact layouts coincide
        # (test_k_grouped_compact_sf.py: where they differ)
        got = pack(sf, layout, None, 128, use_padded_sf_layout=padded)  # ks from grouped_layout, k_alignment from the knob
        assert torch.equal(got, want) and got.stride() == want.stride()
    with pytest.raises(TypeError, match='use_padded_sf_layout must be a bool'):
        pack(sf, layout, ks, 128, use_padded_sf_layout=1)
    with pytest.raises(ValueError, match='give ks_cpu'):
        pack(sf, None, None, 128)
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    deep_gemm.set_mk_alignment_for_contiguous_layout(256)
    try:  # k_alignment=None reads the knob: 384 is padded to 512, 4 blocks, still one packed row at gran_k 128
        assert torch.equal(pack(sf, layout, None, 128, use_padded_sf_layout=True), want)
        sf32 = torch.exp2(torch.randint(-8, 8, (sum(k // 32 for k in ks), mn)).float())  # gran_k 32: 12 blocks, 3 rows
        assert pack(sf32, layout, None, 32, use_padded_sf_layout=True).shape == (2 + 4, mn)  # 384 -> 512: 16 blocks
        assert pack(sf32, layout, None, 32).shape == (2 + 3, mn)
    finally:
        deep_gemm.set_mk_alignment_for_contiguous_layout(old)
