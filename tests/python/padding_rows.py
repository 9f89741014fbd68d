"""The rows of an M-grouped contiguous GEMM for the GPU tests: the layout of given group sizes, and the padding rows'
checks (zeros with ensure_zero_padding=True; with False the rule below).

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


def contiguous_rows(group_ms, align: int, psum: bool = False, tail: int = 0, device: str = 'cuda'):
    """(grouped_layout, row group ids [M] with -1 for padding, M) of groups of `group_ms` rows, each starting at
    a multiple of `align`, plus `tail` padding rows past the last aligned end. grouped_layout is the row group ids
    (index layout) or the group ends int32 [G] (psum)."""
    starts, ends, end = [], [], 0
    for gm in group_ms:
        start = (end + align - 1) // align * align
        starts.append(start)
        end = start + gm
        ends.append(end)
    m_sum = (end + align - 1) // align * align + tail
    row_group = torch.full((m_sum,), -1, dtype=torch.int32)
    for gi, (start, stop) in enumerate(zip(starts, ends)):
        row_group[start:stop] = gi
    layout = torch.tensor(ends, dtype=torch.int32) if psum else row_group
    return layout.to(device), row_group.to(device), m_sum


def assert_padding_rows(d: torch.Tensor, row_group: torch.Tensor, align: int, zero_padding: bool,
                        a_padding_zero: bool, what: str) -> None:
    """d's padding rows (row_group -1; d poisoned with NaN before the call): exactly zero with
    ensure_zero_padding=True (`zero_padding`), the rule above (per alignment block) with False."""
    if zero_padding:
        padding = d[row_group.to(d.device) < 0]
        assert torch.equal(padding.float(), torch.zeros_like(padding, dtype=torch.float32)), \
            f'{what}: padding rows are not all zero'
    else:
        assert_unspecified_padding(d, row_group, align, a_padding_zero, what)
