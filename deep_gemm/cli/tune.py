"""``python -m deep_gemm tune``: measure the candidate kernel configs of a list of op calls on this GPU and keep
the winners in the cache's tuning table (see deep_gemm/_tune.py and docs/cache.md, "Tuning table")."""
import sys


def add_parser(commands):
    parser = commands.add_parser('tune', help='pick kernel configs by measurement on this GPU (kept in the cache)',
                                 description='For each call: compile the candidate configs around the heuristic\'s '
                                 'pick, check each against the heuristic kernel on random data, time them in '
                                 'interleaved rounds with L2 flushed, and keep a winner only if it beats the heuristic '
                                 'by more than the measured noise in every round. Needs a Hopper GPU. The picks apply '
                                 'to this GPU model only; DG_JIT_TUNING=0 turns them off.')
    parser.add_argument('record', nargs='?', help='file written by a run with DG_JIT_RECORD=FILE (its GEMM calls)')
    parser.add_argument('--calls', metavar='FILE', help='JSON list of calls (as for warmup)')
    parser.add_argument('--call', action='append', default=[], metavar='SPEC',
                        help="one call as op:field=value,... e.g. 'fp8_gemm_nt:m=4096,n=7168,k=2048' (repeatable)")
    parser.add_argument('--preset', action='append', default=[], metavar='NAME',
                        help='the GEMM calls of a model preset (as for warmup; docs/warmup_presets.md)')
    parser.add_argument('--budget', type=float, default=None, metavar='SECONDS',
                        help='start no new call after this many seconds (the calls left are listed as not tuned)')
    parser.add_argument('--rounds', type=int, default=5, help='interleaved timing rounds (default 5)')
    parser.add_argument('--jobs', '-j', type=int, default=None, help='parallel compiles (default: CPU count)')
    parser.add_argument('--quiet', '-q', action='store_true', help='no progress bar')
    parser.set_defaults(run=run)


def run(args) -> int:
    from .._tune import format_table, require_gpu, tune
    from .._warmup_calls import read_calls
    from .._warmup_presets import preset_calls
    if args.record:
        print('python -m deep_gemm tune: a DG_JIT_RECORD file holds kernels, not calls; tune takes --call, --calls '
              'or --preset', file=sys.stderr)
        return 2
    calls = (read_calls(args.calls) if args.calls else []) + args.call + [
        call for name in args.preset for call in preset_calls(name)]
    if not calls:
        print('python -m deep_gemm tune: nothing to tune: give --calls FILE, --call SPEC or --preset NAME',
              file=sys.stderr)
        return 2
    if args.rounds < 2:
        print('python -m deep_gemm tune: --rounds must be at least 2 (the noise is measured across rounds)',
              file=sys.stderr)
        return 2
    require_gpu()  # before any compile: a clear error on a machine without one
    results = tune(calls, budget_s=args.budget, jobs=args.jobs, progress=not args.quiet, rounds=args.rounds)
    print(format_table(results))
    return 1 if any(r.error and 'budget' not in r.error for r in results) else 0
