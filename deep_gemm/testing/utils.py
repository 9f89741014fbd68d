"""Small helpers for test scripts written against DeepGEMM: the GPU architecture, conditional test
functions and bitwise comparison."""

import functools
import os
from typing import Callable

import torch

from .numeric import assert_bitwise_equal  # noqa: F401  (defined in numeric, as in DeepGEMM; kept importable here)


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
