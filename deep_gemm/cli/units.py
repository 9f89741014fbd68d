"""Human-readable durations and sizes for the command line: parsing ("30d", "2.5G") and printing."""
import re

_DURATION_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}
_SIZE_UNITS = {'': 1, 'b': 1, 'k': 1024, 'kb': 1024, 'kib': 1024, 'm': 1024 ** 2, 'mb': 1024 ** 2, 'mib': 1024 ** 2,
               'g': 1024 ** 3, 'gb': 1024 ** 3, 'gib': 1024 ** 3, 't': 1024 ** 4, 'tb': 1024 ** 4, 'tib': 1024 ** 4}


def parse_duration(text: str) -> int:
    """'90' (seconds), '45s', '30m', '12h', '7d', '2w' -> seconds. Raises ValueError."""
    match = re.fullmatch(r'\s*(\d+(?:\.\d*)?)\s*([smhdw]?)\s*', text.lower())
    if not match:
        raise ValueError(f'not a duration: {text!r}; use a number with s, m, h, d or w (e.g. 7d)')
    return int(float(match.group(1)) * _DURATION_UNITS[match.group(2) or 's'])


def parse_size(text: str) -> int:
    """'1000' (bytes), '500K', '2.5G', '1GiB' -> bytes (binary multiples). Raises ValueError."""
    match = re.fullmatch(r'\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*', text.lower())
    if not match or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f'not a size: {text!r}; use a number with K, M, G or T (e.g. 2G)')
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def format_size(n: int) -> str:
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if n < 1024 or unit == 'GiB':
            return f'{n} {unit}' if unit == 'B' else f'{n:.1f} {unit}'
        n /= 1024
    return f'{n:.1f} GiB'


def format_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
        if seconds >= size:
            return f'{seconds // size}{unit}'
    return f'{seconds}s'
