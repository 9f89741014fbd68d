"""GPU correctness of the fused FP8 quantisation ops (deep_gemm.swiglu_apply_weight_to_fp8,
deep_gemm.apply_weight_to_fp8) against a float32 PyTorch reference of the same arithmetic.

Per config (one JIT compile each) every shape T x H is checked: the scales equal the reference's
(bitwise with power-of-two rounding, within a few ulp of the exp approximation otherwise), the FP8 values
dequantise to within FP8 rounding of the reference, the optional BF16 copy is bf16(reference), and rows
past avail_tokens of a NaN-poisoned output are untouched. Plus: (y, y_sf) fed into fp8_gemm_nt, the JIT's
PTX dump, and the issue's third_party example run as a script. Skipped without a Hopper GPU.
"""
import glob
import itertools
import math
import os

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from deep_gemm.utils import per_block_cast_to_fp8  # noqa: E402
from pyrun import run_python  # noqa: E402

TS = (0, 1, 7, 128, 4097)
HS = (128, 2048, 7168)
FP8_NAN = 0x7F  # float8_e4m3fn NaN bit pattern, the output poison


# ---- reference --------------------------------------------------------------------------------------

def ceil_pow2(s):
    """Smallest power of two >= s, exactly (frexp mantissa 0.5 means s already is one)."""
    m, e = torch.frexp(s)
    return torch.where(m == 0.5, s, torch.ldexp(torch.ones_like(s), e))


def reference(x, weights, npc, clamp, round_scale, swiglu):
    """(v, scales [T, S], q float8 [T, H]) in float32, the arithmetic the kernel documents."""
    x = x.float()
    if swiglu:
        h = x.shape[1] // 2
        gate, up = x[:, :h], x[:, h:]
        if clamp is not None:
            up = up.clamp(-clamp, clamp)
            gate = gate.clamp(max=clamp)
        v = gate / (1 + torch.exp(-gate)) * up
    else:
        v = x if clamp is None else x.clamp(-clamp, clamp)
    if weights is not None:
        v = v * weights[:, None]
    t, h = v.shape
    s = math.ceil(h / npc)
    padded = torch.zeros(t, s * npc, device=v.device)
    padded[:, :h] = v
    amax = padded.view(t, s, npc).abs().amax(-1).clamp(min=1e-4)
    scale = amax / 448
    if round_scale:
        scale = ceil_pow2(scale)
    inv = (1 / scale).repeat_interleave(npc, dim=1)[:, :h]
    q = (v * inv).clamp(-448, 448).to(torch.float8_e4m3fn)
    return v, scale, q


def unpack_scales(sf, s, ue8m0):
    """The kernel's scales as float32 [T, S] (UE8M0 bytes -> 2^(e - 127))."""
    if not ue8m0:
        return sf.float()
    t = sf.shape[0]
    b = sf.contiguous().view(torch.uint8).view(t, 4 * sf.shape[1])[:, :s].to(torch.int32)
    return torch.ldexp(torch.ones(t, s, device=sf.device), b - 127)


def check_outputs(y, sf, v, ref_scale, ref_q, npc, round_scale, ue8m0, fast_math, label):
    t, h = v.shape
    s = ref_scale.shape[1]
    got = unpack_scales(sf, s, ue8m0)
    if round_scale:
        assert torch.equal(got, ref_scale), f'{label}: power-of-two scales differ'
    else:  # exp/division approximations move amax by a few ulp at most
        torch.testing.assert_close(got, ref_scale, rtol=1e-5 if fast_math else 1e-6, atol=0, msg=label)
    if ue8m0 and s % 4:
        tail = sf.contiguous().view(torch.uint8).view(t, 4 * sf.shape[1])[:, s:]
        assert (tail == 0).all(), f'{label}: unused UE8M0 bytes not zero'
    scale_cols = got.repeat_interleave(npc, dim=1)[:, :h]
    deq = y.float() * scale_cols
    assert not deq.isnan().any(), f'{label}: NaN in y'
    # e4m3: 3 mantissa bits -> half-ulp 2^-4 relative for normals, 2^-10 * scale absolute for subnormals
    err = (deq - v).abs()
    bound = v.abs() * 2.0 ** -4 * 1.01 + scale_cols * 2.0 ** -10 * 1.01
    assert (err <= bound).all(), f'{label}: max excess {(err - bound).max().item()}'
    mismatch = (y.view(torch.uint8) != ref_q.view(torch.uint8)).float().mean().item() if y.numel() else 0.0
    assert mismatch < (1e-3 if fast_math or not round_scale else 1e-4), f'{label}: {mismatch:.2e} of FP8 codes differ'


