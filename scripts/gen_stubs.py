"""Rewrites the GEMM part of deep_gemm/_C.pyi from the op table of the built extension
(csrc/python/gemm_table.hpp via _C._gemm_op_table()). Run after changing the table:

    PYTHONPATH=$PWD python3 scripts/gen_stubs.py           # rewrite deep_gemm/_C.pyi
    PYTHONPATH=$PWD python3 scripts/gen_stubs.py --check   # exit 1 if it is stale

The rest of _C.pyi (JIT tools, knobs, layout, quantisation) is written by hand;
tests/python/test_stubs.py checks all of it against the module.
"""

import argparse
import os
import sys

from deep_gemm import _C
from deep_gemm._gemm_surface import update_stub_text

STUB = os.path.join(os.path.dirname(os.path.abspath(_C.__file__)), '_C.pyi')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true', help='only report whether the file is up to date')
    args = parser.parse_args()
    with open(STUB) as f:
        current = f.read()
    wanted = update_stub_text(current, _C)
    if args.check:
        if wanted != current:
            print(f'{STUB} is stale: run scripts/gen_stubs.py', file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        with open(STUB, 'w') as f:
            f.write(wanted)
        print(f'rewrote the GEMM stubs of {STUB}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
