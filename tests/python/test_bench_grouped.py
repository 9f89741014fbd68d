"""The grouped benchmarks' host-side logic without a GPU (benchmarks/bench_fp8_grouped.py, shared with
bench_bf16_grouped.py): --shapes parsing, table rows, and print_table's dispatch on the shape kind with stub
bench functions."""
import argparse
import os
import sys

import pytest
import torch

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'benchmarks')
sys.path.insert(0, BENCH)
import bench_fp8_grouped as grouped  # noqa: E402


def test_parse_shapes():
    assert grouped.parse_shapes('masked:32x48x4096x7168, psum:4x8576x4096x4096') == [
        ('masked', 32, 48, 4096, 7168), ('psum', 4, 8576, 4096, 4096)]
    for bad in ('dense:1x2x3x4', 'masked:32x48x4096', 'masked:32x0x4096x7168', 'masked:32x-1x4096x7168', 'masked'):
        with pytest.raises(argparse.ArgumentTypeError, match='KIND:GxMEANxNxK'):
            grouped.parse_shapes(bad)
    args = grouped.argument_parser().parse_args(['--shapes', 'contiguous:8x4256x6144x7168'])
    assert args.shapes == [('contiguous', 8, 4256, 6144, 7168)] and args.runs == 10
    assert grouped.argument_parser().parse_args([]).shapes == grouped.SHAPES


def test_table_row():
    row = grouped.table_row('masked', 2, [100, 300], 1024, 2048, {'ours': 10.0, 'loop': 15.0, 'dense': None})
    assert row.split() == ['masked', '2', '400', '1024', '2048', '|', '10.0',
                           f'{2 * 400 * 1024 * 2048 / 10e-6 / 1e12:.0f}', '|', '15.0', '1.50', '|', 'n/a', 'n/a']
    failed = grouped.table_row('psum', 1, [128], 256, 128, {'ours': None, 'loop': 1.0, 'dense': 2.0})
    assert failed.split()[5:8] == ['|', 'n/a', 'n/a']


def test_print_table_dispatches_on_the_kind(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, 'get_device_name', lambda *a: 'stub')
    monkeypatch.setattr(torch.cuda, 'empty_cache', lambda: None)
    calls = []

    def contiguous(groups, mean, n, k, runs, configs=(), psum=False):
        calls.append(('contiguous', psum, runs, tuple(configs)))
        return [mean] * groups, {'ours': 10.0, 'loop': 20.0, 'dense': 5.0, **{f'ours@{v}': 12.0 for v in configs}}

    def masked(groups, mean, n, k, runs, configs=()):
        calls.append(('masked', runs, tuple(configs)))
        return [mean] * groups, {'ours': 8.0, 'loop': None, 'dense': 4.0, **{f'ours@{v}': None for v in configs}}

    shapes = [('contiguous', 2, 128, 256, 512), ('psum', 2, 128, 256, 512), ('masked', 3, 64, 256, 512)]
    grouped.print_table(contiguous, masked, shapes, ['128,128,0,1,0'], runs=3, configs=['128,128,0,1,0'])
    assert calls == [('contiguous', False, 3, ('128,128,0,1,0',)), ('contiguous', True, 3, ('128,128,0,1,0',)),
                     ('masked', 3, ('128,128,0,1,0',))]
    out = capsys.readouterr().out
    assert 'DG_FP8_GEMM_CONFIG=128,128,0,1,0: 12.0 us (its time / ours 1.200)' in out
    assert 'DG_FP8_GEMM_CONFIG=128,128,0,1,0: n/a us' in out
    assert 'contiguous:2x128x256x512: [default] 10.0  [128,128,0,1,0] 12.0' in out
    assert 'psum:2x128x256x512: [default] 10.0  [128,128,0,1,0] 12.0' in out
    assert 'masked:3x64x256x512: [default] 8.0  [128,128,0,1,0] n/a' in out


def test_overlap_options(monkeypatch, capsys):
    """--overlap: its shapes' parser and the table of times without / with tile signals (stub bench)."""
    assert grouped.parse_overlap_shapes('16x256x4096x7168, 32x1024x7168x2048') == [(16, 256, 4096, 7168), (32, 1024, 7168, 2048)]
    for bad in ('16x256x4096', '16x0x4096x7168', 'x', ''):
        with pytest.raises(argparse.ArgumentTypeError, match='GxMAX_MxNxK'):
            grouped.parse_overlap_shapes(bad)
    assert all(g in (16, 32) and 256 <= m <= 1024 for g, m, _, _ in grouped.OVERLAP_SHAPES)
    monkeypatch.setattr(torch.cuda, 'get_device_name', lambda *a: 'stub')
    monkeypatch.setattr(torch.cuda, 'empty_cache', lambda: None)
    calls = []

    def bench(groups, max_m, n, k, runs, max_block_n=256):
        calls.append((groups, max_m, n, k, runs, max_block_n))
        return [100] * groups, {'off': 10.0, 'on': 10.5}, (64, 28)

    grouped.print_overlap_table([(16, 256, 7168, 2048)], 5, 160, bench=bench)
    assert calls == [(16, 256, 7168, 2048, 5, 160)]
    row = [line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith('16 ')][0]
    assert row.split() == ['16', '256', '1600', '7168', '2048', '|', '10.0', '10.5', '1.050', '|', '64', '28']
