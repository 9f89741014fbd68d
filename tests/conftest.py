"""Shared pytest setup: GPU tests (`@pytest.mark.gpu`) are skipped without a CUDA device, and the JIT
cache goes to a per-session temporary directory unless DG_JIT_CACHE_DIR is set."""

import os
import tempfile

import pytest


def _cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception:
        return False


def _is_hopper() -> bool:
    import torch
    return _cuda_available() and torch.cuda.get_device_capability()[0] == 9


def pytest_configure(config):
    if 'DG_JIT_CACHE_DIR' not in os.environ:
        os.environ['DG_JIT_CACHE_DIR'] = tempfile.mkdtemp(prefix='deep_gemm_test_cache_')


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if 'gpu' in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope='session')
def hopper():
    """Skips unless the current GPU is an SM90 (Hopper) part."""
    if not _is_hopper():
        pytest.skip('needs an SM90 (Hopper) GPU')
