"""fp8_gemm_nt_skip_head_mid on the CPU: the float reference against an independent formulation, the
op's validation on CPU and meta tensors, its fake implementation under torch.compile, and the kernel it
plans (docs/compat_2_8.md)."""

import pytest
import torch

import deep_gemm
from deep_gemm import _C
from compile_check import traced_targets
from skip_head_mid_reference import head_split_columns, skip_head_mid_reference

FP8, F32, BF16 = torch.float8_e4m3fn, torch.float32, torch.bfloat16
OP = 'fp8_gemm_nt_skip_head_mid'


@pytest.mark.parametrize('head_splits,num_heads', [((128, 64, 128), 2), ((3, 5, 7), 4), ((16, 0, 16), 3), ((0, 8, 24), 2),
                                                   ((24, 8, 0), 2)])
def test_reference_matches_column_map(head_splits, num_heads):
    left, mid, right = head_splits
    g = torch.Generator().manual_seed(sum(head_splits) + num_heads)
    m, k = 5, 64
    a, b = torch.randn(m, k, generator=g), torch.randn(num_heads * (left + right), k, generator=g)
    d = torch.randn(m, num_heads * (left + mid + right), generator=g)
    got = skip_head_mid_reference(a.double() @ b.double().T, d, head_splits)
    # Independent: scatter the einsum product through the explicit column map.
    want = d.double().clone()
    want[:, head_split_columns(num_heads, head_splits)] = torch.einsum('mk,nk->mn', a.double(), b.double())
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    written = torch.zeros(d.shape[1], dtype=torch.bool)
    written[head_split_columns(num_heads, head_splits)] = True
    assert torch.equal(got[:, ~written], d.double()[:, ~written])  # mid columns untouched
    assert int(written.sum()) == num_heads * (left + right)


def _args(device, m=64, heads=2, k=256, head_splits=(96, 64, 32), width=None, d_dtype=BF16):
    left, mid, right = head_splits
    n = heads * (left + right)
    a = (torch.empty(m, k, dtype=FP8, device=device), torch.ones(m, k // 128, dtype=F32, device=device))
    b = (torch.empty(n, k, dtype=FP8, device=device), torch.ones((n + 127) // 128, k // 128, dtype=F32, device=device))
    d = torch.empty(m, heads * (left + mid + right) if width is None else width, dtype=d_dtype, device=device)
    return a, b, d, head_splits


@pytest.mark.parametrize('device', ['cpu', 'meta'])
def test_validation(device):
    fn = deep_gemm.fp8_gemm_nt_skip_head_mid
    a, b, d, hs = _args(device)
    if device == 'meta':
        fn(a, b, d, hs)
        fn(a, b, d, list(hs), (1, 128, 128), 'nk', True)  # DeepGEMM's positional form
    else:
        with pytest.raises(RuntimeError, match=f'^{OP}: requires CUDA tensors'):
            fn(a, b, d, hs)
    with pytest.raises(ValueError, match=rf'^{OP}: head_splits must be 3 ints \(left, mid, right\); got 2 values'):
        fn(a, b, d, (96, 64))
    with pytest.raises(ValueError, match=r'head_splits \(left, mid, right\) must be non-negative with left \+ right > 0.*got \(96, -1, 32\)'):
        fn(a, b, d, (96, -1, 32))
    with pytest.raises(ValueError, match=r'must be non-negative with left \+ right > 0'):
        fn(a, b, torch.empty(64, 8, dtype=BF16, device=device), (0, 8, 0))
    with pytest.raises(ValueError, match=r'N \(b.shape\[0\] = 256\) must be a multiple of left \+ right = 96'):
        fn(a, b, d, (64, 64, 32))
    a2, b2, d2, hs2 = _args(device, width=2 * 192 + 1)
    with pytest.raises(ValueError, match=r'd.shape\[1\] must be num_heads \* \(left \+ mid \+ right\) = 2 \* 192 = 384 for head_splits '
                                         r'\(96, 64, 32\) and N = 256; got 385'):
        fn(a2, b2, d2, hs2)
    with pytest.raises(ValueError, match=r'recipe must be \(1, 128, 128\) on SM90'):
        fn(a, b, d, hs, (1, 1, 128))
    a3, b3, d3, hs3 = _args(device, d_dtype=F32)
    with pytest.raises(TypeError, match=r'd must have dtype bfloat16 with recipe \(1, 128, 128\) \(the 1D2D kernel writes BF16\); got float32$'):
        fn(a3, b3, d3, hs3)
    with pytest.raises(ValueError, match=r'd.shape\[0\] \(M\) must equal a.shape\[0\]'):
        fn(a, b, d[:32], hs)


def test_compile_fullgraph_traces():
    a, b, d, hs = _args('cpu')

    def f(a0, sfa, b0, sfb, d):
        deep_gemm.fp8_gemm_nt_skip_head_mid((a0, sfa), (b0, sfb), d, hs)
        return d

    targets = traced_targets(f, (a[0], a[1], b[0], b[1], d), f'{OP}: requires CUDA tensors')
    assert any(f'deep_gemm.{OP}' in t for t in targets), targets
    schema = str(getattr(torch.ops.deep_gemm, OP).default._schema)
    assert 'int[] head_splits' in schema and 'Tensor(a!) d' in schema


def test_planned_kernel_has_the_head_split_epilogue():
    (name, symbol, code), = _C._plan_gemm_call(OP, 4096, 32 * 256, 512, head_splits=[128, 64, 128])
    assert symbol.endswith('_hs128_64_128') and 'HeadSplitStoreEpilogue<' in code
    assert '#include <deep_gemm/epilogue/head_split_store.cuh>' in code
    # The same shape without head splits is today's kernel: no new text in its source.
    (_, plain_symbol, plain_code), = _C._plan_gemm_call('fp8_gemm_nt', 4096, 32 * 256, 512)
    assert 'head_split' not in plain_code and 'HeadSplit' not in plain_code and '_hs' not in plain_symbol
    with pytest.raises(RuntimeError, match='takes head_splits'):
        _C._plan_gemm_call(OP, 4096, 8192, 512)


def test_warmup_call_list_plans_the_head_split_kernel():
    from deep_gemm._warmup_calls import plan_call, plan_target
    target = plan_target('sm_90a', 132, 232448)
    records = plan_call({'op': OP, 'm': 4096, 'n': 8192, 'k': 512, 'head_splits': [128, 64, 128]}, target)
    assert any(r.symbol.endswith('_hs128_64_128') for r in records), [r.symbol for r in records]
    with pytest.raises(RuntimeError, match='takes head_splits'):
        plan_call({'op': OP, 'm': 4096, 'n': 8192, 'k': 512}, target)
