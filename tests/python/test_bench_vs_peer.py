"""The same-run comparison against DeepGEMM (benchmarks/bench_vs_peer.py) without a GPU: the case data both
sides build from, and the table the parent prints from the children's rounds."""
import math
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'benchmarks')
sys.path.insert(0, BENCH)
import bench_vs_peer as vs  # noqa: E402


def test_case_names_are_unique_and_seeds_stable():
    names = [vs.case_name(f, c) for f, cases in vs.FAMILIES.items() for c in cases]
    assert len(names) == len(set(names))
    c = vs.FAMILIES['fp8_masked'][0]
    assert vs.seed_of('fp8_masked', c) == vs.seed_of('fp8_masked', dict(c))


def test_layout_variants_of_a_shape_share_their_rows():
    # Index vs psum layout and zero padding on vs off compare on the same group rows; other shapes differ.
    cases = vs.FAMILIES['fp8_contiguous']
    seeds = {}
    for c in cases:
        seeds.setdefault((c['groups'], c['m'], c['n'], c['k']), set()).add(vs.seed_of('fp8_contiguous', c))
    assert all(len(s) == 1 for s in seeds.values()) and len(seeds) == 3
    assert len({next(iter(s)) for s in seeds.values()}) == 3
    assert {(c['psum'], c['zero_padding']) for c in cases} == {(False, False), (True, False), (False, True)}


def test_group_rows_equal_work_on_both_sides():
    # The two children compute the row counts independently: same seed, same rows, aligned, within +-30%.
    a, b = vs.group_rows(8, 4256, 128, 7), vs.group_rows(8, 4256, 128, 7)
    assert a == b and len(a) == 8
    assert all(r % 128 == 0 and 0.7 * 4256 - 128 <= r <= 1.3 * 4256 + 128 for r in a)
    assert vs.group_rows(8, 4256, 128, 8) != a


def test_flops():
    assert vs.case_flops('fp8_dense', dict(m=2, n=3, k=4)) == 48
    c = dict(groups=4, k=4096, m=7168, n=2048)
    ks = vs.group_rows(4, 4096, 128, vs.seed_of('fp8_k_grouped', c))
    assert vs.case_flops('fp8_k_grouped', c) == 2 * sum(ks) * 7168 * 2048


def test_table_ratios_errors_and_geomean(monkeypatch):
    monkeypatch.setattr(vs, 'FAMILIES', {'fp8_dense': [dict(m=1, n=2, k=3), dict(m=4, n=5, k=6)],
                                         'fp8_masked': [dict(groups=2, m=64, n=128, k=128)]})
    first, second, masked = (vs.case_name(f, c) for f, cs in vs.FAMILIES.items() for c in cs)
    rounds = [{'ours': {first: {'us': 10.0, 'baseline_us': 11.0}, second: {'us': 4.0}, masked: {'error': 'boom'}},
               'peer': {first: {'us': 12.0}, second: {'us': 2.0}, masked: {'us': 1.0}}},
              {'ours': {first: {'us': 10.0}, second: {'us': 4.0}},
               'peer': {first: {'us': 12.0}, second: {'us': 2.0}}}]
    text = vs.table(['fp8_dense', 'fp8_masked'], rounds)
    rows = {line.split('|')[1].strip(): [cell.strip() for cell in line.split('|')[2:-1]] for line in text.splitlines()[2:]}
    assert rows[first] == ['10.0 / 10.0', '12.0 / 12.0', '11.0', f'{12 / 10e-6 / 1e12:.0f}', '1.200']
    assert rows[second][2] == '-' and rows[second][4] == '0.500'
    assert rows[masked][0] == 'error: boom' and rows[masked][4] == '-'
    assert rows['**fp8_dense geomean**'][4] == f'{math.sqrt(1.2 * 0.5):.3f}'
    assert '**fp8_masked geomean**' not in rows


def test_parent_needs_the_peer(capsys):
    with pytest.raises(SystemExit):
        vs.main(['--peer-path', '/nonexistent'])
    assert 'build_deepgemm.sh' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        vs.main(['--families', 'nope', '--list'])


def test_plot_results_take_the_medians_of_each_side(monkeypatch):
    monkeypatch.setattr(vs, 'FAMILIES', {'fp8_dense': [dict(m=128, n=256, k=512)]})
    name = vs.case_name('fp8_dense', vs.FAMILIES['fp8_dense'][0])
    rounds = [{'ours': {name: {'us': 10.0, 'baseline_us': 20.0}}, 'peer': {name: {'us': 11.0}}},
              {'ours': {name: {'us': 12.0, 'baseline_us': 22.0}}, 'peer': {name: {'error': 'x'}}}]
    got = {r.impl: r for r in vs.plot_results(['fp8_dense'], rounds)}
    assert got['ours'].us == 11.0 and got['DeepGEMM v2.6.1'].us == 11.0 and got['cuBLAS(Lt)'].us == 21.0
    assert got['ours'].flops == 2 * 128 * 256 * 512 and got['ours'].dtype == 'fp8'
    assert got['ours'].bytes == 128 * 512 + 256 * 512 + 4 * (128 * 4 + 2 * 4) + 2 * 128 * 256


