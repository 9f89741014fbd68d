"""The torch.library side: schemas with a mutated `d`, meta/fake implementations (opcheck), and
tracing under torch.compile(fullgraph=True) without a GPU."""

import pytest
import torch

import deep_gemm
from compile_check import traced_targets
from op_cases import CASES, CASES_BY_NAME

ids = [c.name for c in CASES]


def op_args(case, device):
    """The torch.ops argument list (pairs unpacked) of a valid call."""
    args, kwargs, t = case.build(device)
    flat = []
    for x in args:
        flat.extend(x if isinstance(x, tuple) else [x])
    return flat, kwargs


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_schema_mutates_only_d(case):
    schema = getattr(torch.ops.deep_gemm, case.name).default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    # (the masked FP8 GEMM's enable_overlap also counts tiles in signal)
    assert mutated == (['d', 'signal'] if case.name == 'm_grouped_fp8_gemm_nt_masked' else ['d'])
    assert len(schema.returns) == 0


@pytest.mark.parametrize('case', CASES, ids=ids)
def test_opcheck_meta(case):
    args, kwargs = op_args(case, 'meta')
    torch.library.opcheck(getattr(torch.ops.deep_gemm, case.name).default, tuple(args), kwargs)


def test_opcheck_layout_meta_and_cpu():
    for device in ('meta', 'cpu'):
        torch.library.opcheck(torch.ops.deep_gemm.get_mn_major_tma_aligned_tensor.default, (torch.randn(130, 7).to(device),))
        torch.library.opcheck(torch.ops.deep_gemm.transform_sf_into_required_layout.default,
                              (torch.randn(130, 8).to(device), 130, 1000, [1, 128, 128], None, True, False))


def test_fake_tensor_mode_runs_validation():
    from torch._subclasses.fake_tensor import FakeTensorMode
    case = CASES_BY_NAME['m_grouped_fp8_gemm_nt_masked']
    with FakeTensorMode():
        case.call('cuda')
        with pytest.raises(ValueError, match='expected_m must be positive'):
            case.call('cuda', expected_m=0)
        sf = deep_gemm.get_mn_major_tma_aligned_tensor(torch.empty(3, 130, 7, device='cuda'))
        assert sf.shape == (3, 130, 7) and sf.stride() == (132 * 7, 1, 132)


@pytest.mark.parametrize('name', ['fp8_gemm_nt', 'fp8_gemm_tn', 'm_grouped_fp8_gemm_nt_masked', 'k_grouped_fp8_gemm_nt_contiguous',
                                  'bf16_gemm_nt', 'k_grouped_bf16_gemm_tn_contiguous', 'cublaslt_gemm_nt'])
@pytest.mark.parametrize('dynamic', [False, True])
def test_compile_fullgraph_traces(name, dynamic):
    """torch.compile(fullgraph=True) records the op in the graph (no graph break); running it on CPU tensors
    then reaches the op's CPU kernel, which says it needs CUDA."""
    case = CASES_BY_NAME[name]
    args, kwargs, _ = case.build('cpu')

    def f(*a):
        case.fn(*a, **kwargs)
        return a[2]  # d

    targets = traced_targets(f, args, f'{name}: requires CUDA tensors', dynamic)
    assert any(f'deep_gemm.{name}' in target for target in targets), targets


def test_compile_fullgraph_layout_utils():
    torch._dynamo.reset()

    def f(sf):
        return deep_gemm.get_mn_major_tma_aligned_tensor(sf) * 2

    compiled = torch.compile(f, backend='aot_eager', fullgraph=True)
    sf = torch.randn(130, 7)
    out = compiled(sf)
    assert torch.equal(out, sf * 2)


def test_dispatcher_errors_match_fast_path():
    """The same validation runs whether the op is reached through _C (fast path) or torch.ops."""
    case = CASES_BY_NAME['bf16_gemm_nt']
    args, kwargs, _ = case.build('cpu', d=lambda t: t[:, :-8])
    with pytest.raises(ValueError) as fast:
        case.fn(*args, **kwargs)
    with pytest.raises(ValueError) as slow:
        torch.ops.deep_gemm.bf16_gemm_nt(*args, **kwargs)
    assert str(fast.value) == str(slow.value)
