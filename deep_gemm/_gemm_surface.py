"""The Python side of the GEMM op table (csrc/python/gemm_table.hpp, read through ``_C._gemm_op_table()``):
each row is ``(name, [(parameter, kind, default)])``, the default a Python literal or None when required.

From it, :func:`wrappers_module_text` writes deep_gemm/_wrappers.py (the public wrappers, a checked-in module
so readers and IDEs find them) and :func:`update_stub_text` the GEMM part of deep_gemm/_C.pyi; both are run by
scripts/gen_stubs.py, and tests/python/test_stubs.py fails when either checked-in file is stale.

An eager call of a wrapper costs what a hand-written one does: one ``_tracing()`` check, then the C entry
``_C.<name>`` with the arguments as given. While Dynamo traces (torch.compile), it calls
``torch.ops.deep_gemm.<name>`` instead, with FP8 pairs unpacked, int sequences as lists and recipe / recipe_a /
recipe_b merged into one recipe, which is the schema the C++ side generates from the same row.
"""

import textwrap

import torch

from . import _compat28

# Annotations of the wrappers (names defined at the top of deep_gemm/_wrappers.py) and of the stubs (in _C.pyi).
_WRAPPER_TYPES = {
    'operand': 'FP8Operand', 'tensor': 'Tensor', 'out_tensor': 'Tensor', 'opt_tensor': 'Optional[Tensor]', 'int': 'int',
    'opt_int': 'Optional[int]', 'bool': 'bool', 'str': 'str', 'int_list': 'Sequence[int]', 'recipe': 'Recipe', 'half_recipe': 'Recipe',
    'opt_out_tensor': 'Optional[Tensor]',
}
_STUB_TYPES = {**_WRAPPER_TYPES, 'operand': '_Pair', 'recipe': 'Optional[Sequence[int]]', 'half_recipe': 'Optional[Sequence[int]]'}

# The marker lines around the generated part of _C.pyi.
STUB_BEGIN = '# ---- GEMMs (generated from the op table by scripts/gen_stubs.py; do not edit by hand) ----'
STUB_END = '# ---- end of the generated GEMMs ----'


def _param_list(params, types) -> list:
    return [f'{name}: {types[kind]}' + ('' if default is None else f' = {default}') for name, kind, default in params]


def _op_arguments(name: str, params) -> list:
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
    return out


def _returns(params) -> str:
    """The annotation of what an op returns: with enable_overlap (the SGLang fork's masked form) the tile's
    (block_m, threshold) when asked for, else None (the C entry's result, csrc/python/fast_entries.cpp)."""
    return 'Optional[Tuple[int, int]]' if any(p == 'enable_overlap' for p, _, _ in params) else 'None'


def _docstring(name: str, doc: str) -> str:
    # Written as is between triple quotes, so the function's __doc__ is exactly DOCS[name].
    if '"""' in doc or '\\' in doc or doc.endswith('"'):
        raise ValueError(f'{name}: its docstring in _gemm_docs.py must not contain triple quotes or backslashes nor end with a quote')
    return f'    """{doc}"""\n'


# The SGLang fork's parameters of the masked FP8 GEMM: in the wrapper after DeepGEMM 2.8's keywords too, so that
# every positional form of 2.6.1 and 2.8 binds as it did.
_AFTER_2_8_KEYWORDS = ('max_block_n', 'enable_overlap', 'signal')


def wrapper_source(name: str, params, doc: str) -> str:
    # DeepGEMM 2.8's alpha= / epilogue= (Python only; deep_gemm/_compat28.py), after every 2.6.1 parameter.
    extra_params, prelude = _compat28.wrapper_extras(name)
    returns = _returns(params)
    leading = [p for p in params if p[0] not in _AFTER_2_8_KEYWORDS]
    trailing = [p for p in params if p[0] in _AFTER_2_8_KEYWORDS]
    signature = _param_list(leading, _WRAPPER_TYPES) + extra_params + _param_list(trailing, _WRAPPER_TYPES)
    return (_wrap(f'def {name}', signature, f') -> {returns}:') + '\n' +
            _docstring(name, doc) +
            f'{prelude}'
            f'    if _tracing():\n' +
            _wrap(f'        return _ops.{name}', _op_arguments(name, params), ')') + '\n' +
            _wrap('    return _c_' + name if returns != 'None' else f'    _c_{name}', [p for p, _, _ in params], ')') + '\n')


