"""CPU checks of the fused FP8 quantisation ops (deep_gemm.swiglu_apply_weight_to_fp8 and
deep_gemm.apply_weight_to_fp8): argument validation (raised before any device work), the output shapes
and scale layouts of the meta implementation, empty T, the third_party.tilelang_ops import path, and a
compile-only build of the kernel for sm_90a whose SASS must use 16-byte global accesses and no local
memory. GPU correctness is in test_swiglu_fp8_quant_gpu.py."""
import os
import shutil
import subprocess

from fractions import Fraction

import pytest
import torch

import deep_gemm
import swiglu_reference as ref
from deep_gemm.utils import pack_ue8m0_to_int
from pyrun import run_python

swiglu = deep_gemm.swiglu_apply_weight_to_fp8
apply_fp8 = deep_gemm.apply_weight_to_fp8


def _x(t=4, h=256, dtype=torch.bfloat16, device='cpu'):
    return torch.zeros(t, 2 * h, dtype=dtype, device=device)


def _call(x, **kw):
    args = dict(topk_weights=None, avail_tokens=None, num_per_channels=128, use_col_major_scales=True, round_scale=False,
                ue8m0_scale=False)
    args.update(kw)
    return swiglu(x, **args)


# ---- validation -------------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', [torch.int32, torch.float8_e4m3fn, torch.float64])
def test_x_dtype_is_a_type_error(dtype):
    with pytest.raises(TypeError, match=r'swiglu_apply_weight_to_fp8: .*x'):
        _call(_x(dtype=dtype))


def test_2h_not_divisible_by_two_groups():
    with pytest.raises(ValueError, match=r'2H must be divisible by 2 \* num_per_channels = 256; got shape \[4, 320\]'):
        _call(torch.zeros(4, 320, dtype=torch.bfloat16))


def test_h_multiple_of_16_for_apply():
    with pytest.raises(ValueError, match=r'apply_weight_to_fp8: H must be a positive multiple of 16; got H = 40'):
        apply_fp8(torch.zeros(2, 40), torch.empty(2, 40, dtype=torch.float8_e4m3fn))


def test_num_per_channels_power_of_two():
    with pytest.raises(ValueError, match=r'num_per_channels must be a power of two in \[16, 512\]; got 96'):
        _call(_x(h=192), num_per_channels=96)


def test_ue8m0_needs_round_scale():
    with pytest.raises(ValueError, match='ue8m0_scale needs round_scale=True'):
        _call(_x(), ue8m0_scale=True, round_scale=False)


def test_ue8m0_needs_col_major_scales():
    with pytest.raises(ValueError, match='ue8m0_scale needs use_col_major_scales=True'):
        _call(_x(), ue8m0_scale=True, round_scale=True, use_col_major_scales=False)


def test_fmt_and_clamp_and_num_sms():
    with pytest.raises(ValueError, match='fmt must be "e4m3"'):
        _call(_x(), fmt='e5m2')
    with pytest.raises(ValueError, match='clamp_value must be a positive finite number; got -1'):
        _call(_x(), clamp_value=-1.0)
    with pytest.raises(ValueError, match='num_sms must be positive; got 0'):
        _call(_x(), num_sms=0)


