"""``python -m deep_gemm warmup``: compile the kernels a DG_JIT_RECORD file lists, or those a list of op calls
needs (--calls FILE.json, --call 'op:m=..,n=..,k=..', --preset MODEL-tpT), into the cache (see
deep_gemm/_warmup.py and deep_gemm/_warmup_presets.py)."""
import json
import sys


def add_parser(commands):
    parser = commands.add_parser('warmup', help='compile the kernels of a DG_JIT_RECORD file or of a list of op calls',
                                 description='Compile kernels into the cache ahead of a job (no GPU needed). Calls are '
                                 "planned for this machine's GPU, or without one for --arch/--num-sms/--smem-optin "
                                 '(default sm_90a, 132 SMs, 232448 B: an H100/H200 SXM). Exits 1 if any call or '
                                 'kernel failed, listing them.')
    parser.add_argument('record', nargs='?', help='file written by a run with DG_JIT_RECORD=FILE')
    parser.add_argument('--calls', metavar='FILE', help='JSON list of calls, e.g. [{"op": "fp8_gemm_nt", "m": 4096, '
                        '"n": 7168, "k": 2048}] (fields: deep_gemm/_warmup_calls.py)')
    parser.add_argument('--call', action='append', default=[], metavar='SPEC',
                        help="one call as op:field=value,... e.g. 'fp8_gemm_nt:m=4096,n=7168,k=2048' (repeatable)")
    parser.add_argument('--preset', action='append', default=[], metavar='NAME',
                        help="the GEMM calls of a model preset, e.g. deepseek-v3-tp8 or deepseek-v3-ep32 (repeatable; "
                        "'--preset list' shows them; docs/warmup_presets.md)")
    parser.add_argument('--list-presets', action='store_true', help='list the model presets and exit')
    parser.add_argument('--jobs', '-j', type=int, default=None, help='parallel compiles (default: CPU count)')
    parser.add_argument('--arch', default=None, help='target arch (e.g. sm_90a): replaces the recorded one; calls '
                        "are planned for it (default: this GPU's, else sm_90a)")
    parser.add_argument('--num-sms', type=int, default=None, help="SMs to plan calls for (default: this GPU's "
                        'get_num_sms(), else 132); must be what the job runs with (set_num_sms included)')
    parser.add_argument('--smem-optin', type=int, default=None, help='shared memory per block in bytes to plan '
                        "calls for (default: this GPU's, else 232448)")
    parser.add_argument('--check', action='store_true', help='compile nothing: report which of the kernels are '
                        'missing from the cache (exit status 1 if any is)')
    parser.add_argument('--quiet', '-q', action='store_true', help='no progress line')
    parser.add_argument('--json', action='store_true', help='print the summary as JSON')
    parser.set_defaults(run=run)


def run(args) -> int:
    from .._warmup import warmup
    from .._warmup_calls import read_calls
    from .._warmup_presets import describe_presets, preset_calls
    from .. import _C
    if args.list_presets or 'list' in args.preset:
        print(describe_presets())
        return 0
    if args.record is None and args.calls is None and not args.call and not args.preset:
        print('python -m deep_gemm warmup: nothing to warm: give a DG_JIT_RECORD file, --calls FILE, --call SPEC or '
              '--preset NAME', file=sys.stderr)
        return 2
    try:
        preset = [call for name in args.preset for call in preset_calls(name)]
    except ValueError as e:
        print(f'python -m deep_gemm {e}', file=sys.stderr)
        return 2
    calls = (read_calls(args.calls) if args.calls else []) + args.call + preset
    if args.check:
        return _run_check(args, calls)
    result = warmup(args.record, jobs=args.jobs, arch=args.arch, progress=not args.quiet and not args.json,
                    calls=calls or None, num_sms=args.num_sms, smem_optin=args.smem_optin)
    summary = {'cache_dir': _C.get_settings()['cache_dir'], 'kernels': result.kernels, 'compiled': result.compiled,
               'cached': result.cached, 'failed': result.failed, 'details': result.details,
               'seconds': round(result.seconds, 3)}
    if calls:
        summary.update(calls=result.calls, target=result.target)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        source = f'{result.calls} calls -> ' if calls else ''
        print(f"warmup: {source}{result.kernels} kernels into {summary['cache_dir']}: {result.compiled} compiled, "
              f"{result.cached} already cached, {len(result.failed)} failed ({result.seconds:.1f} s)")
        if calls:
            print(f'  planned for {result.target}')
        for failure, detail in zip(result.failed, result.details):
            print(f'  failed: {failure}', file=sys.stderr)
            _print_detail(detail)
    return 1 if result.failed else 0


def _run_check(args, calls) -> int:
    from .._warmup import check
    from .. import _C
    result = check(args.record, arch=args.arch, calls=calls or None, num_sms=args.num_sms, smem_optin=args.smem_optin)
    cache_dir = _C.get_settings()['cache_dir']
    if args.json:
        json.dump({'cache_dir': cache_dir, 'present': result.present, 'missing': result.missing,
                   'failed': result.failed}, sys.stdout, indent=2)
        print()
    else:
        print(f'warmup --check: {len(result.present)} kernels in {cache_dir}, {len(result.missing)} missing'
              + (f', {len(result.failed)} calls not planned' if result.failed else ''))
        for line in result.missing:
            print(f'  missing: {line}')
        for line in result.failed:
            print(f'  failed: {line}', file=sys.stderr)
    return 1 if result.missing or result.failed else 0


_DETAIL_LINES = 40


def _print_detail(detail: str) -> None:
    """The lines of a failure's message after its first (a compiler's log), indented, at most _DETAIL_LINES."""
    lines = detail.splitlines()[1:]
    for line in lines[:_DETAIL_LINES]:
        print(f'    {line}', file=sys.stderr)
    if len(lines) > _DETAIL_LINES:
        print(f'    ... {len(lines) - _DETAIL_LINES} more lines', file=sys.stderr)
