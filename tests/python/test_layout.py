"""Scale-factor layout utilities: get_tma_aligned_size, get_mn_major_tma_aligned_tensor (CPU fallback,
meta shapes, and the JIT CUDA kernel on a GPU) and transform_sf_into_required_layout."""

import pytest
import torch

import deep_gemm
from deep_gemm import _C


def reference_mn_major(sf: torch.Tensor) -> torch.Tensor:
    """What the kernel layout must hold: same values, M-major, M stride align(M, 4)."""
    batched = sf.dim() == 3
    x = sf if batched else sf.unsqueeze(0)
    g, m, k = x.shape
    am = (m + 3) // 4 * 4
    out = torch.zeros(g, k, am, dtype=sf.dtype, device=sf.device)
    out[:, :, :m] = x.transpose(1, 2)
    out = out.transpose(1, 2)[:, :m]
    return out if batched else out[0]


def check_kernel_layout(y: torch.Tensor, shape):
    m = shape[-2]
    am = (m + 3) // 4 * 4
    assert tuple(y.shape) == tuple(shape)
    assert y.dtype == torch.float32
    if m > 1:
        assert y.stride(-2) == 1
    assert y.stride(-1) == am
    if y.dim() == 3 and y.shape[0] > 1:
        assert y.stride(0) == am * shape[-1]


@pytest.mark.parametrize('x,size,expected', [(0, 4, 0), (1, 4, 4), (4, 4, 4), (130, 4, 132), (130, 2, 136), (17, 1, 32),
                                             (7, 16, 7), (9, 8, 10)])
def test_get_tma_aligned_size(x, size, expected):
    assert deep_gemm.get_tma_aligned_size(x, size) == expected
    assert _C.get_tma_aligned_size(x, size) == expected


def test_get_tma_aligned_size_errors():
    for fn in (deep_gemm.get_tma_aligned_size, _C.get_tma_aligned_size):
        with pytest.raises(ValueError, match='element_size must divide 16'):
            fn(10, 3)
        with pytest.raises(ValueError, match='non-negative'):
            fn(-1, 4)


SHAPES = [(128, 56), (130, 7), (1, 3), (5, 1), (3, 130, 7), (2, 1, 5), (4, 17, 33), (0, 4), (6, 0)]


@pytest.mark.parametrize('shape', SHAPES)
def test_mn_major_cpu_matches_reference(shape):
    sf = torch.randn(shape)
    y = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    check_kernel_layout(y, shape)
    assert torch.equal(y, sf)
    assert torch.equal(y, reference_mn_major(sf))


def test_mn_major_padding_is_zero_on_cpu():
    sf = torch.randn(5, 3)
    y = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    storage = torch.as_strided(y, (3, 8), (8, 1))  # the whole padded [K', align(M, 4)] block
    assert torch.equal(storage[:, 5:], torch.zeros(3, 3))


def test_mn_major_passthrough_and_noncontiguous_inputs():
    sf = torch.randn(130, 7)
    y = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    assert deep_gemm.get_mn_major_tma_aligned_tensor(y) is y  # already in the kernel layout: free
    odd = torch.randn(7, 260)[:, ::2].t()  # neither K- nor M-major
    assert torch.equal(deep_gemm.get_mn_major_tma_aligned_tensor(odd), odd)
    mn_major_unaligned = torch.randn(7, 130).t()  # M-major but stride 130 (not a multiple of 4)
    z = deep_gemm.get_mn_major_tma_aligned_tensor(mn_major_unaligned)
    assert z is not mn_major_unaligned and z.stride() == (1, 132) and torch.equal(z, mn_major_unaligned)


@pytest.mark.parametrize('shape', SHAPES)
def test_mn_major_meta_shapes(shape):
    y = deep_gemm.get_mn_major_tma_aligned_tensor(torch.empty(shape, device='meta'))
    assert y.device.type == 'meta'
    check_kernel_layout(y, shape)


