"""Command line of deep_gemm: ``python -m deep_gemm {info,cache,warmup,tune} ...`` (``--help`` on each).

- ``info [--json]``: versions, GPUs, the JIT compiler, every DG_* setting and where its value comes from,
  the kernel cache.
- ``cache {ls,stats,prune,clear}``: inspect and trim the kernel cache; safe while other processes use it.
  ``cache export FILE [--from-record R]`` / ``cache import FILE``: move entries between caches as a verified
  bundle (docs/cache.md).
- ``warmup FILE``: compile the kernels a run recorded with ``DG_JIT_RECORD=FILE`` (no GPU needed);
  ``warmup --calls calls.json`` / ``--call 'op:m=..,n=..,k=..'``: those a list of op calls needs;
  ``warmup --check ...``: which of them are missing from the cache (compiles nothing).
- ``tune --call/--calls/--preset ... [--budget S]``: on a Hopper GPU, time the candidate configs of those calls
  and keep the winners in the cache's tuning table (docs/cache.md).
"""
import argparse
import sys
from typing import List, Optional

from . import cache, info, tune, warmup


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='python -m deep_gemm', description='deep_gemm tools')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    info.add_parser(commands)
    cache.add_parser(commands)
    warmup.add_parser(commands)
    tune.add_parser(commands)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (RuntimeError, ValueError, OSError) as e:
        print(f'python -m deep_gemm {args.command}: {e}', file=sys.stderr)
        return 1