def test_saved_rounds_of_two_runs_merge_round_by_round(tmp_path):
    import json
    a = [{'ours': {'x': {'us': 1.0}}, 'peer': {'x': {'us': 2.0}}}, {'ours': {'x': {'us': 3.0}}, 'peer': {'x': {'us': 4.0}}}]
    b = [{'ours': {'y': {'us': 5.0}}, 'peer': {'y': {'us': 6.0}}}, {'ours': {'y': {'us': 7.0}}, 'peer': {'y': {'us': 8.0}}}]
    paths = []
    for i, rounds in enumerate((a, b)):
        paths.append(str(tmp_path / f'{i}.json'))
        with open(paths[-1], 'w') as f:
            json.dump(rounds, f)
    merged = vs.merge_saved_rounds(paths)
    assert merged == [{'ours': {'x': {'us': 1.0}, 'y': {'us': 5.0}}, 'peer': {'x': {'us': 2.0}, 'y': {'us': 6.0}}},
                      {'ours': {'x': {'us': 3.0}, 'y': {'us': 7.0}}, 'peer': {'x': {'us': 4.0}, 'y': {'us': 8.0}}}]


def test_host_vs_peer_table_takes_medians_and_shows_errors():
    import bench_host_vs_peer as hv
    keys = [f'first {m}x{n}x{k}' for m, n, k in hv.SHAPES] + ['host us, sfa row-major', 'host us, sfa TMA layout']
    ours = [{k: v for k in keys} for v in (1.0, 3.0, 2.0)]
    rows = {('ours', 'cold cache'): ours, ('peer', 'cold cache'): [{'error': 'peer crashed'}]}
    lines = hv.table(rows).splitlines()
    assert lines[2] == '| ours, cold cache | ' + ' | '.join(['2.0'] * len(keys)) + ' |'
    assert lines[3].count('error: peer crashed') == len(keys)


def test_fp8_casts_round_trip():
    # The casts both sides (and bench_host_vs_peer.py) build their inputs with, on CPU: the scaled codes give
    # the input back to e4m3's precision; N need not be a multiple of 128.
    import torch
    x = torch.randn(3, 200, 256, dtype=torch.bfloat16)
    codes, sf = vs.per_row_fp8(x)
    back = codes.float().view(3, 200, 2, 128) * sf.unsqueeze(-1)
    assert sf.shape == (3, 200, 2) and (back.view_as(x) - x.float()).abs().max() <= 0.07 * x.float().abs().max()
    codes, sf = vs.per_block_fp8(x)
    assert codes.shape == (3, 200, 256) and sf.shape == (3, 2, 2)
    scale = sf.repeat_interleave(128, 1)[:, :200].repeat_interleave(128, 2)
    assert (codes.float() * scale - x.float()).abs().max() <= 0.07 * x.float().abs().max()


def test_variants_get_their_own_table_and_setting(monkeypatch):
    # --ours-variants: each variant's child runs with its setting; its table compares it with the same peer times.
    monkeypatch.setattr(vs, 'FAMILIES', {'fp8_dense': [dict(m=1, n=2, k=3)]})
    name = vs.case_name('fp8_dense', vs.FAMILIES['fp8_dense'][0])
    seen = []

    def fake_side(side, peer_path, families, runs, cache_root, variant=None):
        seen.append((side, variant))
        return {name: {'us': {'ours': 10.0, 'peer': 12.0}[side] / (2.0 if variant else 1.0)}}

    monkeypatch.setattr(vs, 'run_side', fake_side)
    monkeypatch.setattr(vs.os.path, 'isdir', lambda path: True)
    out = []
    monkeypatch.setattr('builtins.print', lambda *a, **k: out.append(' '.join(map(str, a))))
    vs.main(['--peer-path', '/p', '--families', 'fp8_dense', '--rounds', '1', '--ours-variants', 'DG_X=1,2; '])
    assert seen == [('ours', None), ('ours', 'DG_X=1,2'), ('peer', None)]
    text = '\n'.join(out)
    assert '| 1.200 |' in text and 'DG_X=1,2:' in text and '| 2.400 |' in text
    with pytest.raises(SystemExit):
        vs.main(['--peer-path', '/p', '--families', 'fp8_dense', '--ours-variants', 'novalue'])
