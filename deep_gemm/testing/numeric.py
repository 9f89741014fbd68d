"""Accuracy helpers for tests."""

from typing import Iterable, Union

import torch


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Relative mismatch ``1 - 2 * sum(x * y) / sum(x^2 + y^2)`` in float64 (0 when equal).

    Insensitive to the overall magnitude; GEMM tests expect < 1e-3 for FP8 and < 1e-5 for BF16.
    Returns a 0-d float64 tensor (use ``float(...)``). Two all-zero inputs give 0.
    """
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    if denominator == 0:
        return torch.zeros((), dtype=torch.float64, device=x.device)
    return 1 - 2 * (x * y).sum() / denominator


def count_bytes(*tensors: Union[torch.Tensor, Iterable, None]) -> int:
    """Total bytes of the given tensors (nested tuples/lists allowed, ``None`` ignored): the memory
    traffic estimate used for GB/s figures."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        if isinstance(t, torch.Tensor):
            total += t.numel() * t.element_size()
        elif isinstance(t, (tuple, list)):
            total += count_bytes(*t)
        else:
            raise TypeError(f'count_bytes: expected tensors (or tuples/lists of them); got {type(t).__name__}')
    return total


def assert_bitwise_equal(x: torch.Tensor, y: torch.Tensor, label: str = '') -> None:
    """Raises AssertionError unless ``x`` and ``y`` have the same shape, dtype and bytes (NaNs with the
    same bits compare equal)."""
    prefix = f'{label}: ' if label else ''
    assert x.shape == y.shape, f'{prefix}shapes differ: {list(x.shape)} vs {list(y.shape)}'
    assert x.dtype == y.dtype, f'{prefix}dtypes differ: {x.dtype} vs {y.dtype}'
    xb = x.contiguous().view(torch.uint8) if x.numel() else x
    yb = y.contiguous().view(torch.uint8).to(xb.device) if y.numel() else y
    if x.numel() and not torch.equal(xb, yb):
        bad = int((xb != yb).sum())
        raise AssertionError(f'{prefix}{bad} of {xb.numel()} bytes differ')
