"""``python -m deep_gemm warmup FILE``: compile the kernels a DG_JIT_RECORD file lists (see deep_gemm/_warmup.py)."""
import json
import sys


def add_parser(commands):
    parser = commands.add_parser('warmup', help='compile the kernels of a DG_JIT_RECORD file into the cache')
    parser.add_argument('record', help='file written by a run with DG_JIT_RECORD=FILE')
    parser.add_argument('--jobs', '-j', type=int, default=None, help='parallel compiles (default: CPU count)')
    parser.add_argument('--arch', default=None, help="target arch instead of the recorded one (e.g. sm_90a)")
    parser.add_argument('--quiet', '-q', action='store_true', help='no progress line')
    parser.add_argument('--json', action='store_true', help='print the summary as JSON')
    parser.set_defaults(run=run)


def run(args) -> int:
    from .._warmup import warmup
    from .. import _C
    result = warmup(args.record, jobs=args.jobs, arch=args.arch, progress=not args.quiet and not args.json)
    summary = {'cache_dir': _C.get_settings()['cache_dir'], 'kernels': result.total, 'compiled': result.compiled,
               'cached': result.cached, 'failed': result.failed, 'seconds': round(result.seconds, 3)}
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print(f"warmup: {result.total} kernels into {summary['cache_dir']}: {result.compiled} compiled, "
              f"{result.cached} already cached, {len(result.failed)} failed ({result.seconds:.1f} s)")
        for failure in result.failed:
            print(f'  failed: {failure}', file=sys.stderr)
    return 1 if result.failed else 0
