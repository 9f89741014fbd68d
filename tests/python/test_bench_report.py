"""benchmarks/_report.py and bench_all.py --from-json on a synthetic result table (no GPU): the figures in
the table, the roofline, the JSON round trip, and the PNG when matplotlib is installed."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'benchmarks')
sys.path.insert(0, BENCH)
import _report  # noqa: E402


def synthetic():
    return [
        _report.gemm_result('fp8_gemm_nt', 4096, 4096, 4096, 'ours', 100.0, 1, 2, 'fp8'),
        _report.gemm_result('fp8_gemm_nt', 4096, 4096, 4096, 'blockwise_scaled_mm', 125.0, 1, 2, 'fp8'),
        _report.gemm_result('fp8_gemm_nt', 128, 7168, 2048, 'ours', 10.0, 1, 2, 'fp8'),
        _report.gemm_result('fp8_gemm_nt', 128, 7168, 2048, 'blockwise_scaled_mm', None, 1, 2, 'fp8'),
        _report.gemm_result('bf16_gemm_nt', 4096, 7168, 2048, 'ours', 150.0, 2, 2, 'bf16'),
        _report.gemm_result('bf16_gemm_nt', 4096, 7168, 2048, 'torch_mm', 140.0, 2, 2, 'bf16'),
    ]


def test_figures_and_roofline():
    big = synthetic()[0]
    assert big.flops == 2 * 4096 ** 3
    assert big.bytes == 4096 * 4096 * 2 + 2 * 4096 * 4096
    assert big.tflops == pytest.approx(2 * 4096 ** 3 / 100e-6 / 1e12)
    assert big.tbs == pytest.approx(big.bytes / 100e-6 / 1e12)
    # Compute-bound at high intensity, bandwidth-bound (4.8 TB/s * FLOP/byte) at low.
    assert _report.roof_tflops(1e4, 'fp8') == _report.H200_PEAK_TFLOPS['fp8'] == pytest.approx(1979)
    assert _report.roof_tflops(1e4, 'bf16') == pytest.approx(989.5)
    assert _report.roof_tflops(10, 'fp8') == pytest.approx(48.0)
    assert _report.roof_tflops(10, 'fp8', 'H100') == pytest.approx(33.5)  # the H100 SXM's 3.35 TB/s
    assert _report.fraction_of_roof(big) == pytest.approx(big.tflops / 1979)
    decode = synthetic()[2]
    assert _report.fraction_of_roof(decode) == pytest.approx(decode.tflops / (4.8 * decode.intensity))


def test_table_has_every_row_and_ratios():
    text = _report.table(synthetic())
    rows = [line for line in text.splitlines() if ' | ' in line][1:]  # without the header
    assert len(rows) == 6
    blockwise = next(line for line in rows if '4096x4096x4096' in line and 'blockwise' in line)
    assert blockwise.rstrip().endswith('1.25')  # its time over ours
    missing = next(line for line in rows if '128x7168x2048' in line and 'blockwise' in line)
    assert 'n/a' in missing
    ours = next(line for line in rows if '4096x4096x4096' in line and ' ours ' in line)
    assert f'{2 * 4096 ** 3 / 100e-6 / 1e12:.0f}' in ours


def test_json_round_trip_and_from_json_cli(tmp_path):
    path = tmp_path / 'results.json'
    _report.save_json(synthetic(), str(path))
    assert _report.load_json(str(path)) == synthetic()
    r = subprocess.run([sys.executable, os.path.join(BENCH, 'bench_all.py'), '--from-json', str(path)],
                       capture_output=True, text=True, cwd=BENCH)
    assert r.returncode == 0, r.stderr
    assert r.stdout == _report.table(synthetic()) + '\n'


def test_plot_writes_a_png(tmp_path):
    import matplotlib  # noqa: F401  (requirements-test.txt: CI must draw the plot, not skip it)
    path = tmp_path / 'roofline.png'
    _report.plot(synthetic(), str(path))
    data = path.read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    assert len(data) > 10_000  # axes, two roofs, points and a legend, not an empty canvas
