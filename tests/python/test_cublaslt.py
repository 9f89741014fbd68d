"""cublaslt_gemm_{nt,nn,tn,tt} without a GPU: the cuBLASLt library is found and its symbols resolve, and the
rules specific to these ops (c dtype per d dtype, c aliasing d, MN-major operands, 16-byte rows) hold on
CPU and meta tensors. The rules shared with every op (dtype, rank, N mismatch, schema, opcheck) run through
op_cases.CASES in test_validation.py / test_torch_library.py."""

import pytest
import torch

import deep_gemm

BF16, F32 = torch.bfloat16, torch.float32
LAYOUTS = ('nt', 'nn', 'tn', 'tt')


def operands(layout, m, n, k, device, a_mn_major=False, b_mn_major=False):
    """a and b in the argument shapes of `layout` ([M, K] or [K, M]; [N, K] or [K, N]), each stored K-major
    unless *_mn_major."""
    a = torch.empty(k, m, dtype=BF16, device=device).t() if a_mn_major else torch.empty(m, k, dtype=BF16, device=device)
    b = torch.empty(k, n, dtype=BF16, device=device).t() if b_mn_major else torch.empty(n, k, dtype=BF16, device=device)
    return (a if layout[0] == 'n' else a.t()), (b if layout[1] == 't' else b.t())


def op(layout):
    return getattr(deep_gemm, f'cublaslt_gemm_{layout}')


@pytest.mark.skipif(torch.version.cuda is None, reason='a CPU-only torch does not ship cuBLASLt')
def test_library_loads_without_a_gpu():
    info = deep_gemm._C._cublaslt_library()
    assert 'libcublasLt.so.' in info['path']
    assert info['version'] >= 11000  # e.g. 130100 for cuBLAS 13.1
    assert deep_gemm._C._cublaslt_library() == info  # loaded once


@pytest.mark.parametrize('layout', LAYOUTS)
@pytest.mark.parametrize('a_mn,b_mn', [(False, False), (True, False), (False, True), (True, True)])
def test_both_operand_majors_are_accepted(layout, a_mn, b_mn):
    a, b = operands(layout, 64, 96, 128, 'meta', a_mn, b_mn)
    op(layout)(a, b, torch.empty(64, 96, dtype=BF16, device='meta'))


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_c_dtype_follows_d(device):
    a, b = operands('nt', 64, 96, 128, device)
    d16, d32 = torch.empty(64, 96, dtype=BF16, device=device), torch.empty(64, 96, dtype=F32, device=device)
    if device == 'meta':
        deep_gemm.cublaslt_gemm_nt(a, b, d16, torch.empty(64, 96, dtype=F32, device=device))  # float32 c, bfloat16 d
        deep_gemm.cublaslt_gemm_nt(a, b, d32, torch.empty(64, 96, dtype=F32, device=device))
    with pytest.raises(TypeError, match=r'^cublaslt_gemm_nt: c must have dtype float32; got bfloat16'):
        deep_gemm.cublaslt_gemm_nt(a, b, d32, torch.empty(64, 96, dtype=BF16, device=device))
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: c\.shape\[0\] \(M\) must equal'):
        deep_gemm.cublaslt_gemm_nt(a, b, d16, torch.empty(65, 96, dtype=BF16, device=device))


def test_c_may_be_d_but_not_overlap_it():
    a, b = operands('nt', 64, 96, 128, 'cpu')
    d = torch.empty(64, 96, dtype=BF16)
    with pytest.raises(RuntimeError, match=r'^cublaslt_gemm_nt: requires CUDA tensors'):  # c is d: valid
        deep_gemm.cublaslt_gemm_nt(a, b, d, d)
    big = torch.empty(65, 96, dtype=BF16)
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: .*overlap'):
        deep_gemm.cublaslt_gemm_nt(a, b, big[1:], big[:64])


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_layout_errors(device):
    a, b = operands('nt', 64, 96, 128, device)
    d = torch.empty(64, 96, dtype=BF16, device=device)
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: a must be K-major or M-major'):
        deep_gemm.cublaslt_gemm_nt(torch.empty(64, 256, dtype=BF16, device=device)[:, ::2], b, d)
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: a stride along dim 0 must be a multiple of 16 bytes'):
        deep_gemm.cublaslt_gemm_nt(torch.empty(64, 100, dtype=BF16, device=device),
                                   torch.empty(96, 100, dtype=BF16, device=device), d)
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_nt: d must be N-major'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(96, 64, dtype=BF16, device=device).t())
    with pytest.raises(ValueError, match=r'^cublaslt_gemm_tn: b\.shape\[0\] \(K\) must equal'):
        deep_gemm.cublaslt_gemm_tn(torch.empty(128, 64, dtype=BF16, device=device), torch.empty(96, 128, dtype=BF16, device=device),
                                   d)


def test_mixed_devices_is_runtime_error():
    a, b = operands('nt', 64, 96, 128, 'cpu')
    with pytest.raises(RuntimeError, match=r'^cublaslt_gemm_nt: cannot mix meta tensors with tensors on a device; d is on meta'):
        deep_gemm.cublaslt_gemm_nt(a, b, torch.empty(64, 96, dtype=BF16, device='meta'))


def test_torch_ops_and_fast_path_agree():
    a, b = operands('nn', 64, 96, 128, 'cpu')
    d = torch.empty(64, 96, dtype=BF16)
    for fn in (deep_gemm.cublaslt_gemm_nn, torch.ops.deep_gemm.cublaslt_gemm_nn):
        with pytest.raises(RuntimeError, match=r'^cublaslt_gemm_nn: requires CUDA tensors; a is on cpu'):
            fn(a, b, d)
