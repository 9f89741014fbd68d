"""Fixtures shared by the test files."""
import pytest


def _forcing(monkeypatch, variable):
    import deep_gemm  # here, not at collection: some tests set the environment before their first import

    def force(value):
        monkeypatch.setenv(variable, value)
        deep_gemm.reload_settings()
    yield force
    monkeypatch.undo()  # the variable as it was before the test (unset, or a value the run set outside)
    deep_gemm.reload_settings()


@pytest.fixture
def forced_config(monkeypatch):
    """forced_config(value): DG_FP8_GEMM_CONFIG for this test only (deep_gemm's settings reloaded both ways)."""
    yield from _forcing(monkeypatch, 'DG_FP8_GEMM_CONFIG')


@pytest.fixture
def forced_1d1d_config(monkeypatch):
    """forced_1d1d_config(value): DG_FP8_1D1D_GEMM_CONFIG for this test only (settings reloaded both ways)."""
    yield from _forcing(monkeypatch, 'DG_FP8_1D1D_GEMM_CONFIG')
