"""``python -m deep_gemm cache {ls,stats,prune,clear,export,import}``.

The work is done by the JIT core (deep_gemm._C.cache_*), which takes the same per-key lock as a compiling
process: an entry or build directory in use by another process is skipped and reported as busy, so these
commands are safe to run while jobs use the cache.
"""
import argparse
import json
import os
import sys
import time

from .units import format_age, format_size, parse_duration, parse_size


DIR_HELP = 'cache root (default: DG_JIT_CACHE_DIR, else ~/.deep_gemm)'


def add_parser(commands):
    parser = commands.add_parser('cache', help='inspect or trim the kernel cache')
    parser.add_argument('--dir', help=DIR_HELP)
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

    export = actions.add_parser('export', help='write entries to a bundle (a tar archive; docs/cache.md)')
    export.add_argument('file', help='the bundle to write')
    export.add_argument('--from-record', metavar='RECORD', help='only the kernels of this DG_JIT_RECORD file (all '
                        'must be in the cache)')
    export.add_argument('--arch', default=None, help='with --from-record: the arch to look them up for (default: '
                        'the recorded one)')
    export.add_argument('--json', action='store_true')
    export.set_defaults(run=run_export)

    imp = actions.add_parser('import', help='verify a bundle and install its entries (only bundles you trust)')
    imp.add_argument('file', help='a bundle written by `cache export`')
    imp.add_argument('--json', action='store_true')
    imp.set_defaults(run=run_import)

    # --dir after the action as well (`cache stats --dir X`); SUPPRESS keeps a --dir given before the action.
    for action in (ls, stats, prune, clear, export, imp):
        action.add_argument('--dir', default=argparse.SUPPRESS, help=DIR_HELP)


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
        json.dump({'dir': root, 'entries': entries, 'tuning': tuning_rows(root)}, sys.stdout, indent=2)
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
    print_tuning(root)
    return 0


def tuning_rows(root: str):
    """The cache's tuning table as dicts (docs/cache.md, "Tuning table"), or {'error': ...} when it cannot be read."""
    from .. import _C
    try:
        rows = _C._tuning_table(root)
    except RuntimeError as e:
        return {'error': str(e)}
    keys = ('gpu', 'variable', 'signature', 'config', 'heuristic_us', 'tuned_us')
    return [dict(zip(keys, row)) for row in rows]


def print_tuning(root: str) -> None:
    rows = tuning_rows(root)
    if isinstance(rows, dict):
        print(f"tuning table: {rows['error']}")
        return
    print(f'tuning table: {len(rows)} picks')
    for r in rows:
        print(f"  {r['gpu']}  {r['variable']}={r['config']}  {r['heuristic_us']:.1f} -> {r['tuned_us']:.1f} us  "
              f"{r['signature']}")


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
    print(f"lock files    {stats['lock_files']}: empty per-kernel files in locks/ (they make concurrent processes "
          f"compile a kernel once); harmless, no cleaning needed")
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


def _use_root(args) -> str:
    """The cache root; with --dir, also the JIT's (lookups go through the settings)."""
    from .. import _C
    if args.dir:
        os.environ['DG_JIT_CACHE_DIR'] = os.path.abspath(args.dir)
        _C.reload_settings()
    return cache_root(args)


def run_export(args) -> int:
    from .._bundle import export_bundle
    from .._warmup import read_record
    from .. import _C
    root = _use_root(args)
    dirs = None
    if args.from_record:
        dirs, missing = [], []
        for record in read_record(args.from_record):
            arch = args.arch or record.arch
            found = _C.cache_lookup(record.name, record.symbol, record.code, arch)
            (dirs if found['present'] else missing).append(found['dir'] if found['present'] else f'{record.name} ({arch})')
        if missing:
            print(f'python -m deep_gemm cache export: {len(missing)} recorded kernels are not in {root}; build them '
                  f'first with `python -m deep_gemm warmup {args.from_record}`:', file=sys.stderr)
            for line in missing:
                print(f'  missing: {line}', file=sys.stderr)
            return 1
    report = export_bundle(root, args.file, dirs)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print(f"exported {report['entries']} entries and {report['tuning']} tuned picks from {root} to {args.file} "
              f"({report['compiler']['kind']} {report['compiler']['version']})")
        for path in report['skipped']:
            print(f'skipped (does not match its manifest) {path}', file=sys.stderr)
    return 0


def run_import(args) -> int:
    from .._bundle import import_bundle
    from .. import _C
    root = _use_root(args)
    report = import_bundle(root, args.file)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"imported {len(report['installed'])} entries into {root}, {len(report['present'])} already there; "
          f"{report['tuning']} tuned picks merged")
    mine = _C.compiler_info()
    theirs = report.get('compiler') or {}
    if mine.get('version') and theirs.get('version') and (mine.get('kind'), mine['version']) != (theirs.get('kind'), theirs['version']):
        print(f"note: the bundle was made with {theirs.get('kind')} {theirs['version']!r}; this JIT uses "
              f"{mine.get('kind')} {mine['version']!r}, so it will not find these entries (the key covers the compiler)",
              file=sys.stderr)
    return 0
