"""cublaslt_gemm_{nt,nn,tn,tt} with float8_e4m3fn a and b, without a GPU: which calls validate (meta tensors
pass, CPU tensors reach "requires CUDA tensors" after validation) and which raise before any launch: a mix
of dtypes (TypeError), an operand that is not K-major in memory or a K that is not a multiple of 16
(ValueError: cuBLASLt's FP8 kernels take only the "TN" form with 16-byte K rows), a c/d dtype pair outside
the rules. The torch.library side (opcheck, torch.compile(fullgraph=True)) takes FP8 operands too. The
GPU results are checked in test_cublaslt_gpu.py."""

import pytest
import torch

import deep_gemm
from compile_check import traced_targets

FP8, BF16, F32 = torch.float8_e4m3fn, torch.bfloat16, torch.float32
NEEDS_K_MAJOR = r"cuBLASLt's FP8 path needs both operands K-major"


def op(layout):
    return getattr(deep_gemm, f'cublaslt_gemm_{layout}')


def kmajor(m, n, k, device, a_dtype=FP8, b_dtype=FP8):
    """a [M, K] and b [N, K], both row-major (K-major), the nt form cuBLASLt's FP8 path needs."""
    return torch.empty(m, k, dtype=a_dtype, device=device), torch.empty(n, k, dtype=b_dtype, device=device)


@pytest.mark.parametrize('d_dtype', [BF16, F32])
def test_nt_is_accepted(d_dtype):
    a, b = kmajor(77, 576, 7168, 'meta')
    d = torch.empty(77, 576, dtype=d_dtype, device='meta')
    deep_gemm.cublaslt_gemm_nt(a, b, d)
    deep_gemm.cublaslt_gemm_nt(a, b, d, d)  # accumulate in place, as DeepGEMM's tests call it
    deep_gemm.cublaslt_gemm_nt(a, b, d, torch.empty(77, 576, dtype=F32, device='meta'))
    a, b = kmajor(1, 64, 16, 'meta')  # M = 1, the smallest K
    deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(1, 64, dtype=d_dtype, device='meta'))


def test_cpu_tensors_validate_then_need_cuda():
    a, b = kmajor(64, 96, 128, 'cpu')
    d = torch.empty(64, 96, dtype=F32)
    for fn in (deep_gemm.cublaslt_gemm_nt, torch.ops.deep_gemm.cublaslt_gemm_nt):
        with pytest.raises(RuntimeError, match=r'^cublaslt_gemm_nt: requires CUDA tensors; a is on cpu'):
            fn(a, b, d, d)


@pytest.mark.parametrize('layout', ['nn', 'tn', 'tt'])
def test_other_forms_of_k_major_storage_are_accepted(layout):
    """The layout letters only name the argument shapes: [N, K] storage passed as its [K, N] transpose is still K-major."""
    a, b = kmajor(64, 96, 128, 'meta')
    op(layout)(a if layout[0] == 'n' else a.t(), b if layout[1] == 't' else b.t(), torch.empty(64, 96, dtype=BF16, device='meta'))


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_mixed_dtypes_are_type_errors(device):
    a8, b8 = kmajor(64, 96, 128, device)
    a16, b16 = kmajor(64, 96, 128, device, BF16, BF16)
    d = torch.empty(64, 96, dtype=BF16, device=device)
    for a, b, got in ((a8, b16, 'float8_e4m3fn and bfloat16'), (a16, b8, 'bfloat16 and float8_e4m3fn')):
        with pytest.raises(TypeError) as info:
            deep_gemm.cublaslt_gemm_nt(a, b, d)
        assert str(info.value) == ('cublaslt_gemm_nt: a and b must have the same dtype (both bfloat16 or both float8_e4m3fn); '
                                   f'got {got}')
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: a and b must have the same dtype .*; got float16 and float8_e4m3fn'):
        deep_gemm.cublaslt_gemm_nt(torch.empty(64, 128, dtype=torch.float16, device=device), b8, d)
    e5m2 = torch.empty(96, 128, dtype=torch.float8_e5m2, device=device)
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: a and b must have the same dtype .*; got float8_e4m3fn and float8_e5m2'):
        deep_gemm.cublaslt_gemm_nt(a8, e5m2, d)


def test_bf16_rules_are_unchanged():
    """The BF16 messages when no operand is FP8, and the bf16_gemm_* ops (which share these rules) stay BF16 only."""
    a16, b16 = kmajor(64, 96, 128, 'meta', BF16, BF16)
    d = torch.empty(64, 96, dtype=BF16, device='meta')
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: b must have dtype bfloat16; got float16'):
        deep_gemm.cublaslt_gemm_nt(a16, b16.to(torch.float16), d)
    a8, b8 = kmajor(64, 96, 128, 'meta')
    with pytest.raises(TypeError, match=r'^bf16_gemm_nt: a must have dtype bfloat16; got float8_e4m3fn'):
        deep_gemm.bf16_gemm_nt(a8, b8, d)


