"""The torch-facing layer on a GPU: empty problems, device errors, opcheck and torch.compile on CUDA,
CUDA-graph capture. Kernel correctness is tested in test_fp8_gemm_gpu.py; ops whose kernel is not in
this build must say so with NotImplementedError."""

import pytest
import torch

import deep_gemm
from deep_gemm.testing import calc_diff
from op_cases import BF16, CASES, CASES_BY_NAME, F32

pytestmark = pytest.mark.gpu
ids = [c.name for c in CASES]


def call_or_not_available(fn):
    """Runs fn; returns False when the op's kernel is not in this build (NotImplementedError)."""
    try:
        fn()
        return True
    except NotImplementedError as e:
        assert 'not available in this build yet' in str(e)
        return False


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_valid_call_runs_or_says_not_available(case, hopper):
    args, kwargs, t = case.build('cuda')
    if t['a'].dtype == torch.float8_e4m3fn:
        t['a'].view(torch.uint8).zero_()
        t['b'].view(torch.uint8).zero_()
    else:
        t['a'].zero_()
        t['b'].zero_()
    if call_or_not_available(lambda: case.fn(*args, **kwargs)):
        torch.cuda.synchronize()


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_empty_m_or_n_returns_without_writing(case, hopper):
    for dim in ('M', 'N'):
        args, kwargs, t = case.build('cuda', dims={dim: 0})
        case.fn(*args, **kwargs)  # nothing to compute, no kernel needed


@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'fp8_gemm_tn', 'bf16_gemm_nt'])
def test_k_zero_gives_c_or_zeros(name, hopper):
    case = CASES_BY_NAME[name]
    args, kwargs, t = case.build('cuda', dims=dict(K=0))
    t['d'].fill_(float('nan'))
    case.fn(*args, **kwargs)
    assert torch.all(t['d'] == 0)
    c = torch.randn(t['d'].shape, device='cuda', dtype=F32)
    kwargs['c'] = c
    case.fn(*args, **kwargs)
    assert torch.equal(t['d'], c.to(t['d'].dtype))


def test_cpu_and_cuda_mixed_is_runtime_error():
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(RuntimeError, match=r'^fp8_gemm_nt: requires CUDA tensors; sfb is on cpu'):
        case.call('cuda', sfb=lambda t: t.cpu())


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason='needs 2 GPUs')
def test_two_devices_is_runtime_error():
    case = CASES_BY_NAME['fp8_gemm_nt']
    with pytest.raises(RuntimeError, match='same CUDA device'):
        case.call('cuda:0', d=lambda t: t.to('cuda:1'))


def test_non_hopper_is_not_implemented():
    if torch.cuda.get_device_capability()[0] == 9:
        pytest.skip('Hopper GPU')
    with pytest.raises(NotImplementedError, match='SM90'):
        CASES_BY_NAME['fp8_gemm_nt'].call('cuda')


def fp8_problem(m, n, k):
    a = torch.randn(m, k, device='cuda', dtype=BF16)
    b = torch.randn(n, k, device='cuda', dtype=BF16)
    a8 = deep_gemm.per_token_cast_to_fp8(a)
    b8 = deep_gemm.per_block_cast_to_fp8(b)
    return a8, b8, (a.float() @ b.float().t())


def test_fp8_gemm_nt_opcheck_cuda(hopper):
    (a, sfa), (b, sfb), _ = fp8_problem(256, 512, 384)
    d = torch.empty(256, 512, device='cuda', dtype=BF16)
    if not call_or_not_available(lambda: deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)):
        pytest.skip('fp8_gemm_nt kernel not in this build')
    # test_schema is left out on CUDA: torch's SchemaCheckMode compares inputs before and after with
    # arithmetic that has no float8 CUDA kernel ("mul_cuda" not implemented for Float8_e4m3fn, seen on
    # torch 2.11). The schema itself is checked by opcheck on meta tensors in test_torch_library.py.
    torch.library.opcheck(torch.ops.deep_gemm.fp8_gemm_nt.default, (a, sfa, b, sfb, d),
                          test_utils=('test_faketensor', 'test_autograd_registration', 'test_aot_dispatch_dynamic'))


def test_fp8_gemm_nt_compile_and_graph(hopper):
    (a, sfa), (b, sfb), ref = fp8_problem(128, 256, 512)
    d = torch.empty(128, 256, device='cuda', dtype=BF16)
    if not call_or_not_available(lambda: deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)):
        pytest.skip('fp8_gemm_nt kernel not in this build')
    assert float(calc_diff(d, ref)) < 1e-3

    def f(a, sfa, b, sfb):
        out = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=torch.bfloat16)
        deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), out)
        return out * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    assert float(calc_diff(compiled(a, sfa, b, sfb), ref * 2)) < 1e-3

    sfa_kernel = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
    d.fill_(float('nan'))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        deep_gemm.fp8_gemm_nt((a, sfa_kernel), (b, sfb), d)
    graph.replay()
    torch.cuda.synchronize()
    assert float(calc_diff(d, ref)) < 1e-3


def test_fp8_gemm_nt_accumulates_c(hopper):
    (a, sfa), (b, sfb), ref = fp8_problem(128, 256, 512)
    c = torch.randn(128, 256, device='cuda', dtype=F32)
    d = torch.empty(128, 256, device='cuda', dtype=BF16)
    if not call_or_not_available(lambda: deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d, c=c)):
        pytest.skip('fp8_gemm_nt kernel not in this build')
    assert float(calc_diff(d, ref + c)) < 1e-3
    d2 = c.to(BF16)
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d2, c=d2)  # c is d: accumulate in place
    assert float(calc_diff(d2, ref + c)) < 1e-3