# The annotation of each schema type a pass-through wrapper (an op_table.hpp row with module _wrappers) may take.
_PASSTHROUGH_TYPES = {'Tensor': 'Tensor', 'Optional[Tensor]': 'Optional[Tensor]'}


def passthrough_source(name: str, schema: str, doc: str) -> str:
    """The wrapper of a row of csrc/python/op_table.hpp whose module is ``_wrappers``: the schema's arguments,
    passed unchanged to the C entry (eager) or the torch.ops op (traced); the op returns nothing."""
    parsed = torch._C.parse_schema('deep_gemm::' + schema)
    if parsed.returns:
        raise ValueError(f'{name}: a generated pass-through wrapper returns nothing; the schema returns {len(parsed.returns)} values')
    params, names = [], []
    for arg in parsed.arguments:
        annotation = _PASSTHROUGH_TYPES.get(str(arg.type))
        if annotation is None:
            raise ValueError(f'{name}: argument {arg.name} of type {arg.type} is not one a pass-through wrapper takes')
        params.append(f'{arg.name}: {annotation}' + (f' = {arg.default_value!r}' if arg.has_default_value() else ''))
        names.append(arg.name)
    return (_wrap(f'def {name}', params, ') -> None:') + '\n' +
            _docstring(name, doc) +
            '    if _tracing():\n' +
            _wrap(f'        return _ops.{name}', names, ')') + '\n' +
            _wrap(f'    _c_{name}', names, ')') + '\n')


def passthrough_rows(table, op_table) -> list:
    """(name, schema) of the op table's rows outside the GEMM table whose wrapper module is ``_wrappers``."""
    gemm = {name for name, _ in table}
    return [(name, schema) for name, schema, _, _, module in op_table if module == '_wrappers' and name not in gemm]


WRAPPERS_HEADER = '''"""deep_gemm's generated wrappers: one per row of the GEMM op table (csrc/python/gemm_table.hpp), then one per row
of csrc/python/op_table.hpp whose module is _wrappers (the cuBLASLt GEMMs, passing their schema's arguments).

Generated by scripts/gen_stubs.py from _C._gemm_op_table(), deep_gemm/_gemm_docs.py (docstrings) and
deep_gemm/_compat28.py (DeepGEMM 2.8 keywords); do not edit by hand (tests/python/test_stubs.py fails when
this file is stale). deep_gemm/__init__.py re-exports every name of ``__all__``.

Each wrapper calls its C entry ``_c_<name>`` in eager mode (replace ``deep_gemm._wrappers._c_<name>`` to
reroute it, as benchmarks/bench_host_overhead.py does) and ``torch.ops.deep_gemm.<name>`` while Dynamo traces.
"""

from typing import Optional, Sequence, Tuple

import torch

from . import _C, _compat28
from ._compat import _resolve_recipe

Tensor = torch.Tensor
FP8Operand = Tuple[Tensor, Tensor]
Recipe = Optional[Sequence[int]]

# Dynamo replaces this call with True while tracing (torch.compile / torch.export); in eager mode it is a
# trivial function. The wrappers then call the torch.library op, which FX can record, instead of the C entry.
_tracing = torch.compiler.is_dynamo_compiling
_ops = torch.ops.deep_gemm
'''


def _name_list(names) -> list:
    return [textwrap.fill(', '.join(repr(n) for n in names) + ',', width=120, initial_indent='    ', subsequent_indent='    ',
                          break_on_hyphens=False)]


def public_op_names(op_table) -> list:
    """Every name deep_gemm exports for an op, in the order of the op table (``_C._op_table()``: rows of
    ``(name, schema or None, backend, public names, wrapper module)``, the GEMM rows first)."""
    return [public for _, _, _, names, _ in op_table for public in names]


