"""``python -m deep_gemm cache {ls,stats,prune,clear}``.

The work is done by the JIT core (deep_gemm._C.cache_*), which takes the same per-key lock as a compiling
process: an entry or build directory in use by another process is skipped and reported as busy, so these
commands are safe to run while jobs use the cache.
"""
import json
import os
import sys
import time

from .units import format_age, format_size, parse_duration, parse_size


def add_parser(commands):
    parser = commands.add_parser('cache', help='inspect or trim the kernel cache')
    parser.add_argument('--dir', help='cache root (default: DG_JIT_CACHE_DIR, else ~/.deep_gemm)')
    actions = parser.add_subparsers(dest='action', metavar='ACTION', required=True)

    ls = actions.add_parser('ls', help='list entries, most recently used first')
    ls.add_argument('--json', action='store_true')
    ls.set_defaults(run=run_ls)

    stats = actions.add_parser('stats', help='entry count and sizes')
    stats.add_argument('--json', action='store_true')
    stats.set_defaults(run=run_stats)

    prune = actions.add_parser('prune', help='remove entries by age and/or total size (least recently used first)')
    prune.add_argument('--max-age', type=parse_duration, metavar='DURATION',
                       help='remove entries not used for longer than this (e.g. 30d, 12h)')
    prune.add_argument('--max-size', type=parse_size, metavar='SIZE',
                       help='then remove least recently used entries until the rest fit (e.g. 2G, 500M)')
    prune.add_argument('--dry-run', action='store_true', help='show what would be removed')
    prune.add_argument('--json', action='store_true')
    prune.set_defaults(run=run_prune)

    clear = actions.add_parser('clear', help='remove every entry (asks first)')
    clear.add_argument('--yes', '-y', action='store_true', help='do not ask for confirmation')
    clear.add_argument('--dry-run', action='store_true', help='show what would be removed')
    clear.add_argument('--json', action='store_true')
    clear.set_defaults(run=run_clear)


def cache_root(args) -> str:
    if args.dir:
        return os.path.abspath(args.dir)
    from .. import _C
    return _C.get_settings()['cache_dir']


def run_ls(args) -> int:
    from .. import _C
    root = cache_root(args)
    entries = _C.cache_list(root)
    if args.json:
        json.dump({'dir': root, 'entries': entries}, sys.stdout, indent=2)
        print()
        return 0
    now = time.time()
    print(f'{root}: {len(entries)} entries')
    if entries:
        width = max(len(e['name']) for e in entries)
        print(f"{'KERNEL':<{width}}  {'SIZE':>10}  {'AGE':>6}  {'LAST USE':>8}  {'ARCH':<7} KEY")
        for e in entries:
            name = e['name'] if e['manifest_ok'] else e['name'] + ' (no valid manifest)'
            print(f"{name:<{width}}  {format_size(e['bytes']):>10}  {format_age(now - e['created']):>6}  "
                  f"{format_age(now - e['last_used']) + ' ago':>8}  {e['arch'] or '?':<7} {e['key']}")
    return 0


def run_stats(args) -> int:
    from .. import _C
    root = cache_root(args)
    stats = _C.cache_stats(root)
    if args.json:
        json.dump({'dir': root, **stats}, sys.stdout, indent=2)
        print()
        return 0
    print(f'cache dir     {root}')
    print(f"entries       {stats['entries']} ({format_size(stats['entry_bytes'])})")
    print(f"build dirs    {stats['build_dirs']} ({format_size(stats['build_bytes'])}): compiles running or interrupted")
    print(f"quarantined   {stats['quarantined']} ({format_size(stats['quarantine_bytes'])}): corrupt entries set aside")
    print(f"lock files    {stats['lock_files']}")
    return 0


def print_report(report, args, verb):
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    prefix = 'would remove' if args.dry_run else 'removed'
    for path in report['removed']:
        print(f'{prefix} {path}')
    for path in report['busy']:
        print(f'busy, kept   {path}')
    print(f"{verb}: {len(report['removed'])} removed ({format_size(report['bytes_freed'])}), "
          f"{len(report['busy'])} busy, {report['entries_left']} entries left ({format_size(report['bytes_left'])})")


def run_prune(args) -> int:
    from .. import _C
    if args.max_age is None and args.max_size is None:
        print('python -m deep_gemm cache prune: give --max-age and/or --max-size (or use `cache clear`)',
              file=sys.stderr)
        return 2
    report = _C.cache_prune(cache_root(args), max_unused_seconds=args.max_age, max_total_bytes=args.max_size,
                            dry_run=args.dry_run)
    print_report(report, args, 'prune' + (' (dry run)' if args.dry_run else ''))
    return 0


def run_clear(args) -> int:
    from .. import _C
    root = cache_root(args)
    if not args.yes and not args.dry_run:
        stats = _C.cache_stats(root)
        question = f"remove all {stats['entries']} entries ({format_size(stats['entry_bytes'])}) from {root}? [y/N] "
        if not sys.stdin.isatty():
            print(f'python -m deep_gemm cache clear: would {question[:-7]}; pass --yes to confirm without a terminal',
                  file=sys.stderr)
            return 1
        if input(question).strip().lower() not in ('y', 'yes'):
            print('nothing removed')
            return 1
    report = _C.cache_prune(root, remove_all=True, dry_run=args.dry_run)
    print_report(report, args, 'clear' + (' (dry run)' if args.dry_run else ''))
    return 0
