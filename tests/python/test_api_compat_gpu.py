"""GPU checks of the DeepGEMM-compatible forms: m_grouped_bf16_gemm_nn_contiguous (B stored [G, K, N],
N-major or K-major), m_grouped_fp8_gemm_nn_contiguous (B [G, K, N] K-major in memory) and the
recipe_a/recipe_b form of the FP8 GEMM. Fresh random inputs, NaN-poisoned outputs, float64 reference
on the (dequantised) inputs. Skipped without a Hopper GPU."""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import assert_gemm_close, assert_groups_close  # noqa: E402
from padding_rows import contiguous_rows  # noqa: E402
from deep_gemm.utils import dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402


def _check_rows(d, ref, layout, tol, what):
    """Each group's rows on their own (padding rows, -1, are not checked): a small group computed with
    another group's weights fails."""
    assert_groups_close(d, ref, layout, what, diff_bar=tol)


@pytest.mark.parametrize('n_major', [True, False])
@pytest.mark.parametrize('group_ms,n,k', [([100, 1, 300, 0, 129], 2112, 512), ([256, 77], 576, 1536)])
def test_m_grouped_bf16_gemm_nn_contiguous(group_ms, n, k, n_major):
    layout, _, m_sum = contiguous_rows(group_ms, deep_gemm.get_mk_alignment_for_contiguous_layout())
    groups = len(group_ms)
    g = torch.Generator(device='cuda').manual_seed(n + k + n_major)
    a = torch.randn(m_sum, k, device='cuda', generator=g).bfloat16()
    b_kn = torch.randn(groups, k, n, device='cuda', generator=g).bfloat16()  # logical [G, K, N]
    b = b_kn if n_major else b_kn.transpose(1, 2).contiguous().transpose(1, 2)
    d = torch.full((m_sum, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a, b, d, layout)
    ref = torch.zeros(m_sum, n, device='cuda', dtype=torch.float64)
    for gi in range(groups):
        rows = layout == gi
        ref[rows] = a[rows].double() @ b_kn[gi].double()
    _check_rows(d, ref, layout, 1e-5, f'bf16 nn {group_ms} n={n} k={k} n_major={n_major}')


def test_m_grouped_fp8_gemm_nn_contiguous():
    group_ms, n, k = [130, 0, 77, 256], 1040, 768
    layout, _, m_sum = contiguous_rows(group_ms, deep_gemm.get_mk_alignment_for_contiguous_layout())
    groups = len(group_ms)
    g = torch.Generator(device='cuda').manual_seed(11)
    a = torch.randn(m_sum, k, device='cuda', generator=g)
    w = torch.randn(groups, n, k, device='cuda', generator=g)  # stored [G, N, K]; the op gets its [G, K, N] view
    a8 = per_token_cast_to_fp8(a)
    casts = [per_block_cast_to_fp8(w[gi]) for gi in range(groups)]
    b8 = torch.stack([c[0] for c in casts]).transpose(1, 2)
    sfb = torch.stack([c[1] for c in casts]).transpose(1, 2)
    d = torch.full((m_sum, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, (b8, sfb), d, layout)
    a_ref = dequantize_per_token(*a8).double()
    ref = torch.zeros(m_sum, n, device='cuda', dtype=torch.float64)
    for gi in range(groups):
        rows = layout == gi
        ref[rows] = a_ref[rows] @ dequantize_per_block(*casts[gi]).double().t()
    _check_rows(d, ref, layout, 1e-5, 'fp8 nn contiguous')


def test_fp8_gemm_recipe_a_b():
    m, n, k = 200, 1100, 640
    g = torch.Generator(device='cuda').manual_seed(5)
    a, b = torch.randn(m, k, device='cuda', generator=g), torch.randn(n, k, device='cuda', generator=g)
    a8, b8 = per_token_cast_to_fp8(a), per_block_cast_to_fp8(b)
    ref = dequantize_per_token(*a8).double() @ dequantize_per_block(*b8).double().t()
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt(a8, b8, d, None, None, (1, 128), (128, 128), 'nk')
    assert_gemm_close(d, ref, 'recipe_a/recipe_b')
