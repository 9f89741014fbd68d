"""docs/api_sm90.md, the call surface of each client (DeepGEMM 2.6.1, 2.8.1, sgl-deep-gemm 0.2.5) with what
deep_gemm does on SM90: every name it lists as "not defined" is absent from deep_gemm, every other name exists."""
import os
import re

import pytest

import deep_gemm

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'docs', 'api_sm90.md')


def table_rows():
    """(section, name, status) of every table row, the section being the dialect's heading."""
    rows, section = [], None
    with open(DOC) as f:
        for line in f:
            if line.startswith('## '):
                section = line[3:].strip()
            match = re.match(r'^\| `(\w+)` \|.*\| (.*) \|$', line.rstrip('\n'))
            if match and section:
                rows.append((section, match.group(1), match.group(2)))
    return rows


ROWS = table_rows()


def test_three_dialect_tables():
    sections = {section for section, _, _ in ROWS}
    assert sections == {'DeepGEMM 2.6.1', 'DeepGEMM 2.8.1 (as vLLM 0.34 bundles it)', 'sgl-deep-gemm 0.2.5 (SGLang 0.5.23)'}
    assert len(ROWS) > 150


@pytest.mark.parametrize('section,name,status', ROWS, ids=[f'{s.split()[1]}-{n}' for s, n, _ in ROWS])
def test_listed_name_exists_unless_marked_not_defined(section, name, status):
    if status.startswith('not defined'):
        assert not hasattr(deep_gemm, name), f'{name} exists: fix its row in docs/api_sm90.md ({section})'
    else:
        assert hasattr(deep_gemm, name), f'{name} is listed as {status!r} but deep_gemm has no such name ({section})'