def wrappers_module_text(table, docs: dict, op_table) -> str:
    """The text of deep_gemm/_wrappers.py: the header, the names of the wrappers it defines as ``__all__`` (table
    order), every public op name of the op table as ``PUBLIC_OPS``, each wrapped op's C entry as ``_c_<name>`` and
    its wrapper: the GEMM rows', then the pass-through ones."""
    passthrough = passthrough_rows(table, op_table)
    names = [name for name, _ in table] + [name for name, _ in passthrough]
    out = [WRAPPERS_HEADER, '__all__ = [', *_name_list(names), ']', '',
           '# The names deep_gemm exports for the ops of the op table (_C._op_table(): csrc/python/gemm_table.hpp, then',
           '# csrc/python/op_table.hpp); deep_gemm.__all__ starts with them.',
           'PUBLIC_OPS = [', *_name_list(public_op_names(op_table)), ']', '']
    out += [f'_c_{name} = _C.{name}' for name in names]
    for name, params in table:
        out += ['', '', wrapper_source(name, params, docs[name]).rstrip('\n')]
    for name, schema in passthrough:
        out += ['', '', passthrough_source(name, schema, docs[name]).rstrip('\n')]
    return '\n'.join(out) + '\n'


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
        out.append(_wrap(f'def {name}', _param_list(params, _STUB_TYPES), f') -> {_returns(params)}: ...'))
    if validate_only:
        out.append('# host-overhead microbenchmark: the fast path without the device work')
    for entry, op in sorted(validate_only.items()):
        out.append(_wrap(f'def {entry}', _param_list(rows[op], _STUB_TYPES), ') -> None: ...'))
    out.append(STUB_END)
    return '\n'.join(out) + '\n'


# The marker lines around the stubs of the fast entries generated from rows of csrc/python/op_table.hpp.
ENTRY_STUB_BEGIN = '# ---- op-table entries (generated from csrc/python/op_table.hpp by scripts/gen_stubs.py; do not edit by hand) ----'
ENTRY_STUB_END = '# ---- end of the generated op-table entries ----'

# The annotation of each schema type (as torch's parsed schema spells it) in an entry's stub.
_SCHEMA_STUB_TYPES = {
    'Tensor': 'Tensor', 'Optional[Tensor]': 'Optional[Tensor]', 'int': 'int', 'Optional[int]': 'Optional[int]', 'SymInt': 'int',
    'bool': 'bool', 'float': 'float', 'Optional[float]': 'Optional[float]', 'str': 'str', 'List[int]': 'Sequence[int]',
    'ScalarType': 'dtype',
}


def _stub_default(value) -> str:
    # int lists as tuples, as the entry's __text_signature__ renders them
    return repr(tuple(value)) if isinstance(value, list) else repr(value)


def entry_stub(entry: str, schema: str) -> str:
    """The _C.pyi line of fast entry `entry`, whose parameters and result are the schema's."""
    parsed = torch._C.parse_schema('deep_gemm::' + schema)
    params, keyword_only = [], False
    for arg in parsed.arguments:
        if arg.kwarg_only and not keyword_only:
            params.append('*')
            keyword_only = True
        annotation = _SCHEMA_STUB_TYPES[str(arg.real_type)]  # real_type: ScalarType and SymInt, not their int
        params.append(f'{arg.name}: {annotation}' + (f' = {_stub_default(arg.default_value)}' if arg.has_default_value() else ''))
    returns = [str(r.type) for r in parsed.returns]
    result = 'None' if not returns else returns[0] if len(returns) == 1 else f'Tuple[{", ".join(returns)}]'
    return _wrap(f'def {entry}', params, f') -> {result}: ...')


def entry_stub_block(op_entries, op_table) -> str:
    """The generated part of _C.pyi for the fast entries of op_table.hpp (``_C._op_entries()``), markers included."""
    schemas = {name: schema for name, schema, *_ in op_table}
    return '\n'.join([ENTRY_STUB_BEGIN] + [entry_stub(entry, schemas[op]) for entry, op in op_entries] + [ENTRY_STUB_END]) + '\n'


def _replace_block(text: str, begin_marker: str, end_marker: str, block: str) -> str:
    begin, end = text.index(begin_marker), text.index(end_marker)
    end = text.index('\n', end) + 1
    return text[:begin] + block + text[end:]


def update_stub_text(text: str, c_module) -> str:
    """`text` (the contents of _C.pyi) with its two generated parts (STUB_BEGIN to STUB_END, ENTRY_STUB_BEGIN to
    ENTRY_STUB_END) replaced by what the op tables of `c_module` give."""
    text = _replace_block(text, STUB_BEGIN, STUB_END, stub_block(c_module._gemm_op_table(), validate_only_entries(c_module)))
    return _replace_block(text, ENTRY_STUB_BEGIN, ENTRY_STUB_END, entry_stub_block(c_module._op_entries(), c_module._op_table()))


def validate_only_entries(c_module) -> dict:
    """The validation-only entries of _C (``_validate_<op>``), as entry name -> op name."""
    return {name: name[len('_validate_'):] for name in dir(c_module) if name.startswith('_validate_')}
