"""CPU tests of padding_rows.py, the check the GPU tests apply to ensure_zero_padding=False outputs.

A model of the contiguous scheduler's row rules (grouped_scheduler.cuh, index layout) on CPU tensors builds the
outputs: with groups looked up per alignment block (kUnspecified, what the kernels do) the check accepts every
BLOCK_M; with groups looked up per M block (64-row blocks after a group's last rows left unwritten) or with
padding rows never written (the former ensure_zero_padding=False) it rejects them. Hand-made outputs cover the
other rules.
"""
import torch

import pytest

from padding_rows import assert_padding_rows, contiguous_rows, unspecified_padding_problems

N, K = 8, 16


def _layout(group_ms, align, tail):
    """Row group ids [M] (-1 padding): each group starts at a multiple of align."""
    return contiguous_rows(group_ms, align, tail=tail, device='cpu')[1].long()


def _model_output(row_group, a, b, block_m, align, per_alignment_block=True, write_padding=True):
    """d as the scheduler writes it (NaN where nothing is written): 128-row segments of a 256-row block, the
    group of each segment from its alignment block's first row (or its own first row), each segment with a
    group stored with its group's B (a 256-row block holding one group computes both segments with it), a
    segment without a group not written."""
    m = row_group.numel()
    d = torch.full((m, N), float('nan'))
    seg_rows = min(block_m, 128)
    for s0 in range(0, m, seg_rows):
        g = int(row_group[s0 - s0 % align if per_alignment_block else s0])
        if g < 0:
            continue
        s1 = min(s0 + seg_rows, m)
        d[s0:s1] = a[s0:s1] @ b[g].t()
        if not write_padding:
            d[s0:s1][row_group[s0:s1] != g] = float('nan')
    return d


def _inputs(row_group, num_groups, zero_padding_rows, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn((row_group.numel(), K), generator=g)
    if zero_padding_rows:
        a[row_group < 0] = 0
    return a, torch.randn((num_groups, N, K), generator=g)


def test_model_of_the_kernels_passes_for_every_block_m():
    for align in (128, 256):
        row_group = _layout([50, 0, 130, 1, 256, 64], align, tail=align + 64)
        for zero in (True, False):
            a, b = _inputs(row_group, 6, zero)
            for block_m in (64, 128, 256):
                d = _model_output(row_group, a, b, block_m, align)
                assert unspecified_padding_problems(d, row_group, align, zero) == [], (align, zero, block_m)
                # the group rows themselves are the product with their group's B
                for gi in range(6):
                    rows = row_group == gi
                    assert torch.allclose(d[rows], a[rows] @ b[gi].t(), rtol=1e-5, atol=1e-5), (align, block_m, gi)


def test_per_block_lookup_with_64_row_blocks_is_rejected():
    """64-row blocks looked up by their own first row leave rows 64..127 after a 50-row group unwritten."""
    row_group = _layout([50, 130], 128, tail=0)
    a, b = _inputs(row_group, 2, True)
    d = _model_output(row_group, a, b, 64, 128, per_alignment_block=False)
    problems = unspecified_padding_problems(d, row_group, 128, True)
    assert len(problems) == 1 and 'padding rows of segments with a group row not zero' in problems[0]
    assert 'first: [64, 65, 66, 67]' in problems[0]
    # 128-row blocks are the alignment blocks: the same lookup is then right
    assert unspecified_padding_problems(_model_output(row_group, a, b, 128, 128, False), row_group, 128, True) == []


def test_unwritten_padding_rows_are_rejected():
    """The former ensure_zero_padding=False (padding rows never written) fails the check."""
    row_group = _layout([50, 130], 128, tail=128)
    a, b = _inputs(row_group, 2, True)
    d = _model_output(row_group, a, b, 128, 128, write_padding=False)
    problems = unspecified_padding_problems(d, row_group, 128, True)
    assert len(problems) == 1 and '204 padding rows' in problems[0], problems


def test_hand_made_outputs():
    row_group = torch.tensor([0] * 3 + [-1] * 5 + [-1] * 8 + [-1] * 8 + [1] * 8)  # segments of 8 rows
    d = torch.full((32, 4), float('nan'))
    d[0:3] = 1.0
    d[3:8] = 0.0      # padding of a segment with group rows: zero
    d[16:24] = 0.0    # a segment without group rows written whole (zeros)
    d[24:32] = 2.0
    assert unspecified_padding_problems(d, row_group, 8, True) == []
    assert unspecified_padding_problems(d, row_group, 8, False) == []

    bad = d.clone()
    bad[5, 1] = 0.5   # a non-zero padding row: wrong with zero A padding, fine (finite) with random
    assert len(unspecified_padding_problems(bad, row_group, 8, True)) == 1
    assert unspecified_padding_problems(bad, row_group, 8, False) == []
    bad[5, 2] = float('inf')
    assert len(unspecified_padding_problems(bad, row_group, 8, False)) == 1
    bad = d.clone()
    bad[7, 0] = float('nan')  # one element of a padding row left unwritten
    assert len(unspecified_padding_problems(bad, row_group, 8, True)) == 1
    bad = d.clone()
    bad[20:24] = float('nan')  # a segment without group rows written in part
    problems = unspecified_padding_problems(bad, row_group, 8, True)
    assert len(problems) == 1 and 'first rows: [16]' in problems[0], problems
    bad = d.clone()
    bad[8:16] = 3.0  # a segment without group rows written with non-zero values: fine only for random A padding
    assert len(unspecified_padding_problems(bad, row_group, 8, True)) == 1
    assert unspecified_padding_problems(bad, row_group, 8, False) == []


def test_contiguous_rows_of_both_layouts():
    layout, row_group, m = contiguous_rows([3, 0, 5], 4, tail=2, device='cpu')
    assert m == 14 and layout.dtype == torch.int32
    assert row_group.tolist() == [0, 0, 0, -1, 2, 2, 2, 2, 2, -1, -1, -1, -1, -1] and torch.equal(layout, row_group)
    ends, psum_rows, _ = contiguous_rows([3, 0, 5], 4, psum=True, tail=2, device='cpu')
    assert ends.tolist() == [3, 4, 9] and torch.equal(psum_rows, row_group)


def test_assert_padding_rows_by_mode():
    row_group = torch.tensor([0] * 3 + [-1] * 5)
    d = torch.zeros(8, 4)
    d[:3] = 1.0
    assert_padding_rows(d, row_group, 8, True, False, 'zeros')
    assert_padding_rows(d, row_group, 8, False, True, 'unspecified')
    d[6, 1] = 0.5  # a padding row not zero: wrong in both modes with zero padding rows of A
    with pytest.raises(AssertionError, match='padding rows are not all zero'):
        assert_padding_rows(d, row_group, 8, True, False, 'zeros')
    with pytest.raises(AssertionError, match='ensure_zero_padding=False padding rows'):
        assert_padding_rows(d, row_group, 8, False, True, 'unspecified')