def test_weights_and_avail_tokens():
    with pytest.raises(TypeError, match='topk_weights'):
        _call(_x(), topk_weights=torch.ones(4, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r'topk_weights must be 1-D \[T\]'):
        _call(_x(), topk_weights=torch.ones(5))
    with pytest.raises(TypeError, match='avail_tokens'):
        _call(_x(), avail_tokens=torch.ones(1, dtype=torch.int64))
    with pytest.raises(ValueError, match='avail_tokens must hold exactly one int32'):
        _call(_x(), avail_tokens=torch.ones(2, dtype=torch.int32))


def test_strides_and_alignment():
    with pytest.raises(ValueError, match='x must have unit stride along dim 1'):
        _call(torch.zeros(512, 4, dtype=torch.bfloat16).T)
    with pytest.raises(ValueError, match='x data pointer must be 16-byte aligned'):
        _call(torch.zeros(4 * 512 + 1, dtype=torch.bfloat16)[1:].view(4, 512))


def test_apply_out_checks():
    x = torch.zeros(4, 64)
    with pytest.raises(TypeError, match='out'):
        apply_fp8(x, torch.empty(4, 64, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r'out must have the shape of x, \[4, 64\]; got \[4, 32\]'):
        apply_fp8(x, torch.empty(4, 32, dtype=torch.float8_e4m3fn))


def test_device_mismatch_and_cpu_are_runtime_errors():
    with pytest.raises(RuntimeError, match='all tensors must be on one device; x is on cpu but topk_weights is on meta'):
        _call(_x(), topk_weights=torch.ones(4, device='meta'))
    with pytest.raises(RuntimeError, match='requires CUDA tensors; x is on cpu'):
        _call(_x())
    with pytest.raises(RuntimeError, match='requires CUDA tensors'):
        apply_fp8(torch.zeros(2, 64), torch.empty(2, 64, dtype=torch.float8_e4m3fn))


def test_torch_ops_form_validates_the_same_way():
    with pytest.raises(ValueError, match='ue8m0_scale needs round_scale=True'):
        torch.ops.deep_gemm.swiglu_apply_weight_to_fp8(_x(), None, None, 128, True, False, True)


# ---- meta: shapes and scale layouts -------------------------------------------------------------------

@pytest.mark.parametrize('t', [0, 1, 7, 128])
def test_meta_col_major_scales(t):
    y, sf = _call(_x(t, 512, device='meta'))
    assert y.shape == (t, 512) and y.dtype == torch.float8_e4m3fn
    assert sf.shape == (t, 4) and sf.dtype == torch.float32
    assert sf.stride() == (1, (t + 3) // 4 * 4)


def test_meta_row_major_and_bf16_copy():
    y, sf, y_bf16 = _call(_x(7, 512, device='meta'), use_col_major_scales=False, output_bf16=True)
    assert sf.shape == (7, 4) and sf.is_contiguous()
    assert y_bf16.shape == (7, 512) and y_bf16.dtype == torch.bfloat16


@pytest.mark.parametrize('h,words', [(512, 1), (640, 2), (2048, 4)])
def test_meta_ue8m0_scales(h, words):
    y, sf = _call(_x(5, h, device='meta'), round_scale=True, ue8m0_scale=True)
    assert sf.dtype == torch.int32 and sf.shape == (5, words) and sf.stride() == (1, 8)


def test_meta_apply_partial_group():
    x = torch.empty(128, 64, dtype=torch.float16, device='meta')
    out = torch.empty(128, 64, dtype=torch.float8_e4m3fn, device='meta')
    sf = apply_fp8(x, out)
    assert sf.shape == (128, 1) and sf.stride() == (1, 128)
    sf = apply_fp8(torch.empty(3, 288, device='meta'), torch.empty(3, 288, dtype=torch.float8_e4m3fn, device='meta'),
                   num_per_channels=128, use_col_major_scales=False)
    assert sf.shape == (3, 3) and sf.is_contiguous()


def test_fake_tensor_mode_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = torch.empty(9, 1024, dtype=torch.bfloat16, device='meta')
        y, sf = _call(x)
    assert y.shape == (9, 512) and sf.shape == (9, 4) and sf.stride() == (1, 12)


def test_empty_t_on_meta():
    y, sf = _call(_x(0, 256, device='meta'), topk_weights=torch.empty(0, device='meta'))
    assert y.shape == (0, 256) and sf.shape == (0, 2)


# ---- the third_party import path --------------------------------------------------------------------

def test_third_party_reexports_from_another_directory(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(PYTHONPATH=os.pathsep.join([repo, os.environ.get('PYTHONPATH', '')]))
    code = '''
        import os, deep_gemm
        from third_party.tilelang_ops.swiglu_apply_weight_to_fp8 import apply_weight_to_fp8, swiglu_apply_weight_to_fp8
        import third_party.tilelang_ops as ops
        assert apply_weight_to_fp8 is deep_gemm.apply_weight_to_fp8 is ops.apply_weight_to_fp8
        assert swiglu_apply_weight_to_fp8 is deep_gemm.swiglu_apply_weight_to_fp8 is ops.swiglu_apply_weight_to_fp8
        print('ok', os.getcwd())
    '''
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        r = run_python(code, **env)
    finally:
        os.chdir(cwd)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('ok')


def test_setup_installs_third_party():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(repo, 'setup.py')).read()
    assert "find_packages(include=['third_party', 'third_party.*'])" in text


# ---- compile-only kernel check (no GPU) ---------------------------------------------------------------

def test_kernel_compiles_without_local_memory(tmp_path):
    """Builds three configs through the JIT without a GPU (the most register-hungry ones: bf16 SwiGLU with
    weights, clamp, bf16 copy and UE8M0 scales, with the fast and with the precise exp/division, the precise one
    at 16-column groups, which spilled 32 bytes under the fast variants' 48-register bound; and fp32 input with
    the precise math, 64-column groups, row-major scales), with spills as compile errors, and inspects the
    cubins' SASS."""
    from test_jit import find_cuobjdump, nvcc_available
    cuobjdump = find_cuobjdump()
    if not nvcc_available() or cuobjdump is None:
        pytest.skip('needs nvcc and cuobjdump')
    code = '''
        import json, logging, deep_gemm
        logging.basicConfig(level=logging.INFO)
        cfgs = [dict(input='bf16', swiglu=True, group=128, sf_layout='ue8m0', round_scale=True, weights=True, clamp=True,
                     output_bf16=True, fast_math=True),
                dict(input='bf16', swiglu=True, group=16, sf_layout='ue8m0', round_scale=True, weights=True, clamp=True,
                     output_bf16=True, fast_math=False),
                dict(input='fp32', swiglu=True, group=64, sf_layout='row', round_scale=False, weights=False, clamp=False,
                     output_bf16=False, fast_math=False)]
        print(json.dumps([deep_gemm._C._compile_quant_kernel(**c) for c in cfgs]))
    '''
    r = run_python(code, DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_DUMP_PTX='1', DG_JIT_PRINT_COMPILER_COMMAND='1',
                   DG_JIT_PTXAS_CHECK='1')
    assert r.returncode == 0, r.stderr
    assert r.stderr.count('-o kernel.cubin kernel.cu') == 3, r.stderr  # DG_JIT_PRINT_COMPILER_COMMAND: one line per config
    import json
    for entry in json.loads(r.stdout.strip().splitlines()[-1]):
        assert os.path.exists(os.path.join(entry['dir'], 'kernel.ptx')), 'DG_JIT_DUMP_PTX=1 keeps kernel.ptx'
        cubin = os.path.join(entry['dir'], 'kernel.cubin')
        sass = subprocess.run([cuobjdump, '-sass', cubin], capture_output=True, text=True, check=True).stdout
        assert entry['symbol'] in sass
        ops = [line.split('*/')[1].split()[0] for line in sass.splitlines() if '/*' in line and '*/' in line and
               len(line.split('*/')) > 1 and line.split('*/')[1].split()]
        assert not [op for op in ops if op.startswith(('LDL', 'STL'))], f'local memory in {entry["symbol"]}'
        assert 'LDG.E.128.CONSTANT' in ops or 'LDG.E.128' in ops, 'x must be read with 16-byte loads'
        assert 'STG.E.128' in ops, 'y must be written with 16-byte stores'
        assert any(op.startswith('F2FP.SATFINITE.E4M3') for op in ops), 'hardware FP8 conversion'


# ---- the GPU tests' reference (swiglu_reference.py) ----------------------------------------------------

def _nearest_float32(q: Fraction) -> float:
    """The float32 nearest to the positive rational q (ties to even), by exact comparison of neighbours."""
    f = torch.tensor(float(q), dtype=torch.float32)
    bits = int(f.view(torch.int32))
    cands = [torch.tensor(b, dtype=torch.int32).view(torch.float32).item() for b in (bits - 1, bits, bits + 1)]
    return min(cands, key=lambda c: (abs(Fraction(c) - q), int(torch.tensor(c).view(torch.int32)) & 1))


def test_reference_scale_is_the_correctly_rounded_quotient():
    g = torch.Generator().manual_seed(3)
    v = torch.randn(4, 512, generator=g) * torch.rand(4, 1, generator=g)
    s = ref.unrounded_scales(v, 128)
    amax = v.view(4, 4, 128).abs().amax(-1)
    for a, got in zip(amax.flatten().tolist(), s.flatten().tolist()):
        assert got == _nearest_float32(Fraction(a) / 448), a
    # The pitfall the reference avoids: amax times the rounded 1/448 (what "t / 448" does on a CUDA tensor)
    a = torch.tensor([3.0728871822357178])
    assert ref.unrounded_scales(a.expand(1, 16), 16).item() == _nearest_float32(Fraction(a.item()) / 448)
    assert (a * torch.tensor(1 / 448)).item() != _nearest_float32(Fraction(a.item()) / 448)


def test_reference_ceil_pow2_is_exact():
    up = torch.tensor(1.0).nextafter(torch.tensor(2.0))  # 1 + 2^-23
    below = torch.tensor(1.0).nextafter(torch.tensor(0.0))  # 1 - 2^-24
    for k in (-20, -9, 0, 3):
        p = 2.0 ** k
        assert ref.ceil_pow2(torch.tensor([p])).item() == p
        assert ref.ceil_pow2(torch.tensor([p]) * up).item() == 2 * p  # log2/exp2 would round this one down
        assert ref.ceil_pow2(torch.tensor([p]) * below).item() == p
        assert ref.ceil_pow2(torch.tensor([p * 1.75])).item() == 2 * p


def test_reference_fp8_codes_round_to_even_and_saturate():
    v = torch.tensor([[17.0, 19.0, 460.0, -1000.0, 0.0]])
    q = ref.fp8_codes(v, torch.ones(1, 1), 16).float()
    assert q.tolist() == [[16.0, 20.0, 448.0, -448.0, 0.0]]


def _m_major_ue8m0(exps: torch.Tensor) -> torch.Tensor:
    """int32 [T, ceil(S/4)] with strides (1, align(T, 4)), the layout swiglu_apply_weight_to_fp8 returns."""
    t = exps.shape[0]
    words = pack_ue8m0_to_int(torch.ldexp(torch.ones_like(exps, dtype=torch.float32), exps - 127))
    aligned = (t + 3) // 4 * 4
    out = torch.empty_strided((aligned, words.shape[1]), (1, aligned), dtype=torch.int32)
    out[:t] = words
    return out[:t]


@pytest.mark.parametrize('t,s', [(0, 3), (1, 1), (7, 5), (37, 3), (30, 3)])
def test_reference_unpacks_m_major_ue8m0_scales(t, s):
    exps = torch.randint(100, 140, (t, s), dtype=torch.int32)
    sf = _m_major_ue8m0(exps)
    got = ref.unpack_scales(sf, s, ue8m0=True)
    assert torch.equal(got, torch.ldexp(torch.ones(t, s), exps - 127))
    assert (ref.ue8m0_padding(sf, s) == 0).all()
    if t == 37:  # the sanitizer case: rows of a [37, 1] tensor with strides (1, 40); an int32->uint8 view fails here
        part = sf[:30]
        assert torch.equal(ref.unpack_scales(part, s, ue8m0=True), got[:30])


# ---- torch.library: opcheck on meta tensors, torch.compile traces the op ------------------------------

def test_opcheck_meta():
    x = torch.empty(7, 512, dtype=torch.bfloat16, device='meta')
    w = torch.empty(7, device='meta')
    for flags in [(True, False, False), (False, True, False), (True, True, True)]:
        torch.library.opcheck(torch.ops.deep_gemm.swiglu_apply_weight_to_fp8.default, (x, w, None, 128, *flags),
                              {'output_bf16': True})
    out = torch.empty(7, 256, dtype=torch.float8_e4m3fn, device='meta')
    torch.library.opcheck(torch.ops.deep_gemm.apply_weight_to_fp8.default, (torch.empty(7, 256, device='meta'), out),
                          {'num_per_channels': 64})


@pytest.mark.parametrize('dynamic', [False, True])
def test_compile_fullgraph_traces(dynamic):
    """torch.compile(fullgraph=True) records the op (no graph break); on CPU tensors it then reaches the
    op's CPU kernel, which says it needs CUDA."""
    torch._dynamo.reset()

    def f(x, w):
        y, sf = swiglu(x, w, None, 128, True, True, False, clamp_value=7.0)
        return sf * 2

    compiled = torch.compile(f, backend='aot_eager', fullgraph=True, dynamic=dynamic)
    with pytest.raises(RuntimeError, match='swiglu_apply_weight_to_fp8: requires CUDA tensors'):
        compiled(_x(8, 256), torch.ones(8))