# ---- configs: every scale mode x a pairwise cover of the four flags -------------------------------------

SCALE_MODES = [  # (use_col_major_scales, round_scale, ue8m0_scale)
    (True, False, False), (True, True, False), (False, False, False), (False, True, False), (True, True, True)]
# (weights, clamp, output_bf16, fast_math): a covering array -- every pair of flags sees all four value pairs
FLAG_ROWS = [(False, False, False, False), (False, True, True, True), (True, False, True, True), (True, True, False, True),
             (True, True, True, False)]
SWIGLU_CONFIGS = list(itertools.product(SCALE_MODES, FLAG_ROWS))


@pytest.mark.parametrize('scale_mode,flags', SWIGLU_CONFIGS, ids=[f'{m}-{f}' for m, f in SWIGLU_CONFIGS])
def test_swiglu_matches_reference(scale_mode, flags):
    col_major, round_scale, ue8m0 = scale_mode
    use_w, use_clamp, output_bf16, fast_math = flags
    clamp = 3.0 if use_clamp else None
    g = torch.Generator(device='cuda').manual_seed(hash((scale_mode, flags)) % 2**31)
    shapes = [(t, h, 128) for t in TS for h in HS] + [(129, 192, 64), (33, 48, 16)]  # H not a multiple of 128
    for t, h, npc in shapes:
        label = f't={t} h={h} npc={npc}'
        x = torch.randn(t, 2 * h, device='cuda', dtype=torch.bfloat16, generator=g) * 2
        w = torch.rand(t, device='cuda', generator=g) if use_w else None
        out = deep_gemm.swiglu_apply_weight_to_fp8(x, w, None, npc, col_major, round_scale, ue8m0, clamp_value=clamp,
                                                   output_bf16=output_bf16, fast_math=fast_math)
        assert len(out) == (3 if output_bf16 else 2)
        y, sf = out[0], out[1]
        aligned_t = (t + 3) // 4 * 4
        if col_major:
            assert sf.shape[0] == t and sf.stride(0) == 1 and (sf.shape[1] <= 1 or sf.stride(1) == aligned_t), label
        else:
            assert sf.is_contiguous(), label
        v, ref_scale, ref_q = reference(x, w, npc, clamp, round_scale, swiglu=True)
        check_outputs(y, sf, v, ref_scale, ref_q, npc, round_scale, ue8m0, fast_math, label)
        if output_bf16:
            expected = v.to(torch.bfloat16)
            # fast_math exp may move v by an ulp, which can flip a bf16 rounding
            assert (out[2].float() - expected.float()).abs().le(expected.float().abs() * 2.0 ** -7).all(), label


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize('round_scale', [False, True])
def test_apply_weight_matches_reference_and_respects_avail_tokens(dtype, round_scale):
    g = torch.Generator(device='cuda').manual_seed(7)
    for t, h, avail in [(0, 128, 0), (1, 2048, 1), (7, 64, 3), (128, 7168, 100), (4097, 208, 4000), (33, 2048, 99)]:
        label = f't={t} h={h} avail={avail}'
        x = torch.randn(t, h, device='cuda', generator=g).to(dtype)
        w = torch.rand(t, device='cuda', generator=g)
        out = torch.full((t, h), FP8_NAN, dtype=torch.uint8, device='cuda').view(torch.float8_e4m3fn)
        avail_t = torch.tensor([avail], dtype=torch.int32, device='cuda')
        sf = deep_gemm.apply_weight_to_fp8(x, out, topk_weights=w, avail_tokens=avail_t, round_scale=round_scale)
        n = min(avail, t)
        assert (out[n:].view(torch.uint8) == FP8_NAN).all(), f'{label}: rows past avail_tokens were written'
        v, ref_scale, ref_q = reference(x[:n], w[:n], 128, None, round_scale, swiglu=False)
        check_outputs(out[:n], sf[:n], v, ref_scale, ref_q, 128, round_scale, False, True, label)


