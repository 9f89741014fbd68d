"""GPU correctness of the fused FP8 quantisation ops (deep_gemm.swiglu_apply_weight_to_fp8,
deep_gemm.apply_weight_to_fp8) against swiglu_reference.py, a float32 PyTorch model of the kernel's
arithmetic.

Per config (one JIT compile each) every shape T x H is checked: without fast_math (and always for
apply_weight_to_fp8, which has no exp) the scales, FP8 codes and BF16 copy are bitwise the reference's;
with fast_math the bounds of check_scales / check_codes below apply. Rows past avail_tokens of a
NaN-poisoned output stay untouched. Plus: (y, y_sf) fed into fp8_gemm_nt, the JIT's PTX dump, and the
issue's third_party example run as a script. Skipped without a Hopper GPU.
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
import swiglu_reference as ref  # noqa: E402
from pyrun import run_python  # noqa: E402

TS = (0, 1, 7, 128, 4097)
HS = (128, 2048, 7168)
FP8_NAN = 0x7F  # float8_e4m3fn NaN bit pattern, the output poison


# ---- checks against the reference (swiglu_reference.py) ---------------------------------------------
#
# Without fast_math the kernel computes exactly what the reference computes, so scales, FP8 codes and the
# BF16 copy must be bitwise equal. With fast_math (SwiGLU only: __expf / __fdividef) v moves by a few ulp:
# - a scale may differ by at most FAST_MATH_REL (2^-16, ~128 ulp: the approximations are within ~20 ulp
#   for the |gate| of these inputs); a power-of-two scale must still be exact, except that it may be
#   twice or half the reference's where the reference's unrounded scale lies within FAST_MATH_REL of a
#   power of two (the rounding boundary itself);
# - codes are compared with the reference quantised at the kernel's own scales (so a scale checked above
#   is not counted again through its whole group): a differing code must be the adjacent FP8 value, and
#   at most 8 + 2e-3 * count of them. They come from values within a few ulp of a rounding midpoint; with
#   a clamp, exact midpoints are common (clamped gate and bf16 up give v / amax = small rationals), about
#   5e-4 of all values in a CPU simulation of these shapes, so 2e-3 bounds them with margin.

FAST_MATH_REL = 2.0 ** -16


def check_scales(got, v, npc, round_scale, exact, label):
    s_ref = ref.unrounded_scales(v, npc)
    expected = ref.ceil_pow2(s_ref) if round_scale else s_ref
    if exact:
        bad = int((got != expected).sum())
        assert bad == 0, f'{label}: {bad} of {got.numel()} scales differ from the reference (bitwise)'
        return
    if not round_scale:
        torch.testing.assert_close(got, expected, rtol=FAST_MATH_REL, atol=0, msg=label)
        return
    # s_ref = m * 2^e, m in [0.5, 1). Just above the power of two below (0.5 < m <= 0.5 + W/2) the kernel's
    # scale may land on or under it: half the reference's; at or just under a power of two (m == 0.5 or
    # m >= 1 - W) it may land above: twice the reference's. Anything else must match exactly.
    m, _ = torch.frexp(s_ref)
    may_halve = (m > 0.5) & (2 * m - 1 <= FAST_MATH_REL)
    may_double = (m == 0.5) | (1 - m <= FAST_MATH_REL)
    ok = (got == expected) | (may_halve & (got == expected / 2)) | (may_double & (got == expected * 2))
    bad = int((~ok).sum())
    assert bad == 0, f'{label}: {bad} of {got.numel()} power-of-two scales differ beyond rounding-boundary cases'


def check_codes(y, v, got_scale, npc, exact, label):
    expected = ref.fp8_codes(v, got_scale, npc).view(torch.uint8).int()
    codes = y.view(torch.uint8).int()
    differ = codes != expected
    count = int(differ.sum())
    if exact:
        assert count == 0, f'{label}: {count} of {y.numel()} FP8 codes differ from the reference (bitwise)'
        return
    # e4m3fn magnitudes are monotonic in the low 7 bits: adjacent values differ by 1 there, same sign bit
    adjacent = ((codes & 0x80) == (expected & 0x80)) & (((codes & 0x7F) - (expected & 0x7F)).abs() == 1)
    assert not (differ & ~adjacent).any(), f'{label}: an FP8 code is more than one step from the reference'
    assert count <= 8 + 2e-3 * y.numel(), f'{label}: {count} of {y.numel()} FP8 codes differ (one step each)'


def check_outputs(y, sf, v, npc, round_scale, ue8m0, exact, label):
    t, h = v.shape
    s = math.ceil(h / npc)
    got = ref.unpack_scales(sf, s, ue8m0)
    assert got.shape == (t, s), f'{label}: scales shape {tuple(got.shape)}'
    check_scales(got, v, npc, round_scale, exact, label)
    if ue8m0 and s % 4:
        assert (ref.ue8m0_padding(sf, s) == 0).all(), f'{label}: unused UE8M0 bytes not zero'
    assert not y.float().isnan().any(), f'{label}: NaN in y'
    check_codes(y, v, got, npc, exact, label)


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
        if ue8m0:
            assert sf.dtype == torch.int32 and sf.shape[1] == (math.ceil(h / npc) + 3) // 4, label
        v = ref.quant_input(x, w, clamp, swiglu=True)
        check_outputs(y, sf, v, npc, round_scale, ue8m0, not fast_math, label)
        if output_bf16:
            expected = v.to(torch.bfloat16)
            if not fast_math:
                assert torch.equal(out[2], expected), f'{label}: bf16 copy differs from bf16(v)'
            else:  # v moved by a few ulp can flip a bf16 rounding: one bf16 ulp at most
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
        # no exp without SwiGLU: fast_math (the default) changes nothing, the result is bitwise the reference's
        v = ref.quant_input(x[:n], w[:n], None, swiglu=False)
        check_outputs(out[:n], sf[:n], v, 128, round_scale, False, True, label)


def test_avail_tokens_out_of_range_is_clamped():
    x = torch.randn(16, 256, device='cuda', dtype=torch.bfloat16)
    for avail in (-5, 1 << 30):
        y, sf = deep_gemm.swiglu_apply_weight_to_fp8(x, None, torch.tensor([avail], dtype=torch.int32, device='cuda'), 128,
                                                     True, True, False)
        if avail > 0:
            check_outputs(y, sf, ref.quant_input(x, None, None, swiglu=True), 128, True, False, False, f'avail={avail}')


def test_apply_weight_issue_example_shape():
    x = torch.randn(128, 64, dtype=torch.float16, device='cuda')
    out = torch.empty(128, 64, dtype=torch.float8_e4m3fn, device='cuda')
    sf = deep_gemm.apply_weight_to_fp8(x, out)
    assert sf.shape == (128, 1) and sf.stride() == (1, 128)
    check_outputs(out, sf, ref.quant_input(x, None, None, swiglu=False), 128, False, False, True, 'issue example')


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