def test_mn_major_errors():
    with pytest.raises(TypeError, match=r'^get_mn_major_tma_aligned_tensor: sf must have dtype float32; got bfloat16'):
        deep_gemm.get_mn_major_tma_aligned_tensor(torch.ones(4, 4, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r'2-D \[M, K\'\] or 3-D \[G, M, K\'\]'):
        deep_gemm.get_mn_major_tma_aligned_tensor(torch.ones(4))


def test_transform_sf():
    m, n, k = 130, 300, 1000
    sfa = torch.randn(m, (k + 127) // 128)
    out = deep_gemm.transform_sf_into_required_layout(sfa, m, k, (1, 128, 128), is_sfa=True)
    check_kernel_layout(out, sfa.shape)
    assert torch.equal(out, sfa)
    assert deep_gemm.transform_sf_into_required_layout(out, m, k, (1, 128, 128), is_sfa=True) is out
    sfb = torch.randn((n + 127) // 128, (k + 127) // 128)
    assert deep_gemm.transform_sf_into_required_layout(sfb, n, k, (1, 128, 128), is_sfa=False) is sfb
    t = deep_gemm.transform_sf_into_required_layout(sfb.t().contiguous().t(), n, k, (1, 128, 128), is_sfa=False)
    assert t.is_contiguous() and torch.equal(t, sfb)
    grouped = torch.randn(3, m, (k + 127) // 128)
    g = deep_gemm.transform_sf_into_required_layout(grouped, m, k, (1, 128, 128), num_groups=3, is_sfa=True)
    check_kernel_layout(g, grouped.shape)
    # per-row B scales (the 1D1D recipe) take the A path
    sfb_rows = torch.randn(n, (k + 127) // 128)
    check_kernel_layout(deep_gemm.transform_sf_into_required_layout(sfb_rows, n, k, (1, 1, 128), is_sfa=False), sfb_rows.shape)


def test_transform_sf_errors():
    sfa = torch.randn(130, 8)
    with pytest.raises(ValueError, match=r'must have shape \[ceil\(130/1\), ceil\(1000/128\)\] = \[130, 8\]'):
        deep_gemm.transform_sf_into_required_layout(torch.randn(130, 9), 130, 1000, (1, 128, 128), is_sfa=True)
    with pytest.raises(ValueError, match=r'num_groups'):
        deep_gemm.transform_sf_into_required_layout(torch.randn(2, 130, 8), 130, 1000, (1, 128, 128), num_groups=3, is_sfa=True)
    with pytest.raises(NotImplementedError, match=r'granularity \(32, 128\)'):
        deep_gemm.transform_sf_into_required_layout(torch.randn(5, 8), 130, 1000, (32, 128, 128), is_sfa=True)
    with pytest.raises(TypeError, match=r'float32'):
        deep_gemm.transform_sf_into_required_layout(sfa.int(), 130, 1000, (1, 128, 128), is_sfa=True)
    with pytest.raises(ValueError, match=r'recipe must be 3 ints'):
        deep_gemm.transform_sf_into_required_layout(sfa, 130, 1000, (1, 128, 128, 1), is_sfa=True)
    # DeepGEMM's 2-int form names the operand's own (mn, k) granularity.
    assert torch.equal(deep_gemm.transform_sf_into_required_layout(sfa, 130, 1000, (1, 128), is_sfa=True),
                       deep_gemm.transform_sf_into_required_layout(sfa, 130, 1000, (1, 128, 128), is_sfa=True))


def test_transform_sf_meta():
    out = deep_gemm.transform_sf_into_required_layout(torch.empty(130, 8, device='meta'), 130, 1000, (1, 128, 128), is_sfa=True)
    check_kernel_layout(out, (130, 8))


# ---- GPU: the JIT kernel ----------------------------------------------------------------------------

GPU_SHAPES = [(128, 56), (130, 7), (1, 1), (4097, 57), (3, 130, 7), (8, 1023, 56), (2, 5, 33), (65, 200)]


@pytest.mark.gpu
@pytest.mark.parametrize('shape', GPU_SHAPES)
@pytest.mark.parametrize('order', ['k_major', 'm_major_unaligned', 'strided'])
def test_mn_major_cuda_matches_reference(shape, order):
    sf = torch.randn(shape, device='cuda')
    if order == 'm_major_unaligned':
        sf = sf.transpose(-2, -1).contiguous().transpose(-2, -1)
    elif order == 'strided':
        sf = torch.randn(*shape[:-1], shape[-1] * 2, device='cuda')[..., ::2]
    y = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    torch.cuda.synchronize()
    check_kernel_layout(y, shape)
    assert torch.equal(y, sf)
    assert torch.equal(y, reference_mn_major(sf))
    # padding rows are written as zeros
    m, k = shape[-2], shape[-1]
    am = (m + 3) // 4 * 4
    g = shape[0] if len(shape) == 3 else 1
    whole = torch.as_strided(y, (g, k, am), (am * k, am, 1))
    assert torch.all(whole[:, :, m:] == 0)


@pytest.mark.gpu
def test_mn_major_cuda_uses_current_stream_and_graphs():
    sf = torch.randn(257, 9, device='cuda')
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    stream.synchronize()
    assert torch.equal(y, sf)
    # CUDA-graph capture replays the JIT kernel
    deep_gemm.get_mn_major_tma_aligned_tensor(sf)  # compile/load outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    sf.copy_(torch.randn_like(sf))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, sf)


@pytest.mark.gpu
def test_transform_sf_cuda_passthrough_is_free():
    sfa = deep_gemm.get_mn_major_tma_aligned_tensor(torch.randn(130, 8, device='cuda'))
    assert deep_gemm.transform_sf_into_required_layout(sfa, 130, 1000, (1, 128, 128), is_sfa=True) is sfa


@pytest.mark.gpu
def test_layout_opcheck_cuda():
    for shape in [(130, 7), (3, 65, 9)]:
        torch.library.opcheck(torch.ops.deep_gemm.get_mn_major_tma_aligned_tensor.default, (torch.randn(shape, device='cuda'),))
    torch.library.opcheck(torch.ops.deep_gemm.transform_sf_into_required_layout.default,
                          (torch.randn(130, 8, device='cuda'), 130, 1000, [1, 128, 128], None, True, False))


@pytest.mark.gpu
def test_first_cuda_use_logs_compile_and_load(tmp_path):
    """In a fresh process with an empty cache, the first layout call compiles (INFO record naming the
    kernel on the "deep_gemm" logger); a second process finds the cubin on disk and compiles nothing."""
    import os
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent('''
        import logging, torch, deep_gemm
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append((record.levelname, record.getMessage()))
        logger = logging.getLogger('deep_gemm')
        logger.addHandler(Keep())
        logger.setLevel(logging.DEBUG)
        sf = torch.randn(130, 7, device='cuda')
        out = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
        torch.cuda.synchronize()
        assert torch.equal(out, sf)
        print(any(level == 'INFO' and 'compiling' in msg and 'layout_transpose_sf' in msg for level, msg in records))
    ''')
    env = dict(os.environ, DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_PRINT_LOAD_TIME='1')
    first = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == 'True'
    second = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == 'False'
