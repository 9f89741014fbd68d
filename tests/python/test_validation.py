"""Argument validation of every GEMM op, on CPU and meta tensors (no GPU needed): the errors of
docs/architecture.md ("Errors and accuracy") are raised before any device work, with the op, the argument and the values."""

import pytest
import torch

import deep_gemm
from op_cases import BF16, CASES, CASES_BY_NAME, F32, FP8, I32, other_dtype, retype

DEVICES = ['meta', 'cpu']
ids = [c.name for c in CASES]


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_valid_meta_call_passes(case):
    case.call('meta')  # validation only: no error, no output


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_valid_cpu_call_requires_cuda(case):
    with pytest.raises(RuntimeError, match=rf'^{case.name}: requires CUDA tensors; a is on cpu'):
        case.call('cpu')


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('case', CASES, ids=ids)
def test_wrong_dtype_is_type_error(case, device):
    for name, accepted in case.tensor_dtypes.items():
        bad = other_dtype(accepted)
        with pytest.raises(TypeError, match=rf'^{case.name}: {name} must have dtype .*; got '):
            case.call(device, **{name: lambda t, bad=bad: retype(t, bad)})


def test_dtype_message_form():
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(TypeError) as info:
        case.call('cpu', b=lambda t: retype(t, BF16))
    assert str(info.value) == 'fp8_gemm_nt: b must have dtype float8_e4m3fn; got bfloat16'


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('case', CASES, ids=ids)
def test_wrong_rank_is_value_error(case, device):
    with pytest.raises(ValueError, match=rf'^{case.name}: d must be a \d-D tensor'):
        case.call(device, d=lambda t: t.unsqueeze(0))


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('case', CASES, ids=ids)
def test_mismatched_n_is_value_error(case, device):
    # d one column short of N
    # (the K-grouped ops take N from d, so there b's size is what disagrees)
    with pytest.raises(ValueError, match=rf'^{case.name}: (d\.shape\[-?\d\] \(N\) must equal|b must hold|b\.shape\[1\] \(N\) must equal|'
                                         r'd\.shape\[1\] must be num_heads \* \(left \+ mid \+ right\))'):
        case.call(device, d=lambda t: t[..., :-8])


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'fp8_gemm_nn', 'fp8_gemm_tn', 'fp8_gemm_tt', 'bf16_gemm_nt',
                                  'm_grouped_fp8_gemm_nt_masked', 'm_grouped_bf16_gemm_nt_contiguous'])
def test_mismatched_k_is_value_error(name, device):
    case = CASES_BY_NAME[name]
    args, kwargs, t = case.build(device)
    # b with a different K (shape built for K + 128, keeping its memory order)
    _, _, t2 = case.build(device, dims=dict(K=case.dims['K'] + 128))
    overrides = dict(b=t2['b'])
    if 'sfb' in t:
        overrides['sfb'] = t2['sfb']
    with pytest.raises(ValueError, match=rf'^{name}: b\.shape\[\d\] \(K\) must equal a\.shape\[\d\] = 512; got 640'):
        case.call(device, **overrides)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'fp8_gemm_nn', 'fp8_gemm_tn', 'fp8_gemm_tt',
                                  'm_grouped_fp8_gemm_nt_contiguous', 'm_grouped_fp8_gemm_nt_masked'])
def test_fp8_operands_must_be_k_major(name, device):
    case = CASES_BY_NAME[name]
    # the same logical shape, the other memory order
    flip = lambda t: t.transpose(-2, -1).contiguous().transpose(-2, -1) if t.is_contiguous() else t.contiguous()
    with pytest.raises(ValueError, match=rf'^{name}: b must be K-major in memory'):
        case.call(device, b=flip)
    with pytest.raises(ValueError, match=rf'^{name}: a must be K-major in memory'):
        case.call(device, a=flip)


@pytest.mark.parametrize('device', DEVICES)
def test_bf16_operands_may_be_mn_major(device):
    case = CASES_BY_NAME['bf16_gemm_nt']
    flip = lambda t: t.t().contiguous().t()
    case.call('meta', a=flip, b=flip)  # accepted
    with pytest.raises(ValueError, match=r'^bf16_gemm_nt: a must be K-major or M-major'):
        case.call(device, a=lambda t: torch.empty(128, 1024, dtype=BF16, device=device)[:, ::2])