def test_avail_tokens_out_of_range_is_clamped():
    x = torch.randn(16, 256, device='cuda', dtype=torch.bfloat16)
    for avail in (-5, 1 << 30):
        y, sf = deep_gemm.swiglu_apply_weight_to_fp8(x, None, torch.tensor([avail], dtype=torch.int32, device='cuda'), 128,
                                                     True, True, False)
        if avail > 0:
            v, ref_scale, _ = reference(x, None, 128, None, True, swiglu=True)
            assert torch.equal(sf, ref_scale)


def test_apply_weight_issue_example_shape():
    x = torch.randn(128, 64, dtype=torch.float16, device='cuda')
    out = torch.empty(128, 64, dtype=torch.float8_e4m3fn, device='cuda')
    sf = deep_gemm.apply_weight_to_fp8(x, out)
    assert sf.shape == (128, 1) and sf.stride() == (1, 128)
    v, ref_scale, ref_q = reference(x, None, 128, None, False, swiglu=False)
    check_outputs(out, sf, v, ref_scale, ref_q, 128, False, False, True, 'issue example')


@pytest.mark.parametrize('m,n,h', [(4097, 512, 2048), (129, 7168, 7168)])
def test_end_to_end_into_fp8_gemm_nt(m, n, h):
    g = torch.Generator(device='cuda').manual_seed(m + n)
    x = torch.randn(m, 2 * h, device='cuda', dtype=torch.bfloat16, generator=g)
    w = torch.rand(m, device='cuda', generator=g)
    b = torch.randn(n, h, device='cuda', dtype=torch.bfloat16, generator=g)
    y, y_sf = deep_gemm.swiglu_apply_weight_to_fp8(x, w, None, 128, True, False, False)
    b_fp8, sfb = per_block_cast_to_fp8(b, use_ue8m0=False)
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt((y, y_sf), (b_fp8, sfb.float()), d)
    gate, up = x.float()[:, :h], x.float()[:, h:]
    ref = (torch.nn.functional.silu(gate) * up * w[:, None]) @ b.float().T
    assert not d.isnan().any()
    assert float(calc_diff(d, ref)) < 1e-3


def test_dump_ptx_and_print_compiler_command(tmp_path):
    r = run_python('''
        import logging; logging.basicConfig(level=logging.INFO)  # the compile line is an INFO record of "deep_gemm"
        import torch, deep_gemm
        x = torch.randn(8, 256, dtype=torch.bfloat16, device='cuda')
        deep_gemm.swiglu_apply_weight_to_fp8(x, None, None, 128, True, False, False)
        torch.cuda.synchronize()
    ''', DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_DUMP_PTX='1', DG_JIT_PRINT_COMPILER_COMMAND='1')
    assert r.returncode == 0, r.stderr
    ptx = glob.glob(os.path.join(str(tmp_path), '**', 'kernel.swiglu_fp8_quant.*', 'kernel.ptx'), recursive=True)
    assert ptx, os.listdir(tmp_path)
    assert 'cvt.rn.satfinite.e4m3x2.f32' in open(ptx[0]).read()
    assert 'compiling swiglu_fp8_quant: ' in r.stderr and ('nvcc' in r.stderr or 'nvrtc' in r.stderr), r.stderr


def test_issue_example_runs_from_another_directory(tmp_path):
    code = '''
        import os
        import torch
        from third_party.tilelang_ops.swiglu_apply_weight_to_fp8 import apply_weight_to_fp8
        os.environ["DG_JIT_DUMP_PTX"] = "1"; os.environ["DG_JIT_PRINT_COMPILER_COMMAND"] = "1"
        weight = torch.randn(128, 64, dtype=torch.float16, device="cuda")
        output = torch.empty(128, 64, dtype=torch.float8_e4m3fn, device="cuda")
        apply_weight_to_fp8(weight, output)      # compiles through the JIT, PTX lands in DG_JIT_CACHE_DIR
        torch.cuda.synchronize()
        assert not output.float().isnan().any()
        print("example ok")
    '''
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = run_python(code, DG_JIT_CACHE_DIR=str(tmp_path / 'cache'))
    finally:
        os.chdir(cwd)
    assert r.returncode == 0, r.stderr
    assert 'example ok' in r.stdout
