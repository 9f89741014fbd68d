"""fp8_gemm_nt_skip_head_mid on a Hopper GPU: fresh random inputs, d poisoned with NaN first, ragged M, the
computed columns against the float64 reference on the dequantised inputs, and the mid columns of every head
(and anything outside d's view) left bitwise untouched. Skipped without a Hopper GPU."""
import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from deep_gemm.testing import calc_diff  # noqa: E402
from deep_gemm.utils import dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402
from skip_head_mid_reference import head_split_columns, skip_head_mid_reference  # noqa: E402

# DeepGEMM's test shapes (head_splits (128, 64, 128)), ragged M, odd widths, no mid, one-sided heads, a
# split-K shape (small M and N, long K).
CASES = [
    ((128, 64, 128), 128, 128, 512), ((128, 64, 128), 4096, 32, 512), ((128, 64, 128), 129, 32, 512),
    ((128, 64, 128), 1, 8, 7168), ((3, 5, 7), 300, 12, 384), ((64, 0, 64), 77, 16, 256), ((0, 16, 48), 200, 8, 640),
    ((48, 16, 0), 65, 8, 640), ((128, 64, 128), 128, 2, 7168),
]


@pytest.mark.parametrize('head_splits,m,num_heads,k', CASES)
def test_skip_head_mid(head_splits, m, num_heads, k):
    left, mid, right = head_splits
    n, width = num_heads * (left + right), num_heads * (left + mid + right)
    g = torch.Generator(device='cuda').manual_seed(m * 7 + n + k)
    a = per_token_cast_to_fp8(torch.randn(m, k, device='cuda', generator=g, dtype=torch.bfloat16))
    b = per_block_cast_to_fp8(torch.randn(n, k, device='cuda', generator=g, dtype=torch.bfloat16))
    computed = dequantize_per_token(*a).double() @ dequantize_per_block(*b).double().T
    # d is a view with a wider row (8 spare columns): everything outside the computed columns keeps its NaN.
    buf = torch.full((m, width + 8), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = buf[:, :width]
    before = buf.clone()
    deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits)
    cols = head_split_columns(num_heads, head_splits).cuda()
    got = d[:, cols].double()
    assert not torch.isnan(got).any(), 'a computed column was not written'
    assert float(calc_diff(got, computed)) < 1e-3
    ref = skip_head_mid_reference(computed, before[:, :width], head_splits)
    assert float(calc_diff(torch.nan_to_num(d.double()), torch.nan_to_num(ref))) < 1e-3
    untouched = torch.ones(width + 8, dtype=torch.bool, device='cuda')
    untouched[cols] = False
    assert torch.equal(buf[:, untouched].view(torch.int16), before[:, untouched].view(torch.int16)), 'mid columns were written'


def test_skip_head_mid_matches_fp8_gemm_nt_bitwise():
    # The head-split epilogue only moves columns: the values equal fp8_gemm_nt's for the same config.
    head_splits, m, num_heads, k = (128, 64, 128), 256, 16, 1024
    left, mid, right = head_splits
    n = num_heads * (left + right)
    g = torch.Generator(device='cuda').manual_seed(11)
    a = per_token_cast_to_fp8(torch.randn(m, k, device='cuda', generator=g, dtype=torch.bfloat16))
    b = per_block_cast_to_fp8(torch.randn(n, k, device='cuda', generator=g, dtype=torch.bfloat16))
    plain = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt(a, b, plain)
    d = torch.full((m, num_heads * (left + mid + right)), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits)
    assert torch.equal(d[:, head_split_columns(num_heads, head_splits).cuda()], plain)


def test_skip_head_mid_k_zero_writes_zeros_only_in_computed_columns():
    head_splits, m, num_heads = (32, 16, 32), 40, 3
    n, width = num_heads * 64, num_heads * 80
    a = (torch.empty(m, 0, device='cuda', dtype=torch.float8_e4m3fn), torch.empty(m, 0, device='cuda'))
    b = (torch.empty(n, 0, device='cuda', dtype=torch.float8_e4m3fn), torch.empty(2, 0, device='cuda'))
    d = torch.full((m, width), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits)
    cols = head_split_columns(num_heads, head_splits).cuda()
    assert torch.equal(d[:, cols], torch.zeros(m, n, device='cuda', dtype=torch.bfloat16))
    mask = torch.ones(width, dtype=torch.bool, device='cuda')
    mask[cols] = False
    assert torch.isnan(d[:, mask]).all()
