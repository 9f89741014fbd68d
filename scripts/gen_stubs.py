"""Rewrites what is generated from the op table of the built extension (csrc/python/gemm_table.hpp and
csrc/python/op_table.hpp, via _C._gemm_op_table() and _C._op_table()): the GEMM part of deep_gemm/_C.pyi and the
whole of deep_gemm/_wrappers.py (the public GEMM wrappers with their docstrings from deep_gemm/_gemm_docs.py, and
the list of every public op name that deep_gemm.__all__ starts with). Run after changing a table or a docstring:

    PYTHONPATH=$PWD python3 scripts/gen_stubs.py           # rewrite both files
    PYTHONPATH=$PWD python3 scripts/gen_stubs.py --check   # exit 1 if either is stale

The rest of _C.pyi (JIT tools, knobs, layout, quantisation) is written by hand;
tests/python/test_stubs.py checks all of it against the module, and both generated parts against the table.
"""

import argparse
import importlib
import os
import sys
import types

import torch  # noqa: F401  (before _C, which links against it)

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'deep_gemm')
STUB = os.path.join(PACKAGE, '_C.pyi')
WRAPPERS = os.path.join(PACKAGE, '_wrappers.py')

# deep_gemm's modules are loaded without running deep_gemm/__init__.py, which imports the generated
# _wrappers.py: a stale or missing one must not stop its own regeneration.
_package = types.ModuleType('deep_gemm')
_package.__path__ = [PACKAGE]
sys.modules.setdefault('deep_gemm', _package)
_C = importlib.import_module('deep_gemm._C')
DOCS = importlib.import_module('deep_gemm._gemm_docs').DOCS
_surface = importlib.import_module('deep_gemm._gemm_surface')


def wanted_texts() -> dict:
    """path -> the text it should have."""
    with open(STUB) as f:
        stub = f.read()
    return {STUB: _surface.update_stub_text(stub, _C),
            WRAPPERS: _surface.wrappers_module_text(_C._gemm_op_table(), DOCS, _C._op_table())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true', help='only report whether the files are up to date')
    args = parser.parse_args()
    stale = []
    for path, wanted in wanted_texts().items():
        current = open(path).read() if os.path.exists(path) else None
        if wanted == current:
            continue
        stale.append(path)
        if not args.check:
            with open(path, 'w') as f:
                f.write(wanted)
            print(f'rewrote {path}')
    if args.check and stale:
        print(f'stale: {", ".join(stale)}: run scripts/gen_stubs.py', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
