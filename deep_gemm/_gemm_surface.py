"""The Python side of the GEMM op table (csrc/python/gemm_table.hpp, read through ``_C._gemm_op_table()``):
each row is ``(name, [(parameter, kind, default)])``, the default a Python literal or None when required.

From it, :func:`define_wrappers` writes the public wrappers into deep_gemm's namespace and
:func:`update_stub_text` the GEMM part of deep_gemm/_C.pyi (scripts/gen_stubs.py; tests/python/test_stubs.py
fails when the checked-in file is stale).

A wrapper is generated as source text and compiled once at import, so an eager call costs what a
hand-written one does: one ``_tracing()`` check, then the C entry ``_C.<name>`` with the arguments as
given. While Dynamo traces (torch.compile), it calls ``torch.ops.deep_gemm.<name>`` instead, with FP8
pairs unpacked, int sequences as lists and recipe / recipe_a / recipe_b merged into one recipe, which is
the schema the C++ side generates from the same row.
"""

import linecache

from . import _compat28

# Annotations of the wrappers (names defined in deep_gemm/__init__.py) and of the stubs (in _C.pyi).
_WRAPPER_TYPES = {
    'operand': 'FP8Operand', 'tensor': 'Tensor', 'out_tensor': 'Tensor', 'opt_tensor': 'Optional[Tensor]', 'int': 'int',
    'opt_int': 'Optional[int]', 'bool': 'bool', 'str': 'str', 'int_list': 'Sequence[int]', 'recipe': 'Recipe', 'half_recipe': 'Recipe',
}
_STUB_TYPES = {**_WRAPPER_TYPES, 'operand': '_Pair', 'recipe': 'Optional[Sequence[int]]', 'half_recipe': 'Optional[Sequence[int]]'}

# The marker lines around the generated part of _C.pyi.
STUB_BEGIN = '# ---- GEMMs (generated from the op table by scripts/gen_stubs.py; do not edit by hand) ----'
STUB_END = '# ---- end of the generated GEMMs ----'


def _param_list(params, types) -> list:
    return [f'{name}: {types[kind]}' + ('' if default is None else f' = {default}') for name, kind, default in params]


def _op_arguments(name: str, params) -> str:
    """The torch.ops call's arguments, as wrapper source."""
    halves = [p for p, kind, _ in params if kind == 'half_recipe'] or ['None', 'None']
    out = []
    for param, kind, _ in params:
        if kind == 'operand':
            out += [f'{param}[0]', f'{param}[1]']
        elif kind == 'recipe':
            out.append(f'_resolve_recipe({name!r}, {param}, {halves[0]}, {halves[1]})')
        elif kind == 'int_list':
            out.append(f'list({param})')
        elif kind != 'half_recipe':
            out.append(param)
    return ', '.join(out)


def wrapper_source(name: str, params) -> str:
    names = ', '.join(p for p, _, _ in params)
    # DeepGEMM 2.8's alpha= / epilogue= (Python only; deep_gemm/_compat28.py), after every 2.6.1 parameter.
    extra_params, prelude = _compat28.wrapper_extras(name)
    return (f'def {name}({", ".join(_param_list(params, _WRAPPER_TYPES) + extra_params)}) -> None:\n'
            f'{prelude}'
            f'    if _tracing():\n'
            f'        return _ops.{name}({_op_arguments(name, params)})\n'
            f'    _c_{name}({names})\n')


def define_wrappers(namespace: dict, table, docs: dict) -> None:
    """Defines ``<name>`` (the wrapper) and ``_c_<name>`` (its C entry) in `namespace` (deep_gemm's globals,
    which the wrappers then read, so replacing ``deep_gemm._c_<name>`` reroutes them, as the host-overhead
    benchmark does) for every row of `table`."""
    c_module = namespace['_C']
    for name, params in table:
        source = wrapper_source(name, params)
        filename = f'<deep_gemm generated wrapper {name}>'
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for tracebacks
        namespace[f'_c_{name}'] = getattr(c_module, name)
        exec(compile(source, filename, 'exec'), namespace)
        namespace[name].__doc__ = docs[name]


def _wrap(head: str, params: list, tail: str, width: int = 130) -> str:
    """``head(p1, p2, ...)tail`` broken between parameters into lines of at most `width` characters,
    continuation lines aligned after the parenthesis."""
    pieces = [p + ',' for p in params[:-1]] + [params[-1] + tail]
    lines, line = [], head + '('
    for piece in pieces:
        if not line.endswith('(') and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = ' ' * (len(head) + 1) + piece
        else:
            line += ('' if line.endswith('(') else ' ') + piece
    return '\n'.join(lines + [line])


def stub_block(table, validate_only) -> str:
    """The GEMM part of _C.pyi, markers included: one stub per row, then the validation-only entries
    `validate_only` (entry name -> the op whose parameters it takes)."""
    rows = dict(table)
    out = [STUB_BEGIN]
    for name, params in table:
        out.append(_wrap(f'def {name}', _param_list(params, _STUB_TYPES), ') -> None: ...'))
    if validate_only:
        out.append('# host-overhead microbenchmark: the fast path without the device work')
    for entry, op in sorted(validate_only.items()):
        out.append(_wrap(f'def {entry}', _param_list(rows[op], _STUB_TYPES), ') -> None: ...'))
    out.append(STUB_END)
    return '\n'.join(out) + '\n'


def update_stub_text(text: str, c_module) -> str:
    """`text` (the contents of _C.pyi) with the lines from STUB_BEGIN to STUB_END replaced by what the op
    table of `c_module` gives."""
    begin, end = text.index(STUB_BEGIN), text.index(STUB_END)
    end = text.index('\n', end) + 1
    return text[:begin] + stub_block(c_module._gemm_op_table(), validate_only_entries(c_module)) + text[end:]


def validate_only_entries(c_module) -> dict:
    """The validation-only entries of _C (``_validate_<op>``), as entry name -> op name."""
    return {name: name[len('_validate_'):] for name in dir(c_module) if name.startswith('_validate_')}
