"""deep_gemm/_C.pyi matches the extension: same functions, same parameter names (its GEMM part is generated
from the op table and must be current), and the public wrappers in deep_gemm/__init__.py take the same
parameters as the functions they call."""

import ast
import inspect
import os
import re

import deep_gemm
from deep_gemm import _gemm_surface
from deep_gemm import _C

STUB = os.path.join(os.path.dirname(deep_gemm.__file__), '_C.pyi')


def stub_functions():
    tree = ast.parse(open(STUB).read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = [a.arg for a in node.args.args]
    return out


def module_functions():
    out = {}
    for name in dir(_C):
        if name.startswith('__'):
            continue
        obj = getattr(_C, name)
        if callable(obj) and type(obj).__name__ == 'builtin_function_or_method':
            try:  # METH_FASTCALL entries carry a __text_signature__
                out[name] = list(inspect.signature(obj).parameters)
                continue
            except ValueError:
                pass
            # pybind11 puts the signature on the first docstring line: name(a: T, b: T = ...) -> R
            first = obj.__doc__.strip().splitlines()[0]
            params = re.match(rf'{re.escape(name)}\((.*)\) ->', first).group(1)
            names = [p.split(':')[0].strip() for p in re.split(r',\s*(?![^\[\(]*[\]\)])', params) if p.strip()]
            out[name] = names
    return out


def test_stub_lists_every_function_with_its_parameters():
    stub, module = stub_functions(), module_functions()
    assert sorted(stub) == sorted(module)
    for name in module:
        assert stub[name] == module[name], name


def test_public_wrappers_match_fast_path_signatures():
    module = module_functions()
    for name in deep_gemm.__all__:
        fn = getattr(deep_gemm, name)
        if name in module and inspect.isfunction(fn):
            extras = [p.split(':')[0].split('=')[0].strip() for p in deep_gemm._compat28.wrapper_extras(name)[0]]
            # (the SGLang fork's keywords of the masked GEMM come after 2.8's)
            after = [p for p in module[name] if p in _gemm_surface._AFTER_2_8_KEYWORDS]
            before = [p for p in module[name] if p not in after]
            assert list(inspect.signature(fn).parameters) == before + extras + after, name


def test_fast_path_defaults_match_stub():
    tree = ast.parse(open(STUB).read())
    stub_defaults = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            defaults = node.args.defaults
            stub_defaults[node.name] = {a.arg: ast.literal_eval(d) for a, d in zip(args[len(args) - len(defaults):], defaults)}
    for name in stub_defaults:
        try:
            sig = inspect.signature(getattr(_C, name))
        except ValueError:
            continue
        defaults = {p.name: p.default for p in sig.parameters.values() if p.default is not inspect.Parameter.empty}
        assert defaults == stub_defaults[name], name


def test_generated_gemm_stubs_are_current():
    # The GEMM part of _C.pyi is written from the op table by scripts/gen_stubs.py.
    from deep_gemm._gemm_surface import update_stub_text
    with open(STUB) as f:
        text = f.read()
    assert update_stub_text(text, _C) == text, 'deep_gemm/_C.pyi is stale: run PYTHONPATH=$PWD python3 scripts/gen_stubs.py'


def test_generated_wrappers_are_current():
    # deep_gemm/_wrappers.py (the public GEMM wrappers) is written from the op table by scripts/gen_stubs.py.
    from deep_gemm._gemm_docs import DOCS
    from deep_gemm._gemm_surface import wrappers_module_text
    with open(deep_gemm._wrappers.__file__) as f:
        text = f.read()
    assert wrappers_module_text(_C._gemm_op_table(), DOCS, _C._op_table()) == text, \
        'deep_gemm/_wrappers.py is stale: run PYTHONPATH=$PWD python3 scripts/gen_stubs.py'


def test_gen_stubs_check_runs_without_importing_the_package():
    # The script must work while _wrappers.py is stale (it loads deep_gemm's modules without __init__.py).
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(deep_gemm.__file__))
    result = subprocess.run([sys.executable, os.path.join(root, 'scripts', 'gen_stubs.py'), '--check'], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
