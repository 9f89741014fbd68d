"""benchmarks/report_performance.py: docs/performance.md is what the one command writes from the committed raw
rounds (the CI check), a stale doc or a bad manifest is caught, a new raw file in the manifest reaches the doc,
and the plot is drawn (no GPU, no torch needed); forced-variant sweeps go to benchmarks/log/forced_variants.md."""
import json
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import report_performance as rp  # noqa: E402


def test_committed_doc_matches_the_raw_data(capsys):
    assert rp.main(['--check']) == 0, 'run: python3 benchmarks/report_performance.py'


def test_a_stale_doc_is_reported(tmp_path, capsys):
    doc = tmp_path / 'performance.md'
    with open(rp.DOC) as f:
        text = f.read()
    doc.write_text(text.replace('| **fp8_dense geomean** | | | | | ', '| **fp8_dense geomean** | | | | | 9', 1))
    assert rp.main(['--check', '--doc', str(doc)]) == 1
    assert 'stale' in capsys.readouterr().err


def write_round(path, sides):
    with open(path, 'w') as f:
        json.dump([sides], f)


def small_data(tmp_path, manifest):
    """A data folder with one masked run (ours 2x faster than the peer on its first case) and `manifest`."""
    name = 'fp8_masked groups=32 m=192 n=6144 k=7168'
    write_round(tmp_path / 'run.json', {'ours': {name: {'us': 50.0}}, 'ours DG_X=1': {name: {'us': 200.0}},
                                        'peer': {name: {'us': 100.0}}})
    (tmp_path / 'current.json').write_text(json.dumps(manifest))
    return str(tmp_path / 'current.json')


def test_a_new_file_in_the_manifest_reaches_the_doc(tmp_path):
    path = small_data(tmp_path, {'current': {'fp8_masked': ['run.json']}, 'variant_sweeps': ['run.json']})
    block, sweeps, plot_data = rp.generate(rp.load_manifest(path), str(tmp_path))
    assert '| fp8_masked | 1 | 2.000 | 2.000 | 2.000 | 1 | `benchmarks/data/run.json` |' in block
    assert '| fp8_masked groups=32 m=192 n=6144 k=7168 | 2.000 | 0.500 |' in sweeps  # default, then DG_X=1
    assert plot_data == {'fp8_masked': [('fp8_masked groups=32 m=192 n=6144 k=7168', 2.0)]}


@pytest.mark.parametrize('manifest, message', [
    ({'current': {'fp8_nope': ['run.json']}}, 'unknown families'),
    ({'current': {'fp8_masked': ['missing.json']}}, 'files not in'),
    ({'curent': {}}, 'unknown keys'),
])
def test_bad_manifest_is_refused(tmp_path, manifest, message):
    with pytest.raises(ValueError, match=message):
        rp.load_manifest(small_data(tmp_path, manifest))


def test_a_family_without_both_sides_is_refused(tmp_path):
    path = small_data(tmp_path, {'current': {'fp8_dense': ['run.json']}})
    with pytest.raises(ValueError, match='no case of fp8_dense'):
        rp.generate(rp.load_manifest(path), str(tmp_path))


def test_markers_are_required():
    with pytest.raises(ValueError, match='markers'):
        rp.splice('no markers here', 'block')


def test_plot_is_drawn(tmp_path):
    pytest.importorskip('matplotlib')
    out = tmp_path / 'plot.png'
    rp.plot({'fp8_dense': [('a', 0.9), ('b', 1.1)], 'fp8_masked': [('c', 1.0)]}, str(out))
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
