"""The GEMM op table (csrc/python/gemm_table.hpp, _C._gemm_op_table()) is what every signature of an op
follows: the public wrapper, the _C fast entry and the torch.library schema, and the wrappers' torch.ops
route under tracing passes the schema's arguments."""

import ast
import inspect

import pytest
import torch

import deep_gemm
from deep_gemm import _gemm_surface
from deep_gemm import _C
from deep_gemm._gemm_docs import DOCS
from op_cases import CASES, CASES_BY_NAME
from pyrun import run_python

TABLE = dict(_C._gemm_op_table())
_REQUIRED = object()

# The schema type of each kind (an FP8 operand is two tensors; half recipes are not in the schema).
SCHEMA_TYPES = {'operand': 'Tensor', 'tensor': 'Tensor', 'out_tensor': 'Tensor', 'opt_tensor': 'Optional[Tensor]', 'int': 'int',
                'opt_int': 'Optional[int]', 'bool': 'bool', 'str': 'str', 'int_list': 'List[int]', 'recipe': 'Optional[List[int]]',
                'opt_out_tensor': 'Optional[Tensor]'}


def table_params(name):
    return [(p, _REQUIRED if default is None else ast.literal_eval(default)) for p, _, default in TABLE[name]]


def signature_params(fn):
    return [(p.name, _REQUIRED if p.default is p.empty else p.default) for p in inspect.signature(fn).parameters.values()]


def test_table_has_every_gemm_op_once_with_a_docstring():
    # cublaslt_gemm_* are not GemmOps (csrc/apis/cublaslt.cpp): rows of csrc/python/op_table.hpp, not of this table
    assert sorted(TABLE) == sorted(c.name for c in CASES if not c.name.startswith('cublaslt_'))
    assert len(TABLE) == len(_C._gemm_op_table())
    # the generated wrappers: the GEMM rows, then the op_table.hpp rows whose module is _wrappers (cuBLASLt)
    assert sorted(DOCS) == sorted(deep_gemm._wrappers.__all__)
    assert sorted([*TABLE, 'cublaslt_gemm_nt', 'cublaslt_gemm_nn', 'cublaslt_gemm_tn', 'cublaslt_gemm_tt']) == sorted(DOCS)
    for name in DOCS:
        assert getattr(deep_gemm, name).__doc__ == DOCS[name]


def test_public_names_come_from_the_table():
    # deep_gemm/_wrappers.py lists the rows in table order; deep_gemm.__all__ takes them from there.
    assert deep_gemm._wrappers.__all__[:len(TABLE)] == [name for name, _ in _C._gemm_op_table()]
    assert set(TABLE) <= set(deep_gemm.__all__)
    assert len(deep_gemm.__all__) == len(set(deep_gemm.__all__))


@pytest.mark.parametrize('name', sorted(TABLE))
def test_wrapper_and_fast_entry_follow_the_table(name):
    # The wrapper adds DeepGEMM 2.8's Python-only keywords (alpha= / epilogue=, all defaulting to None) after every
    # DeepGEMM parameter, and before the SGLang fork's keywords of the masked GEMM.
    extras = [(p.split(':')[0].split('=')[0].strip(), None) for p in deep_gemm._compat28.wrapper_extras(name)[0]]
    after = [p for p in table_params(name) if p[0] in _gemm_surface._AFTER_2_8_KEYWORDS]
    before = [p for p in table_params(name) if p not in after]
    assert signature_params(getattr(deep_gemm, name)) == before + extras + after
    assert signature_params(getattr(_C, name)) == table_params(name)
    assert getattr(deep_gemm._wrappers, f'_c_{name}') is getattr(_C, name)


@pytest.mark.parametrize('name', sorted(TABLE))
def test_schema_follows_the_table(name):
    want = []
    for param, kind, default in TABLE[name]:
        if kind == 'operand':
            want += [(param, 'Tensor', False, None), ('sf' + param, 'Tensor', False, None)]
        elif kind != 'half_recipe':
            value = None if default is None else ast.literal_eval(default)
            want.append((param, SCHEMA_TYPES[kind], default is not None, list(value) if isinstance(value, tuple) else value))
    schema = getattr(torch.ops.deep_gemm, name).default._schema
    got = [(a.name, str(a.type), a.has_default_value(), a.default_value) for a in schema.arguments]
    assert got == want
    written = ['d'] + [param for param, kind, _ in TABLE[name] if kind == 'opt_out_tensor']
    assert [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write] == written
    assert len(schema.returns) == 0


class _RecordingOps:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, args))


@pytest.mark.parametrize('name', sorted(DOCS))
def test_traced_route_passes_the_schema_arguments(name, monkeypatch):
    """With _tracing() true, the wrapper calls torch.ops.deep_gemm.<name> with arguments the op accepts
    (run here on meta tensors: validation only)."""
    recorder = _RecordingOps()
    monkeypatch.setattr(deep_gemm._wrappers, '_tracing', lambda: True)
    monkeypatch.setattr(deep_gemm._wrappers, '_ops', recorder)
    args, kwargs, _ = CASES_BY_NAME[name].build('meta')
    getattr(deep_gemm, name)(*args, **kwargs)
    assert [call_name for call_name, _ in recorder.calls] == [name]
    getattr(torch.ops.deep_gemm, name)(*recorder.calls[0][1])


