"""The repository explains itself: docs/env_vars.md covers every DG_* variable of the C++ registry, and
nothing cites documents that are not in the repository."""
import os
import re

from deep_gemm import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT_SUFFIXES = ('.py', '.cpp', '.hpp', '.h', '.cuh', '.md', '.txt', '.in', '.toml', '.sh', '.ini', '.pyi')
SKIP_DIRS = {'.git', 'build', '__pycache__', '.pytest_cache', '.peers', '.venv'}  # .peers: other projects' sources


def repo_text_files():
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith('.egg-info')]
        for name in files:
            if name.endswith(TEXT_SUFFIXES) or name == 'run':
                yield os.path.join(base, name)


def test_env_vars_doc_lists_every_setting():
    with open(os.path.join(ROOT, 'docs', 'env_vars.md')) as f:
        documented = set(re.findall(r'`(DG_[A-Z0-9_]+)`', f.read()))
    registry = {entry['name'] for entry in _C.setting_registry()}
    assert registry - documented == set(), 'add these to docs/env_vars.md'
    assert documented - registry == set(), 'documented but not in the registry (csrc/jit/settings.cpp)'


def test_readme_env_table_lists_every_setting():
    # README's table is the short form of docs/env_vars.md (which the test above ties to the registry).
    def table_names(path):
        with open(os.path.join(ROOT, path)) as f:
            return {name for line in f if line.startswith('| `DG_') for name in re.findall(r'`(DG_[A-Z0-9_]+)`',
                                                                                           line.split('|')[1])}
    assert table_names('docs/env_vars.md') - table_names('README.md') == set(), 'add these to README.md'


def test_no_citation_of_documents_outside_the_repository():
    # Markdown files named in prose must exist here; the team's planning notes are not shipped.
    outside = re.compile(r'\b(DESIGN|TARGETS|API_SM90)\.md\b|\bissue \d+\b')
    offenders = []
    for path in repo_text_files():
        if os.path.abspath(path) == os.path.abspath(__file__):
            continue
        with open(path, errors='replace') as f:
            for number, line in enumerate(f, 1):
                if outside.search(line):
                    offenders.append(f'{os.path.relpath(path, ROOT)}:{number}: {line.strip()}')
    assert offenders == []


def test_docs_links_resolve():
    """Every repository path a doc names in backticks (docs/..., benchmarks/..., csrc/..., ...) exists."""
    missing = []
    docs = [os.path.join(base, name) for base, _, names in os.walk(os.path.join(ROOT, 'docs')) for name in names
            if name.endswith('.md')]  # not the images
    for doc in docs + [os.path.join(ROOT, 'README.md')]:
        name = os.path.relpath(doc, ROOT)
        with open(doc) as f:
            text = f.read()
        for path in re.findall(r'`((?:docs|benchmarks|csrc|deep_gemm|tests|scripts)/[A-Za-z0-9_./-]+)`', text):
            if '*' not in path and '<' not in path and not os.path.exists(os.path.join(ROOT, path)):
                missing.append(f'{name}: {path}')
    assert missing == []


COMPILE_MODES = '''
import json, os, sys
from deep_gemm import _C
modes = {}
for value in sys.argv[1:]:
    os.environ['DG_JIT_COMPILE'] = value
    try:
        _C.reload_settings()
        modes[value] = _C.get_settings()['compile_mode']
    except RuntimeError:
        modes[value] = None
print(json.dumps(modes))
'''


def test_cache_doc_compile_mode_table_matches_the_parser():
    """docs/cache.md's DG_JIT_COMPILE table: every value in a row selects that row's mode, and every value the
    parser accepts (in any case) is in the table."""
    import json
    import subprocess
    import sys
    with open(os.path.join(ROOT, 'docs', 'cache.md')) as f:
        text = f.read()
    section = text.split('## No-compile serving', 1)[1].split('\n## ', 1)[0]
    rows = [line for line in section.splitlines() if line.startswith('| `')]
    documented = {value: re.findall(r'`([^`]+)`', row.split('|')[1])[0]
                  for row in rows for value in re.findall(r'`([^`]+)`', row.split('|')[1])}
    candidates = ['compile', 'warn', 'error', '0', '1', 'true', 'false', 'yes', 'no', 'on', 'off', 'TRUE', 'Off',
                  'enable', 'disable', '2']
    result = subprocess.run([sys.executable, '-c', COMPILE_MODES, *candidates, *documented], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    for value, mode in documented.items():
        assert parsed[value] == mode, f'docs/cache.md lists {value!r} under {mode}, the parser gives {parsed[value]}'
    accepted = {value.lower() for value in candidates if parsed[value] is not None}
    assert accepted - set(documented) == set(), 'accepted but not in the table of docs/cache.md'


def test_cache_doc_says_another_users_readable_cache_is_refused():
    """The read-only section once promised hits from another user's readable cache, which the trust model
    refuses (tests/cpp/test_cache_trust.cpp, PlantedCubinInAnotherUsersCacheSubdirIsRefused)."""
    with open(os.path.join(ROOT, 'docs', 'cache.md')) as f:
        section = f.read().split('## Read-only caches', 1)[1].split('\n## ', 1)[0]
    assert "another user's that you may read) serves hits" not in section
    assert "A cache of another user's that you may read does not" in section
