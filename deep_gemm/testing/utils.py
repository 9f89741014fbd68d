"""Small helpers for test scripts written against DeepGEMM: the GPU architecture, conditional test
functions and bitwise comparison."""

import functools
import os
from typing import Callable

import torch


def get_arch_major() -> int:
    """The compute-capability major of the current CUDA device (9 on Hopper)."""
    return torch.cuda.get_device_capability()[0]


def test_filter(condition: Callable[[], bool]):
    """Decorator: the function runs only when ``condition()`` is true at call time (else returns None)."""
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if condition():
                return fn(*args, **kwargs)
            return None
        return wrapper
    return decorator


test_filter.__test__ = False  # not a pytest test despite its name


def ignore_env(name: str, condition: Callable[[], bool]):
    """Decorator: when ``condition()`` is true at call time, the function runs with the environment
    variable ``name`` removed (restored afterwards); otherwise it runs unchanged."""
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not condition() or name not in os.environ:
                return fn(*args, **kwargs)
            saved = os.environ.pop(name)
            try:
                return fn(*args, **kwargs)
            finally:
                os.environ[name] = saved
        return wrapper
    return decorator


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
