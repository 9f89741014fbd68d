"""Model presets for the warm-up: ``python -m deep_gemm warmup --preset NAME`` / ``deep_gemm.warmup(preset=NAME)``.

A preset is the list of GEMM calls (the ``warmup --calls`` format of deep_gemm/_warmup_calls.py) that one rank
of a model runs in a given parallel layout. The models live in data files, ``deep_gemm/presets/*.json``, one
model per file (docs/warmup_presets.md describes the format):

- ``names``: the model's names (aliases of one architecture, e.g. ``deepseek-v3`` and ``deepseek-r1``);
- ``config``: the numbers of the model's config.json that the shapes are computed from;
- ``layouts``: the TP sizes ``tp`` and EP sizes ``ep`` the presets cover; the preset names are
  ``<name>-tp<T>``, ``<name>-ep<E>`` and ``<name>-tp<T>-ep<E>``;
- ``tokens``: the token counts the calls are planned for (``dense_m``, ``prefill_tokens_per_rank``,
  ``decode_tokens_per_rank``);
- ``gemms``: each GEMM's ``op``, ``kind`` (``dense``, ``contiguous`` or ``masked``) and ``n`` / ``k`` as
  arithmetic on the config's names plus ``tp`` (the attention/dense TP), ``moe_tp`` (the experts' TP) and
  ``experts_per_rank``, with a ``derivation`` saying where the shape comes from.

Arithmetic is ``+ - * / //`` and parentheses on ints; ``/`` must divide exactly (a layout that would split a
weight unevenly is an error, not a rounded shape).
"""
import ast
import glob
import json
import math
import os
import re
from functools import lru_cache
from typing import Any, Dict, List, Tuple

PRESET_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'presets')
_KINDS = ('dense', 'contiguous', 'masked')
_NAME = re.compile(r'^(?P<model>.+?)(?:-tp(?P<tp>\d+))?(?:-ep(?P<ep>\d+))?$')


def _eval(expr: Any, names: Dict[str, int], where: str) -> int:
    """An int, or ``expr`` (a string of + - * / // and parentheses over ``names``) evaluated exactly."""
    if isinstance(expr, int) and not isinstance(expr, bool):
        return expr
    if not isinstance(expr, str):
        raise ValueError(f'{where}: expected an int or an arithmetic string; got {expr!r}')

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(f'{where}: unknown name {node.id!r} in {expr!r}; known: {", ".join(sorted(names))}')
            return names[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if b == 0:
                raise ValueError(f'{where}: division by zero in {expr!r}')
            if isinstance(node.op, ast.Div) and a % b:
                raise ValueError(f'{where}: {a} / {b} is not exact in {expr!r} (the layout splits the weight unevenly)')
            return a // b
        raise ValueError(f'{where}: only ints, names, + - * / // and parentheses are allowed; got {expr!r}')

    try:
        tree = ast.parse(expr, mode='eval')
    except SyntaxError:
        raise ValueError(f'{where}: not an arithmetic expression: {expr!r}') from None
    return ev(tree)


@lru_cache(maxsize=None)
def _models() -> Tuple[Tuple[str, Dict[str, Any]], ...]:
    """(name, model) for every name of every data file, in file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(PRESET_DIR, '*.json'))):
        with open(path) as f:
            model = json.load(f)
        model['_file'] = os.path.relpath(path, os.path.dirname(PRESET_DIR))
        for name in model['names']:
            out.append((name, model))
    return tuple(out)


def preset_names() -> List[str]:
    """Every preset name, model by model: ``<name>-tp<T>``, ``<name>-ep<E>``, ``<name>-tp<T>-ep<E>``."""
    names = []
    for name, model in _models():
        tps, eps = model['layouts']['tp'], model['layouts']['ep']
        names += [f'{name}-tp{t}' for t in tps] + [f'{name}-ep{e}' for e in eps]
        names += [f'{name}-tp{t}-ep{e}' for t in tps for e in eps]
    return names


def _layout(name: str) -> Tuple[Dict[str, Any], int, int]:
    """(model, tp, ep) of a preset name; ValueError naming the known presets otherwise."""
    if isinstance(name, str) and name in preset_names():
        match = _NAME.match(name)
        return dict(_models())[match.group('model')], int(match.group('tp') or 1), int(match.group('ep') or 1)
    models_text = ', '.join(f"{n} (tp {model['layouts']['tp']}, ep {model['layouts']['ep']})" for n, model in _models())
    raise ValueError(f'warmup: unknown preset {name!r}; presets are <model>-tp<T>, <model>-ep<E> or <model>-tp<T>-ep<E> '
                     f'for {models_text} (python -m deep_gemm warmup --preset list)')


def expand(name: str) -> List[Tuple[str, Dict[str, Any]]]:
    """(GEMM name, call) pairs of a preset: the calls in the ``warmup --calls`` format."""
    model, tp, ep = _layout(name)
    config = model['config']
    experts = config['n_routed_experts']
    # EP spreads whole experts (moe_tp 1); without EP every rank holds every expert, split tp ways.
    names = dict(config, tp=tp, ep=ep, moe_tp=1 if ep > 1 else tp,
                 experts_per_rank=_eval('n_routed_experts / ep', dict(config, ep=ep), f'{name}: experts_per_rank'))
    tokens = model['tokens']
    top_k = config['num_experts_per_tok']
    out = []
    for gemm in model['gemms']:
        where = f"{model['_file']}: {gemm['name']}"
        if gemm['kind'] not in _KINDS:
            raise ValueError(f"{where}: kind must be one of {_KINDS}; got {gemm['kind']!r}")
        n, k = _eval(gemm['n'], names, where + ' n'), _eval(gemm['k'], names, where + ' k')
        base = {'op': gemm['op'], 'n': n, 'k': k}
        if 'd_dtype' in gemm:
            base['d_dtype'] = gemm['d_dtype']
        if gemm['kind'] == 'dense':
            calls = [dict(base, m=m) for m in tokens['dense_m']]
        elif gemm['kind'] == 'contiguous':
            calls = [dict(base, m=t * top_k, num_groups=names['experts_per_rank']) for t in tokens['prefill_tokens_per_rank']]
        else:  # masked: room for every rank's tokens per expert, the mean as the hint
            calls = [dict(base, max_m=t * ep, num_groups=names['experts_per_rank'],
                          expected_m=math.ceil(t * ep * top_k / experts)) for t in tokens['decode_tokens_per_rank']]
        out += [(gemm['name'], call) for call in calls]
    return out


def preset_calls(name: str) -> List[Dict[str, Any]]:
    """The calls of a preset (raises ValueError for an unknown name)."""
    return [call for _, call in expand(name)]


def describe_presets() -> str:
    """The ``--preset list`` text: each model's names, file and layouts, then every preset name."""
    lines, seen = [], set()
    for _, model in _models():
        if id(model) in seen:
            continue
        seen.add(id(model))
        lay = model['layouts']
        lines.append(f"{' / '.join(model['names'])} ({model['_file']}): tp {lay['tp']}, ep {lay['ep']}, "
                     f"{len(model['gemms'])} GEMMs")
    lines.append('presets:')
    lines += [f'  {name}' for name in preset_names()]
    return '\n'.join(lines)