def test_traced_route_merges_recipe_a_and_recipe_b(monkeypatch):
    recorder = _RecordingOps()
    monkeypatch.setattr(deep_gemm._wrappers, '_tracing', lambda: True)
    monkeypatch.setattr(deep_gemm._wrappers, '_ops', recorder)
    args, _, _ = CASES_BY_NAME['fp8_gemm_nt'].build('meta')
    deep_gemm.fp8_gemm_nt(*args, recipe_a=(1, 128), recipe_b=(128, 128))
    (_, op_args), = recorder.calls
    assert op_args[6] == [1, 128, 128]  # after a, sfa, b, sfb, d, c


# ---- the whole op table: the GEMM rows, then csrc/python/op_table.hpp ---------------------------------

OPS = _C._op_table()
BACKENDS = {'jit', 'cublaslt', 'torch', 'host', 'none'}


def test_op_table_starts_with_the_gemm_rows():
    assert [row[0] for row in OPS[:len(TABLE)]] == [name for name, _ in _C._gemm_op_table()]
    assert len({row[0] for row in OPS}) == len(OPS)


def test_every_torch_op_is_a_row_with_its_schema_and_three_kernels():
    # In a fresh process: deep_gemm.legacy, once imported, adds its Triton ops to the namespace from Python.
    result = run_python("""
        import torch, deep_gemm
        print(' '.join(sorted(n.split('::', 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith('deep_gemm::'))))
    """)
    assert result.returncode == 0, result.stderr
    registered = result.stdout.split()
    rows = {name: schema for name, schema, *_ in OPS if schema is not None}
    assert sorted(rows) == registered
    for name, schema in rows.items():
        assert str(getattr(torch.ops.deep_gemm, name).default._schema) == str(torch._C.parse_schema('deep_gemm::' + schema))
        for key in ('CUDA', 'CPU', 'Meta'):
            assert torch._C._dispatch_has_kernel_for_dispatch_key('deep_gemm::' + name, key), (name, key)


@pytest.mark.parametrize('row', OPS, ids=[row[0] for row in OPS])
def test_every_public_name_is_exported_from_the_rows_module(row):
    name, schema, backend, public, module = row
    assert backend in BACKENDS
    assert schema is not None or public, f'{name}: a row without a torch op must be public'
    for public_name in public:
        assert public_name in deep_gemm.__all__
        assert getattr(deep_gemm, public_name).__module__ == 'deep_gemm' + ('.' + module if module else ''), public_name


def test_all_starts_with_the_tables_public_names():
    names = [public for row in OPS for public in row[3]]
    assert deep_gemm._wrappers.PUBLIC_OPS == names
    assert deep_gemm.__all__[1:1 + len(names)] == names


# ---- the fast entries bound from rows of csrc/python/op_table.hpp (csrc/python/table_op.hpp) ----------

ENTRIES = _C._op_entries()
SCHEMAS = {row[0]: row[1] for row in OPS}


@pytest.mark.parametrize('entry,op', ENTRIES, ids=[e for e, _ in ENTRIES])
def test_generated_entry_follows_its_row(entry, op):
    import inspect
    schema = torch._C.parse_schema('deep_gemm::' + SCHEMAS[op])
    params = list(inspect.signature(getattr(_C, entry)).parameters.values())
    assert [p.name for p in params] == [a.name for a in schema.arguments]
    for p, a in zip(params, schema.arguments):
        if a.has_default_value():
            want = tuple(a.default_value) if isinstance(a.default_value, list) else a.default_value
            assert p.default == want, (entry, p.name)
        else:
            assert p.default is inspect.Parameter.empty, (entry, p.name)


def test_generated_entry_binds_positional_keyword_and_defaults():
    f = _C.get_paged_mqa_logits_metadata
    lens = torch.tensor([70, 3], dtype=torch.int32)
    want = f(lens, 64, 4, None)
    assert torch.equal(f(lens, 64, 4), want)  # indices defaults to None
    assert torch.equal(f(num_sms=4, context_lens=lens, block_kv=64), want)
    assert torch.equal(f(lens, 64, num_sms=4, indices=None), want)
    with pytest.raises(TypeError, match=r'takes at most 4 arguments \(5 given\)'):
        f(lens, 64, 4, None, None)
    with pytest.raises(TypeError, match="missing required argument 'num_sms'"):
        f(lens, 64)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'blocks'"):
        f(lens, 64, 4, blocks=1)
    with pytest.raises(TypeError, match="got multiple values for argument 'block_kv'"):
        f(lens, 64, 4, block_kv=64)
    with pytest.raises(TypeError, match='^get_paged_mqa_logits_metadata: block_kv must be an int; got str'):
        f(lens, '64', 4)
    with pytest.raises(TypeError, match='^get_paged_mqa_logits_metadata: indices must be a torch.Tensor; got int'):
        f(lens, 64, 4, 3)
    with pytest.raises(TypeError, match='^fp8_mqa_logits: logits_dtype must be a torch.dtype; got str'):
        _C._fp8_mqa_logits_unpacked(*[lens] * 7, True, 0, 'float32')


def test_generated_entry_routes_meta_tensors_through_the_dispatcher():
    lens = torch.tensor([70, 3], dtype=torch.int32, device='meta')
    out = _C.get_paged_mqa_logits_metadata(lens, 64, 4)
    assert out.shape == (5, 2) and out.device.type == 'meta'