@pytest.mark.parametrize('device', DEVICES)
def test_unaligned_row_stride_is_value_error(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: a stride along dim 0 must be a multiple of 16 bytes'):
        case.call(device, dims=dict(K=200))  # K-major rows of 200 FP8 bytes
    case.call('meta', dims=dict(N=260))  # BF16 output rows of 520 bytes: fine (direct-store epilogue)
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: d stride along dim 0 must be at least 256 \(rows must not overlap\)'):
        case.call(device, d=lambda t: torch.empty(256, 128, dtype=BF16, device=device).as_strided((128, 256), (128, 1)))


@pytest.mark.parametrize('device', DEVICES)
def test_misaligned_base_is_value_error(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    m, k = 128, 512

    def shifted(_):
        buf = torch.empty(m * k + 16, dtype=torch.uint8, device=device)
        return buf[1:1 + m * k].view(FP8).view(m, k)

    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: a (data pointer must be|must start) 16-byte aligned'):
        case.call(device, a=shifted)


@pytest.mark.parametrize('device', DEVICES)
def test_scale_shapes(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfa must have shape \[M, ceil\(K/128\)\] = \[128, 4\]; got \[128, 5\]'):
        case.call(device, sfa=lambda t: torch.ones(128, 5, device=device))
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfb must have shape \[ceil\(N/128\), ceil\(K/128\)\] = \[2, 4\]'):
        case.call(device, sfb=lambda t: torch.ones(256, 4, device=device))
    tn = CASES_BY_NAME['fp8_gemm_tn']  # scales given in the user's orientation: sfa [ceil(K/128), M]
    with pytest.raises(ValueError, match=r'^fp8_gemm_tn: sfa must have shape \[ceil\(K/128\), M\] = \[4, 128\]; got \[128, 4\]'):
        tn.call(device, sfa=lambda t: torch.ones(128, 4, device=device))


@pytest.mark.parametrize('device', DEVICES)
def test_recipe_and_output_dtype(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: recipe must be \(1, 128, 128\)'):
        case.call(device, recipe=(1, 64, 128))
    with pytest.raises(ValueError, match=r'recipe must be 3 ints'):
        case.call(device, recipe=(1, 128))
    with pytest.raises(TypeError, match=r'recipe must be None or a tuple of 3 ints'):
        case.call(device, recipe='1,128,128')
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: d must have dtype float32 with recipe \(1, 1, 128\)'):
        case.call(device, recipe=(1, 1, 128), sfb=lambda t: torch.ones(256, 4, device=device))
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: d must have dtype bfloat16 with recipe \(1, 128, 128\)'):
        case.call(device, d=lambda t: t.float())
    # the 1D1D recipe validates with per-row B scales and an FP32 output
    case.call('meta', recipe=(1, 1, 128), sfb=lambda t: torch.ones(256, 4, device='meta'), d=lambda t: t.float())


@pytest.mark.parametrize('device', DEVICES)
def test_accumulator_c(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    case.call('meta', c=torch.empty(128, 256, dtype=F32, device='meta'))
    case.call('meta', c=torch.empty(128, 256, dtype=BF16, device='meta'))
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: c\.shape\[0\] \(M\) must equal d\.shape\[0\]'):
        case.call(device, c=torch.empty(64, 256, dtype=F32, device=device))
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: c must have dtype bfloat16 or float32; got int32'):
        case.call(device, c=torch.empty(128, 256, dtype=I32, device=device))


def test_output_overlapping_input_is_value_error():
    case = CASES_BY_NAME['bf16_gemm_nt']
    buf = torch.empty(128 * 512 + 128 * 256, dtype=BF16)
    a = buf[:128 * 512].view(128, 512)
    d = buf[128 * 256:128 * 256 + 128 * 256].view(128, 256)  # inside a
    with pytest.raises(ValueError, match=r'^bf16_gemm_nt: the output d overlaps the input a'):
        case.call('cpu', a=a, d=d)


@pytest.mark.parametrize('device', DEVICES)
def test_compiled_dims(device):
    case = CASES_BY_NAME['fp8_gemm_nt']
    for good in ('', 'n', 'nk', 'mnk', 'km'):
        case.call('meta', compiled_dims=good)
    for bad in ('x', 'nn', 'NK'):
        with pytest.raises(ValueError, match=r'compiled_dims must be a subset of "mnk"'):
            case.call(device, compiled_dims=bad)


@pytest.mark.parametrize('device', DEVICES)
def test_grouped_specific_rules(device):
    masked = CASES_BY_NAME['m_grouped_fp8_gemm_nt_masked']
    with pytest.raises(ValueError, match=r'expected_m must be positive'):
        masked.call(device, expected_m=0)
    with pytest.raises(ValueError, match=r'masked_m\.shape\[0\] \(G\) must equal a\.shape\[0\] = 2; got 3'):
        masked.call(device, masked_m=torch.zeros(3, dtype=I32, device=device))
    contiguous = CASES_BY_NAME['m_grouped_bf16_gemm_nt_contiguous']
    with pytest.raises(ValueError, match=r'grouped_layout\.shape\[0\] \(M\) must equal a\.shape\[0\] = 128; got 127'):
        contiguous.call(device, grouped_layout=torch.zeros(127, dtype=I32, device=device))
    with pytest.raises(ValueError, match=r'grouped_layout must be contiguous'):
        contiguous.call(device, grouped_layout=torch.zeros(256, dtype=I32, device=device)[::2])
    # use_psum_layout=True: grouped_layout holds one end row per group ([G]), not one group per row.
    args, _, _ = contiguous.build(device)
    with pytest.raises(ValueError, match=r'grouped_layout\.shape\[0\] \(G\) must equal b\.shape\[0\] = 2; got 128'):
        contiguous.fn(*args, use_psum_layout=True)
    args, _, _ = contiguous.build(device, grouped_layout=torch.zeros(2, dtype=I32, device=device))
    if device == 'meta':  # a valid psum layout passes validation (meta: nothing runs) ...
        contiguous.fn(*args, use_psum_layout=True)
    else:  # ... and on CPU tensors reaches the device check
        with pytest.raises(RuntimeError, match=r'requires CUDA tensors'):
            contiguous.fn(*args, use_psum_layout=True)
    kg = CASES_BY_NAME['k_grouped_fp8_gemm_nt_contiguous']
    with pytest.raises(ValueError, match=r'ks_cpu\[1\] must be a non-negative multiple of 16; got 200'):
        kg.call(device, ks=[128, 200])
    with pytest.raises(ValueError, match=r'ks_cpu must have one K per group'):
        kg.call(device, ks=[128])
    with pytest.raises(ValueError, match=r'recipe must be \(1, 1, 128\)'):
        kg.fn(*kg.build(device)[0], recipe=(1, 128, 128))


def test_mixed_devices_are_runtime_errors():
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(RuntimeError, match=r'^fp8_gemm_nt: cannot mix meta tensors with tensors on a device; d is on meta but a is on cpu'):
        case.call('cpu', d=lambda t: t.to('meta'))
    # (CUDA + CPU mixes are checked on a GPU: test_torch_library_gpu.py. Under FakeTensorMode the meta kernel
    # sees every fake tensor as meta, so a fake mix is caught when the compiled graph runs, not at trace time.)


def test_fake_cuda_tensors_validate():
    from torch._subclasses.fake_tensor import FakeTensorMode
    case = CASES_BY_NAME['fp8_gemm_nt']
    with FakeTensorMode():  # fake CUDA tensors: no GPU needed
        case.call('cuda')
        with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfa must have shape'):
            case.call('cuda', sfa=lambda t: torch.ones(3, 3, device='cuda'))


def test_empty_problems_validate_before_device_work():
    case = CASES_BY_NAME['fp8_gemm_nt']
    case.call('meta', dims=dict(M=0))
    case.call('meta', dims=dict(K=0))
    with pytest.raises(RuntimeError, match='requires CUDA tensors'):
        case.call('cpu', dims=dict(M=0))
    with pytest.raises(TypeError):
        case.call('cpu', dims=dict(M=0), d=lambda t: retype(t, F32))


def test_pairs_are_required():
    with pytest.raises(TypeError):
        deep_gemm.fp8_gemm_nt(torch.empty(1), torch.empty(1), torch.empty(1))


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('name', ['m_grouped_fp8_gemm_nt_masked', 'm_grouped_bf16_gemm_nt_masked'])
def test_masked_output_groups_back_to_back(name, device):
    case = CASES_BY_NAME[name]
    with pytest.raises(ValueError, match=rf'^{name}: d must hold its groups back to back'):
        case.call(device, d=lambda t: torch.empty(2, 136, 256, dtype=BF16, device=device)[:, :128])


def test_argument_binding_errors():
    case = CASES_BY_NAME['fp8_gemm_nt']
    (a, b, d), kwargs, t = case.build('meta')
    deep_gemm.fp8_gemm_nt(b=b, a=a, d=d, compiled_dims='k')  # keywords in any order
    fast = deep_gemm._C.fp8_gemm_nt
    fast(a, b, d, None, None, None, None, 'nk', False)  # DeepGEMM's order: c, recipe, recipe_a, recipe_b, compiled_dims
    with pytest.raises(TypeError, match=r"missing required argument 'd'"):
        fast(a, b)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'foo'"):
        fast(a, b, d, foo=1)
    with pytest.raises(TypeError, match=r'takes at most 9 arguments \(10 given\)'):
        fast(a, b, d, None, None, None, None, 'nk', False, 1)
    with pytest.raises(TypeError, match=r"multiple values for argument 'a'"):
        fast(a, b, d, a=a)
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: sfa must be a torch.Tensor; got int'):
        fast((a[0], 1), b, d)
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: compiled_dims must be a str; got int'):
        fast(a, b, d, compiled_dims=3)
    masked = CASES_BY_NAME['m_grouped_bf16_gemm_nt_masked']
    with pytest.raises(TypeError, match=r'expected_m must be an int; got str'):
        masked.call('meta', expected_m='8')


KG = 'k_grouped_bf16_gemm_tn_contiguous'


@pytest.mark.parametrize('device', DEVICES)
def test_k_grouped_bf16_shapes_and_ks(device):
    case = CASES_BY_NAME[KG]  # M = 128, N = 256, G = 2, ks = [128, 256]
    with pytest.raises(ValueError, match=rf'^{KG}: ks_cpu\[1\] must be a non-negative multiple of 128; got 200'):
        case.call(device, ks=[128, 200])
    with pytest.raises(ValueError, match=rf'^{KG}: ks_cpu\[0\] must be a non-negative multiple of 128; got -128'):
        case.call(device, ks=[-128, 512])
    with pytest.raises(ValueError, match=rf'^{KG}: ks_cpu must have one K per group \(G = d.shape\[0\] = 2\); got 3 values'):
        case.call(device, ks=[128, 128, 128])
    with pytest.raises(ValueError, match=rf'^{KG}: a\.shape\[0\] must equal sum\(ks\) = 256; got 384'):
        case.call(device, ks=[128, 128])  # a and b still hold 384 rows
    with pytest.raises(ValueError, match=rf'^{KG}: b\.shape\[0\] must equal sum\(ks\) = 384; got 256'):
        case.call(device, b=lambda t: t[:256])
    with pytest.raises(ValueError, match=rf'^{KG}: grouped_layout\.shape\[0\] \(G\) must equal d\.shape\[0\] = 2; got 3'):
        case.call(device, grouped_layout=torch.zeros(3, dtype=I32, device=device))
    with pytest.raises(ValueError, match=rf'^{KG}: a\.shape\[1\] \(M\) must equal d\.shape\[1\] = 128; got 136'):
        case.call(device, a=lambda t: torch.empty(384, 136, dtype=BF16, device=device))
    with pytest.raises(ValueError, match=rf'^{KG}: a must be a 2-D tensor \[sum\(ks\), M\]'):
        case.call(device, a=lambda t: t.view(3, 128, 128))
    with pytest.raises(ValueError, match=rf'^{KG}: d must be a 3-D tensor \[G, M, N\]'):
        case.call(device, d=lambda t: t.view(256, 256))


@pytest.mark.parametrize('device', DEVICES)
def test_k_grouped_bf16_layouts(device):
    case = CASES_BY_NAME[KG]
    # the operands are read M-/N-major: contiguous [sum(ks), M] / [sum(ks), N] with 16-byte rows
    with pytest.raises(ValueError, match=rf'^{KG}: a must be contiguous'):
        case.call(device, a=lambda t: t.t().contiguous().t())
    with pytest.raises(ValueError, match=rf'^{KG}: b must be contiguous'):
        case.call(device, b=lambda t: torch.empty(384, 512, dtype=BF16, device=device)[:, :256])
    with pytest.raises(ValueError, match=rf'^{KG}: d must be contiguous'):
        case.call(device, d=lambda t: torch.empty(2, 128, 264, dtype=F32, device=device)[..., :256])
    with pytest.raises(ValueError, match=rf'^{KG}: M \(a.shape\[1\] = 100\) must be a multiple of 8'):
        case.call(device, dims=dict(M=100))
    with pytest.raises(ValueError, match=rf'^{KG}: N \(b.shape\[1\] = 60\) must be a multiple of 8'):
        case.call(device, dims=dict(N=60))
    case.call('meta', dims=dict(M=100), ks=[0, 0], a=torch.empty(0, 100, dtype=BF16, device='meta'),
              b=torch.empty(0, 256, dtype=BF16, device='meta'))  # no K rows: nothing for TMA to read
    if device == 'cpu':  # overlap needs real addresses
        buf = torch.empty(384 * 128 * 2, dtype=F32)
        with pytest.raises(ValueError, match=rf'^{KG}: the output d overlaps the input a'):
            case.call(device, a=buf.view(BF16)[:384 * 128].view(384, 128), d=buf[:2 * 128 * 256].view(2, 128, 256))


@pytest.mark.parametrize('device', DEVICES)
def test_k_grouped_bf16_accumulator_c(device):
    case = CASES_BY_NAME[KG]
    case.call('meta', c=torch.empty(2, 128, 256, dtype=F32, device='meta'))
    case.call('meta', c=lambda _: None, d=lambda t: t)  # c omitted
    _, _, t = case.build('meta')
    case.call('meta', d=t['d'], c=t['d'])  # c is d: accumulate in place
    with pytest.raises(TypeError, match=rf'^{KG}: c must have dtype float32; got bfloat16'):
        case.call(device, c=torch.empty(2, 128, 256, dtype=BF16, device=device))
    with pytest.raises(TypeError, match=rf'^{KG}: d must have dtype float32; got bfloat16'):
        case.call(device, d=lambda t: retype(t, BF16))
    with pytest.raises(ValueError, match=rf'^{KG}: c\.shape\[0\] \(G\) must equal d\.shape\[0\] = 2; got 3'):
        case.call(device, c=torch.empty(3, 128, 256, dtype=F32, device=device))
    with pytest.raises(ValueError, match=rf'^{KG}: c must be contiguous'):
        case.call(device, c=torch.empty(2, 256, 128, dtype=F32, device=device).transpose(1, 2))


def test_k_grouped_bf16_arguments():
    case = CASES_BY_NAME[KG]
    (a, b, d, ks, ks_tensor), _, _ = case.build('meta')
    fast = deep_gemm._C.k_grouped_bf16_gemm_tn_contiguous
    fast(a, b, d, ks, ks_tensor, None, 'mn')
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a=a, b=b, d=d, ks_cpu=tuple(ks), grouped_layout=ks_tensor, compiled_dims='m')
    with pytest.raises(TypeError, match=r"missing required argument 'grouped_layout'"):
        fast(a, b, d, ks)
    with pytest.raises(TypeError, match=rf'^{KG}: ks_cpu must be a sequence of ints; got int'):
        fast(a, b, d, 128, ks_tensor)
    with pytest.raises(TypeError, match=rf'^{KG}: ks_cpu must be an int; got float'):
        fast(a, b, d, [128.0, 256], ks_tensor)
    with pytest.raises(TypeError, match=r'takes at most 8 arguments \(9 given\)'):
        fast(a, b, d, ks, ks_tensor, None, 'mn', False, 1)
    with pytest.raises(ValueError, match=r'compiled_dims must be a subset of "mnk"'):
        fast(a, b, d, ks, ks_tensor, compiled_dims='x')


def test_k_grouped_bf16_fake_cuda_tensors_validate():
    from torch._subclasses.fake_tensor import FakeTensorMode
    case = CASES_BY_NAME[KG]
    with FakeTensorMode():
        case.call('cuda')
        with pytest.raises(ValueError, match=rf'^{KG}: ks_cpu\[0\] must be a non-negative multiple of 128'):
            case.call('cuda', ks=[64, 320])
