"""GPU correctness of `fp8_gemm_{nn,tn,tt}` (and nt beside them) with the default recipe (1, 128, 128): the
1D2D kernel, BF16 output. The t/n forms take transposed views of K-major storage (A [M, K] with per-token
scales, B [N, K] with 128x128 block scales), so the reference is the same for all four: the dequantized
operands multiplied in float32, plus C with the product's spread. Outputs poisoned with NaN first; ragged
M/N/K; gemm_checks.assert_gemm_close (calc_diff < 1e-5, every 128x128 tile). Skipped without a Hopper GPU."""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.utils import (dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8,  # noqa: E402
                             per_token_cast_to_fp8)
from gemm_checks import assert_gemm_close, scaled_like  # noqa: E402


def _operands(layout, m, n, k, seed):
    """((a, sfa), (b, sfb)) in the form fp8_gemm_<layout> takes, and the float32 product."""
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16, generator=g)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16, generator=g)
    a8, sfa = per_token_cast_to_fp8(a, use_ue8m0=False)
    b8, sfb = per_block_cast_to_fp8(b, use_ue8m0=False)
    product = dequantize_per_token(a8, sfa) @ dequantize_per_block(b8, sfb).t()
    if layout[0] == 't':
        a8, sfa = a8.t(), sfa.t()  # A [K, M], sfa [ceil(K/128), M]: still K-major in memory
    if layout[1] == 'n':
        b8, sfb = b8.t(), sfb.t()  # B [K, N], sfb [ceil(K/128), ceil(N/128)]
    return (a8, sfa), (b8, sfb), product


@pytest.mark.parametrize('recipe', [None, (1, 128, 128)], ids=['default', 'explicit'])
@pytest.mark.parametrize('with_c', [False, True], ids=['no_c', 'c'])
@pytest.mark.parametrize('layout', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('m,n,k', [(1, 576, 512), (130, 1000, 1152), (1000, 2112, 7168), (77, 4104, 2064)])
def test_fp8_gemm_layouts(layout, with_c, recipe, m, n, k):
    a, b, ref = _operands(layout, m, n, k, seed=m + 3 * n + 7 * k)
    c = None
    if with_c:
        c = scaled_like(ref)  # as large as the product: a dropped or doubled c fails
        ref = ref + c
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    getattr(deep_gemm, f'fp8_gemm_{layout}')(a, b, d, c=c, recipe=recipe)
    torch.cuda.synchronize()
    assert_gemm_close(d, ref, f'fp8_gemm_{layout} {m}x{n}x{k} c={with_c} recipe={recipe}')


@pytest.mark.parametrize('layout', ['nn', 'tn', 'tt'])
def test_fp8_gemm_layouts_match_nt_bitwise(layout):
    """The same storage through each form gives the result of fp8_gemm_nt, bit for bit (one kernel)."""
    m, n, k = 300, 1000, 1536
    a, b, _ = _operands('nt', m, n, k, seed=4)
    a_l, b_l, _ = _operands(layout, m, n, k, seed=4)
    d_nt = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    d_l = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt(a, b, d_nt)
    getattr(deep_gemm, f'fp8_gemm_{layout}')(a_l, b_l, d_l)
    torch.cuda.synchronize()
    assert not torch.isnan(d_nt).any()
    assert torch.equal(d_nt, d_l)
