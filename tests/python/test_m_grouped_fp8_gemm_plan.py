"""The M-grouped FP8 GEMMs' kernel plans under a forced DG_FP8_GEMM_CONFIG, on the CPU (_plan_gemm_call plans
as the op does): multicast 2 (a 2-CTA cluster sharing A, pairs of N blocks) is honoured by both contiguous
layouts, whose CTA pairs compute one M block and so one group; multicast 1 (pairs of M blocks sharing B when they
hold one group) too, on 64- and 128-row tiles (dropped on 256-row ones, whose halves may hold two groups); the
masked GEMM pairs only M blocks of one group (multicast 1)."""
import pytest

from deep_gemm import _C

M, N, K, G = 8 * 4352, 6144, 7168, 8


def plan(op, **kw):
    [(_, symbol, code)] = _C._plan_gemm_call(op, M, N, K, num_groups=G, **kw)
    return symbol, code


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
@pytest.mark.parametrize('zero_padding', [True, False], ids=['zero', 'unspecified'])
@pytest.mark.parametrize('multicast,suffix,order,on_a', [(2, '_mca_', 'ClusterPairNScheduler', 'true'),
                                                         (1, '_mcb_', 'ClusterPairScheduler', 'false')],
                         ids=['share-a', 'share-b'])
def test_contiguous_honours_multicast(forced_config, psum, zero_padding, multicast, suffix, order, on_a):
    forced_config(f'128,192,4,0,{multicast}')
    symbol, code = plan('m_grouped_fp8_gemm_nt_contiguous', use_psum_layout=psum, ensure_zero_padding=zero_padding)
    assert '_bm128_bn192_s4_' in symbol and suffix in symbol, symbol
    assert f'u, deep_gemm::{order}<128u, 192u, 8u>>' in code  # the pair order, in the scheduler's type
    assert f'2, {on_a}>(' in code  # the kernel's cluster of 2, multicasting A or B


@pytest.mark.parametrize('value', ['256,128,3,0,1', '128,192,4,0,0'])
def test_contiguous_without_multicast_on_b(forced_config, value):
    """No B multicast: not asked for, or on 256-row tiles."""
    forced_config(value)
    symbol, code = plan('m_grouped_fp8_gemm_nt_contiguous')
    assert '_mc' not in symbol and 'u, deep_gemm::GroupedOrderScheduler<' in code, symbol
    assert 'ClusterPair' not in code
    assert '1, false>(' in code


def test_masked_pairs_m_blocks_of_a_group_only(forced_config):
    """The masked GEMM pairs M blocks of one group (multicast 1, sharing B), never N blocks (multicast 2 dropped)."""
    forced_config('128,192,4,0,2')
    [(_, symbol, code)] = _C._plan_gemm_call('m_grouped_fp8_gemm_nt_masked', 256, N, K, num_groups=G, expected_m=200)
    assert '_mc' not in symbol and '1, false>(' in code, symbol
    forced_config('128,192,4,0,1')
    [(_, symbol, code)] = _C._plan_gemm_call('m_grouped_fp8_gemm_nt_masked', 256, N, K, num_groups=G, expected_m=200)
    assert '_mcb_' in symbol and 'deep_gemm::MaskedGroupedScheduler<128u, 192u, 8u, 2u>' in code, symbol
    assert '2, false>(' in code


@pytest.mark.parametrize('psum', [False, True], ids=['index', 'psum'])
def test_contiguous_without_zeroing_shares_b_on_large_problems(psum):
    """The model's pick (no forced config): contiguous calls that leave padding rows unwritten take 128x192
    tiles on 2-CTA clusters sharing B instead of the pipelined 128x128 tile, on problems of 8+ waves of such
    tiles (measured faster on the benchmark shapes); with zeroing, or on small problems, the pipelined tile stays."""
    def symbol(m, n, k, groups, zero_padding):
        [(_, sym, _)] = _C._plan_gemm_call('m_grouped_fp8_gemm_nt_contiguous', m, n, k, num_groups=groups,
                                           use_psum_layout=psum, ensure_zero_padding=zero_padding)
        return sym
    for m, n, k, groups in ((8 * 4256, 7168, 3072, 8), (4 * 8576, 4096, 4096, 4)):
        unzeroed, zeroed = symbol(m, n, k, groups, False), symbol(m, n, k, groups, True)
        assert '_bm128_bn192_s4_' in unzeroed and '_mcb_' in unzeroed and '_pp_' not in unzeroed, unzeroed
        assert '_bm128_bn128_' in zeroed and '_pp_' in zeroed and '_mc' not in zeroed, zeroed
    small = symbol(8 * 128, 4096, 7168, 8, False)
    assert '_mcb_' not in small and '_pp_' in small, small