# (layout, the operand that is not K-major, the arguments): MN-major storage contiguous in the nn/tn/tt argument
# shapes, or a transposed view in nt, or no unit stride at all; the other operand K-major.
M, N, K = 64, 96, 128
NON_K_MAJOR = {
    'nn_b': ('nn', 'b', lambda e: (e(M, K), e(K, N))),
    'tn_a': ('tn', 'a', lambda e: (e(K, M), e(N, K).t())),
    'tt_a': ('tt', 'a', lambda e: (e(K, M), e(N, K))),
    'nt_a': ('nt', 'a', lambda e: (e(K, M).t(), e(N, K))),
    'nt_b': ('nt', 'b', lambda e: (e(M, K), e(K, N).t())),
    'nt_a_no_unit_stride': ('nt', 'a', lambda e: (e(M, 2 * K)[:, ::2], e(N, K))),  # the BF16 rules would offer M-major
}


@pytest.mark.parametrize('device', ['meta', 'cpu'])
@pytest.mark.parametrize('case', NON_K_MAJOR)
def test_non_k_major_operand_is_value_error(device, case):
    layout, which, build = NON_K_MAJOR[case]
    a, b = build(lambda *shape: torch.empty(shape, dtype=FP8, device=device))
    with pytest.raises(ValueError, match=rf'^cublaslt_gemm_{layout}: {which} must be K-major in memory .*{NEEDS_K_MAJOR}'):
        op(layout)(a, b, torch.empty(M, N, dtype=BF16, device=device))


def test_non_k_major_message():
    a, b = kmajor(64, 96, 128, 'meta')
    with pytest.raises(ValueError) as info:
        deep_gemm.cublaslt_gemm_nn(a, torch.empty(128, 96, dtype=FP8, device='meta'), torch.empty(64, 96, dtype=BF16, device='meta'))
    assert str(info.value) == ("cublaslt_gemm_nn: b must be K-major in memory (stride 1 along K, i.e. b.stride(0) == 1): cuBLASLt's "
                               "FP8 path needs both operands K-major; got shape [128, 96] with strides (96, 1) (pass b as the "
                               "transpose of a row-major [N, K] tensor)")


@pytest.mark.parametrize('device', ['meta', 'cpu'])
@pytest.mark.parametrize('m', [1, 64])
def test_k_must_be_a_multiple_of_16(device, m):
    # rows padded to 48 bytes: the row stride is aligned, K = 40 itself is not
    a = torch.empty(m, 48, dtype=FP8, device=device)[:, :40]
    b = torch.empty(96, 48, dtype=FP8, device=device)[:, :40]
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: K must be a multiple of 16 for float8_e4m3fn operands .*; got K = 40$'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(m, 96, dtype=F32, device=device))
    # contiguous rows of 40 bytes: the row stride rule (of a, or of b when M = 1) comes first
    a, b = kmajor(m, 96, 40, device)
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: [ab] stride along dim 0 must be a multiple of 16 bytes'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(m, 96, dtype=BF16, device=device))


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_c_and_d_dtypes(device):
    """d bfloat16 or float32; c float32 for a float32 d (cuBLASLt's FP8 table pairs C and D: bf16/bf16, fp32/fp32;
    a float32 c for a bfloat16 d is rounded into d first)."""
    a, b = kmajor(64, 96, 128, device)
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: d must have dtype bfloat16 or float32; got float16'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(64, 96, dtype=torch.float16, device=device))
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: d must have dtype bfloat16 or float32; got float8_e4m3fn'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(64, 96, dtype=FP8, device=device))
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: c must have dtype float32; got bfloat16'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(64, 96, dtype=F32, device=device), torch.empty(64, 96, dtype=BF16, device=device))


def test_opcheck_meta():
    # opcheck also passes for an op that raises the same error everywhere: call it directly first.
    a, b = kmajor(64, 96, 128, 'meta')
    for d_dtype in (BF16, F32):
        d = torch.empty(64, 96, dtype=d_dtype, device='meta')
        for c in (None, torch.empty(64, 96, dtype=F32, device='meta')):
            torch.ops.deep_gemm.cublaslt_gemm_nt(a, b, d, c)
            torch.library.opcheck(torch.ops.deep_gemm.cublaslt_gemm_nt.default, (a, b, d, c))


@pytest.mark.parametrize('dynamic', [False, True])
def test_compile_fullgraph_traces(dynamic):
    """torch.compile(fullgraph=True) records the op with FP8 operands (the fake implementation accepts them); on CPU
    tensors the op then says it needs CUDA."""
    def f(a, b, d):
        deep_gemm.cublaslt_gemm_nt(a, b, d, d)
        return d

    a, b = kmajor(64, 96, 128, 'cpu')
    targets = traced_targets(f, (a, b, torch.zeros(64, 96, dtype=F32)), 'cublaslt_gemm_nt: requires CUDA tensors',
                             dynamic)
    assert any('deep_gemm.cublaslt_gemm_nt' in target for target in targets), targets
