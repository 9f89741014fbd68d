"""The padding rows of an M-grouped contiguous GEMM called with ensure_zero_padding=False, for the GPU tests.

The contract (DeepGEMM's SM90 behaviour, whose M blocks are the contiguous alignment): a padding row inside an
alignment block that starts in a group's rows is computed with that group's B and stored, so a zero row of A gives
a zero row of D; the rows of an alignment block that starts in padding are not written; the content of padding
rows is otherwise unspecified. A test cannot see BLOCK_M, so it checks per segment of `segment` rows (the
alignment), on an output poisoned with NaN before the call:
- a segment holding a group row: every padding row of it written: exactly zero when A's padding rows are zero
  (`a_padding_zero`), finite otherwise;
- a segment holding no group row: written whole or not at all: every row all NaN, or every row zero
  (`a_padding_zero`) / finite.
Pure torch (any device); tests/python/test_padding_rows.py shows on CPU which outputs it accepts and rejects.
"""
import torch


def unspecified_padding_problems(d: torch.Tensor, row_group: torch.Tensor, segment: int,
                                 a_padding_zero: bool) -> list:
    """The broken rules of `d` [M, N] (row_group [M]: each row's group, -1 for padding), as short strings."""
    assert d.dim() == 2 and row_group.shape == d.shape[:1], (d.shape, row_group.shape)
    m = d.shape[0]
    x = d.float()
    pad = row_group.to(d.device) < 0
    seg = torch.arange(m, device=d.device) // segment
    num_segs = (m + segment - 1) // segment
    has_group = torch.zeros(num_segs, dtype=torch.bool, device=d.device)
    has_group[seg[~pad]] = True
    row_nan = torch.isnan(x).all(dim=1)
    row_ok = (x == 0).all(dim=1) if a_padding_zero else torch.isfinite(x).all(dim=1)
    want = 'zero' if a_padding_zero else 'finite'
    problems = []
    bad_rows = torch.nonzero(pad & has_group[seg] & ~row_ok).flatten().tolist()
    if bad_rows:
        problems.append(f'{len(bad_rows)} padding rows of segments with a group row not {want} '
                        f'(first: {bad_rows[:4]})')
    rows_in = torch.bincount(seg, minlength=num_segs)
    nan_in = torch.bincount(seg, weights=row_nan.double(), minlength=num_segs).long()
    ok_in = torch.bincount(seg, weights=row_ok.double(), minlength=num_segs).long()
    bad_segs = torch.nonzero(~has_group & (nan_in != rows_in) & (ok_in != rows_in)).flatten().tolist()
    if bad_segs:
        problems.append(f'{len(bad_segs)} segments without a group row neither all NaN nor all {want} '
                        f'(first rows: {[s * segment for s in bad_segs[:4]]})')
    return problems


def assert_unspecified_padding(d: torch.Tensor, row_group: torch.Tensor, segment: int, a_padding_zero: bool,
                               what: str) -> None:
    problems = unspecified_padding_problems(d, row_group, segment, a_padding_zero)
    assert not problems, f'{what}: ensure_zero_padding=False padding rows: ' + '; '.join(problems)
