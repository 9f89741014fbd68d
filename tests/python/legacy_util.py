"""Helpers shared by the ``deep_gemm.legacy`` tests (``test_legacy*.py``). Imports neither torch nor
Triton: ``test_legacy_interpreter.py`` also runs as a script that must set ``TRITON_INTERPRET`` first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LEGACY_DIR = REPO / "deep_gemm" / "legacy"
PRIVATE_NAME = "_deep_gemm_legacy_under_test"


def load_legacy():
    """The working tree's ``deep_gemm/legacy`` package, loaded under a private name so that the tests do
    not depend on ``deep_gemm/__init__.py`` (another component, which may need the C++ extension)."""
    if PRIVATE_NAME in sys.modules:
        return sys.modules[PRIVATE_NAME]
    spec = importlib.util.spec_from_file_location(PRIVATE_NAME, LEGACY_DIR / "__init__.py",
                                                  submodule_search_locations=[str(LEGACY_DIR)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PRIVATE_NAME] = module
    spec.loader.exec_module(module)
    return module


def calc_diff(x, y) -> float:
    """The calc_diff metric of docs/architecture.md, in float64: 1 - 2*sum(x*y) / sum(x*x + y*y)."""
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    if denominator == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denominator)
