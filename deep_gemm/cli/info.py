"""``python -m deep_gemm info``: what a bug report needs, and works on a machine without a GPU."""
import ctypes
import json
import os
import platform
import sys

from .units import format_size


def add_parser(commands):
    parser = commands.add_parser('info', help='versions, GPUs, compiler, DG_* settings, cache')
    parser.add_argument('--json', action='store_true', help='one JSON object instead of text')
    parser.set_defaults(run=run)


def driver_version():
    """The CUDA driver's version as 'major.minor', or None without a driver (read from libcuda itself, which
    works without a GPU and without initialising CUDA)."""
    try:
        libcuda = ctypes.CDLL('libcuda.so.1')
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
        return f'{version.value // 1000}.{version.value % 1000 // 10}'
    except (OSError, AttributeError):
        return None


def gpus():
    import torch
    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        out.append({'index': i, 'name': props.name, 'compute_capability': f'{props.major}.{props.minor}',
                    'sm_count': props.multi_processor_count, 'memory_bytes': props.total_memory})
    return out


def settings(environ=os.environ):
    """Every DG_* variable of the C++ registry: the value in effect and whether it came from the environment."""
    from .. import _C
    out = []
    for entry in _C.setting_registry():
        raw = environ.get(entry['name'], '')
        from_env = raw != ''  # the JIT treats an empty variable as unset
        out.append({'name': entry['name'], 'value': raw if from_env else entry['default'],
                    'source': 'env' if from_env else 'default', 'type': entry['type'], 'doc': entry['doc']})
    return out


def collect():
    import torch
    import deep_gemm
    from .. import _C
    report = {
        'deep_gemm': {'version': deep_gemm.__version__, 'path': os.path.dirname(os.path.abspath(deep_gemm.__file__)),
                      'uses_runtime_api': bool(_C.USES_RUNTIME_API)},
        'python': platform.python_version(),
        'torch': {'version': torch.__version__, 'cuda': torch.version.cuda},
        'driver': driver_version(),
        'gpus': gpus(),
        'compiler': _C.compiler_info(),
        'settings': settings(),
        'settings_error': None,
    }
    try:
        cache_dir = _C.get_settings()['cache_dir']
    except RuntimeError as e:  # a malformed DG_* value: report it, still show the rest
        report['settings_error'] = str(e)
        cache_dir = None
    cache = {'dir': cache_dir}
    if cache_dir is not None:
        try:
            stats = _C.cache_stats(cache_dir)
            cache.update(entries=stats['entries'], bytes=stats['entry_bytes'], exists=os.path.isdir(cache_dir))
            from .cache import tuning_rows
            cache['tuning'] = tuning_rows(cache_dir)
        except RuntimeError as e:
            cache['error'] = str(e)
    report['cache'] = cache
    return report


def print_text(r, out=sys.stdout):
    def line(label, value):
        print(f'{label:<18}{value}', file=out)

    line('deep_gemm', f"{r['deep_gemm']['version']} ({r['deep_gemm']['path']})")
    line('python', r['python'])
    line('torch', f"{r['torch']['version']} (CUDA {r['torch']['cuda'] or 'none: CPU-only build'})")
    line('CUDA driver', r['driver'] or 'not found (no NVIDIA driver on this machine)')
    if r['gpus']:
        for gpu in r['gpus']:
            line(f"GPU {gpu['index']}", f"{gpu['name']}, sm_{gpu['compute_capability'].replace('.', '')}, "
                                        f"{gpu['sm_count']} SMs, {format_size(gpu['memory_bytes'])}")
    else:
        line('GPUs', 'none visible (kernels can still be compiled: deep_gemm.compile_only)')
    c = r['compiler']
    if 'error' in c:
        line('JIT compiler', f"not usable: {c['error']}")
    else:
        line('JIT compiler', f"{c['kind']} {c['path']}".rstrip())
        line('', c['version'])
    cache = r['cache']
    if cache['dir'] is None:
        line('kernel cache', 'unknown (settings do not parse)')
    elif 'error' in cache:
        line('kernel cache', f"{cache['dir']}: {cache['error']}")
    else:
        state = '' if cache['exists'] else ' (not created yet)'
        line('kernel cache', f"{cache['dir']}{state}: {cache['entries']} entries, {format_size(cache['bytes'])}")
        tuning = cache.get('tuning', [])
        line('tuning table', tuning['error'] if isinstance(tuning, dict) else
             f"{len(tuning)} picks ({len({r['gpu'] for r in tuning})} GPU models; DG_JIT_TUNING=0 turns them off)")
    if r['settings_error']:
        line('settings error', r['settings_error'])
    print('settings (DG_*):', file=out)
    width = max(len(s['name']) for s in r['settings'])
    for s in r['settings']:
        value = s['value'] if s['value'] != '' else '(empty)'
        print(f"  {s['name']:<{width}}  {value:<20} [{s['source']}]  {s['doc']}", file=out)


def run(args) -> int:
    report = collect()
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_text(report)
    return 0
