"""The torch-facing layer on a GPU: empty problems, device errors, opcheck and torch.compile on CUDA,
CUDA-graph capture (the GPU side of test_torch_library.py). Kernel correctness is tested in
test_fp8_gemm_1d2d_gpu.py and test_bf16_gemm_gpu.py. Every op of op_cases.CASES has its kernel: a
NotImplementedError from any of them fails the test."""

import pytest
import torch

import deep_gemm
from deep_gemm.utils import dequantize_per_block, dequantize_per_token
from gemm_checks import assert_gemm_close, scaled_like
from op_cases import BF16, CASES, CASES_BY_NAME, F32

pytestmark = pytest.mark.gpu
ids = [c.name for c in CASES]


def written_rows(t):
    """Index of the output elements an op must write (masked ops: the first masked_m[g] rows of group g;
    fp8_gemm_nt_skip_head_mid: every head's left and right columns, not its mid ones)."""
    if 'head_splits' in t:
        from skip_head_mid_reference import head_split_columns
        left, _, right = t['head_splits']
        return (slice(None), head_split_columns(t['b'].shape[0] // (left + right), t['head_splits']).to(t['d'].device))
    if 'masked_m' not in t:
        return (Ellipsis,)
    rows = torch.arange(t['d'].shape[1], device=t['d'].device)
    return (rows[None, :] < t['masked_m'][:, None],)


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_valid_call_writes_zeros(case, hopper):
    """Zero operands (unit scales) give exact zeros in every element the op must write (outputs NaN first)."""
    args, kwargs, t = case.build('cuda')
    for name in ('a', 'b'):
        (t[name].view(torch.uint8) if t[name].dtype == torch.float8_e4m3fn else t[name]).zero_()
    if 'masked_m' in t:  # group 0 partly, group 1 fully
        t['masked_m'].copy_(torch.tensor([5, t['d'].shape[1]], dtype=torch.int32))
    t['d'].fill_(float('nan'))
    case.fn(*args, **kwargs)
    torch.cuda.synchronize()
    written = t['d'][written_rows(t)]
    assert written.numel() > 0
    assert torch.all(written == 0), f'{case.name}: {int(written.isnan().sum())} of {written.numel()} elements not written'


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_empty_m_or_n_returns_without_writing(case, hopper, monkeypatch, tmp_path):
    """M = 0 or N = 0 returns before any compile or launch: with an empty cache and a compiler that cannot
    run, the call succeeds, leaves the cache empty and puts no kernel on the GPU."""
    monkeypatch.setenv('DG_JIT_CACHE_DIR', str(tmp_path))
    monkeypatch.setenv('DG_JIT_USE_NVRTC', '0')
    monkeypatch.setenv('DG_JIT_NVCC_COMPILER', str(tmp_path / 'no-such-nvcc'))
    deep_gemm.reload_settings()
    try:
        for dim in ('M', 'N'):
            args, kwargs, t = case.build('cuda', dims={dim: 0})
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                case.fn(*args, **kwargs)
                torch.cuda.synchronize()
            kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            assert kernels == [], f'{case.name} with {dim} = 0 ran {kernels}'
        cache = tmp_path / 'cache'
        assert not cache.exists() or list(cache.iterdir()) == []
    finally:
        monkeypatch.undo()
        deep_gemm.reload_settings()


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
    # The product of the dequantized operands: only the kernel's own error is left, so the bars are tight.
    return a8, b8, dequantize_per_token(*a8) @ dequantize_per_block(*b8).t()


def test_fp8_gemm_nt_opcheck_cuda(hopper):
    (a, sfa), (b, sfb), _ = fp8_problem(256, 512, 384)
    d = torch.empty(256, 512, device='cuda', dtype=BF16)
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)  # implemented: a NotImplementedError fails the test
    # test_schema is left out on CUDA: torch's SchemaCheckMode compares inputs before and after with
    # arithmetic that has no float8 CUDA kernel ("mul_cuda" not implemented for Float8_e4m3fn, seen on
    # torch 2.11). The schema itself is checked by opcheck on meta tensors in test_torch_library.py.
    torch.library.opcheck(torch.ops.deep_gemm.fp8_gemm_nt.default, (a, sfa, b, sfb, d),
                          test_utils=('test_faketensor', 'test_autograd_registration', 'test_aot_dispatch_dynamic'))


def test_fp8_gemm_nt_compile_and_graph(hopper):
    (a, sfa), (b, sfb), ref = fp8_problem(128, 256, 512)
    d = torch.empty(128, 256, device='cuda', dtype=BF16)
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d)
    assert_gemm_close(d, ref, 'fp8_gemm_nt')

    def f(a, sfa, b, sfb):
        out = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=torch.bfloat16)
        deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), out)
        return out * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    assert_gemm_close(compiled(a, sfa, b, sfb), ref * 2, 'torch.compile')

    sfa_kernel = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
    d.fill_(float('nan'))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        deep_gemm.fp8_gemm_nt((a, sfa_kernel), (b, sfb), d)
    graph.replay()
    torch.cuda.synchronize()
    assert_gemm_close(d, ref, 'fp8_gemm_nt')


def test_fp8_gemm_nt_accumulates_c(hopper):
    (a, sfa), (b, sfb), ref = fp8_problem(128, 256, 512)
    c = scaled_like(ref)  # as large as the product: a dropped or doubled c fails
    d = torch.full((128, 256), float('nan'), device='cuda', dtype=BF16)
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d, c=c)
    assert_gemm_close(d, ref + c, 'c separate')
    d2 = c.to(BF16)
    c_value = d2.float()  # what the kernel reads as c
    deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), d2, c=d2)  # c is d: accumulate in place
    assert_gemm_close(d2, ref + c_value, 'c is d')
