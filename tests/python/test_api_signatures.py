"""Call compatibility with DeepGEMM's SM90 Python surface (v2.6.1): every public name exists with the
same argument names, order and defaults, so positional and keyword calls written against DeepGEMM bind
the same way here. The expected signatures are data below (DeepGEMM's documented surface, restated).
Also: aliases are the same objects, and names without an SM90 implementation raise a clear
NotImplementedError."""

import ast
import inspect
import os

import pytest
import torch

import deep_gemm

FP8_DENSE = "a, b, d, c=None, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='{}', disable_ue8m0_cast=False"
M_CONTIG_FP8 = ("a, b, d, grouped_layout, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='nk', disable_ue8m0_cast=False, "
                "use_psum_layout=False, ensure_zero_padding=True")
K_GROUPED_FP8 = ("a, b, d, ks_cpu, grouped_layout, c=None, recipe=(1, 1, 128), compiled_dims='mn', use_psum_layout=False, "
                 "use_padded_sf_layout=False, epilogue=None")
MASKED_FP8 = "a, b, d, masked_m, expected_m, recipe=None, recipe_a=None, recipe_b=None, compiled_dims='nk', disable_ue8m0_cast=False"

# name -> DeepGEMM's parameter list. None: the parameter names are not fixed there (checked elsewhere).
EXPECTED = {
    # runtime knobs
    'set_num_sms': 'new_num_sms', 'get_num_sms': '',
    'set_tc_util': 'new_tc_util', 'get_tc_util': '',
    'set_pdl': 'new_enable_pdl', 'get_pdl': '',
    'set_ignore_compile_dims': 'new_value',
    'set_block_size_multiple_of': None,
    'set_mk_alignment_for_contiguous_layout': 'new_value',
    'get_mk_alignment_for_contiguous_layout': '',
    'get_theoretical_mk_alignment_for_contiguous_layout': 'expected_m=None, num_groups=None',
    'get_m_alignment_for_contiguous_layout': '', 'get_k_alignment_for_contiguous_layout': '',
    # GEMMs
    **{f'fp8_gemm_{lay}': FP8_DENSE.format(dims) for lay, dims in (('nt', 'nk'), ('nn', 'nk'), ('tn', 'mn'), ('tt', 'mn'))},
    'm_grouped_fp8_gemm_nt_contiguous': M_CONTIG_FP8 + ', expected_m_for_psum_layout=None',
    'm_grouped_fp8_gemm_nn_contiguous': M_CONTIG_FP8,
    'm_grouped_fp8_gemm_nt_masked': MASKED_FP8,
    'k_grouped_fp8_gemm_nt_contiguous': K_GROUPED_FP8,
    'k_grouped_fp8_gemm_tn_contiguous': K_GROUPED_FP8,
    'fp8_gemm_nt_skip_head_mid': "a, b, d, head_splits, recipe=None, compiled_dims='nk', disable_ue8m0_cast=False",
    **{f'bf16_gemm_{lay}': f"a, b, d, c=None, compiled_dims='{dims}'" for lay, dims in (('nt', 'nk'), ('nn', 'nk'), ('tn', 'mn'), ('tt', 'mn'))},
    'm_grouped_bf16_gemm_nt_contiguous': ("a, b, d, grouped_layout, compiled_dims='nk', use_psum_layout=False, ensure_zero_padding=True, "
                                          "expected_m_for_psum_layout=None"),
    'm_grouped_bf16_gemm_nn_contiguous': "a, b, d, grouped_layout, compiled_dims='nk', use_psum_layout=False, ensure_zero_padding=True",
    'm_grouped_bf16_gemm_nt_masked': "a, b, d, masked_m, expected_m, compiled_dims='nk'",
    'k_grouped_bf16_gemm_tn_contiguous': "a, b, d, ks_cpu, grouped_layout, c=None, compiled_dims='mn', use_psum_layout=False",
    **{f'cublaslt_gemm_{lay}': 'a, b, d, c=None' for lay in ('nt', 'nn', 'tn', 'tt')},
    'einsum': 'expr, a, b, d, c=None, use_cublaslt=False',
    'fp8_einsum': 'expr, a, b, d, c=None, recipe=(1, 128, 128)',
    'tf32_hc_prenorm_gemm': 'a, b, d, sqr_sum, num_splits=None',
    # attention indexer
    'fp8_mqa_logits': 'q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0',
    'fp8_fp4_mqa_logits': ('q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0, '
                           'logits_dtype=torch.float32'),
    'get_mqa_logits_metadata': 'cu_seq_len_k_start, cu_seq_len_k_end, num_kv_tokens, num_heads',  # v2.8.1
    'get_paged_mqa_logits_metadata': 'context_lens, block_kv, num_sms, indices=None',
    'fp8_paged_mqa_logits': ('q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, clean_logits=False, '
                             'indices=None'),
    'fp8_fp4_paged_mqa_logits': ('q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, '
                                 'clean_logits=False, logits_dtype=torch.float32, indices=None'),
    # layout and utilities
    'transform_sf_into_required_layout': ('sf, mn, k, recipe, num_groups=None, is_sfa=None, disable_ue8m0_cast=False, '
                                          'psum_layout=None'),
    'get_tma_aligned_size': 'x, element_size',
    'get_mn_major_tma_aligned_tensor': 'sf',
    'get_mn_major_tma_aligned_packed_ue8m0_tensor': 'sf, psum_layout=None',
    'get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor': ('sf, grouped_layout, ks_cpu, gran_k, k_alignment=None, '
                                                               'use_psum_layout=False, use_padded_sf_layout=False'),
    'per_token_cast_to_fp8': 'x, use_ue8m0, gran_k=128, use_packed_ue8m0=False',
    'per_block_cast_to_fp8': 'x, use_ue8m0, gran_k=128',
    'per_channel_cast_to_fp8': 'x, use_ue8m0, gran_k=128',
    'per_custom_dims_cast_to_fp8': 'x, dims, use_ue8m0',
    'ceil_to_ue8m0': 'x', 'pack_ue8m0_to_int': 'x', 'unpack_ue8m0_from_int': 'packed_sf',
    'ceil_div': 'x, y', 'align': 'x, y',
    'per_token_cast_to_fp4': 'x, use_ue8m0, gran_k=128, use_packed_ue8m0=False',
    'transpose_packed_fp4': 'a',
    'cast_back_from_fp4': 'packed, sf, gran_k=128, use_packed_ue8m0=False',
}

DIST = {'init_dist': 'local_rank, num_local_ranks', 'uneven_all_gather': 'tensor, dim=0, group=None'}

TESTING = {
    'bench': 'fn, num_warmups=5, num_tests=10, high_precision=False',
    'bench_kineto': ('fn, kernel_names, num_tests=30, suppress_kineto_output=False, trace_path=None, flush_l2=True, '
                     'with_multiple_kernels=False, barrier=None'),
    'calc_diff': 'x, y', 'count_bytes': '*tensors', 'assert_bitwise_equal': "x, y, label=''",
    'get_arch_major': '', 'test_filter': 'condition', 'ignore_env': 'name, condition',
}

# deep_gemm.legacy (Triton): module -> function -> DeepGEMM's parameter list. (Our functions add a
# keyword-only `_config` for tests, which the check allows as an optional extra.)
LEGACY = {
    'm_grouped_gemm': {f'm_grouped_bf16_gemm_{lay}_contiguous_tl': 'a, b, d, m_indices' for lay in ('nt', 'nn')},
    'a_fused_m_grouped_gemm': {f'a_fused_m_grouped_bf16_gemm_{lay}_contiguous_tl': 'a, b, d, mappings'
                               for lay in ('nt', 'nn')},
    'a_fused_k_grouped_gemm': {'a_fused_k_grouped_bf16_gemm_tn_contiguous_tl': 'a, b, d, handle, acc'},
    'b_fused_k_grouped_gemm': {'b_fused_k_grouped_bf16_gemm_tn_contiguous_tl': 'a, b, d, handle, acc'},
}

ALIASES = {
    'fp8_fp4_gemm_nt': 'fp8_gemm_nt', 'fp8_fp4_gemm_nn': 'fp8_gemm_nn', 'fp8_fp4_gemm_tn': 'fp8_gemm_tn',
    'fp8_fp4_gemm_tt': 'fp8_gemm_tt',
    'm_grouped_fp8_fp4_gemm_nt_contiguous': 'm_grouped_fp8_gemm_nt_contiguous',
    'm_grouped_fp8_fp4_gemm_nn_contiguous': 'm_grouped_fp8_gemm_nn_contiguous',
    'm_grouped_fp8_fp4_gemm_nt_masked': 'm_grouped_fp8_gemm_nt_masked',
    'fp8_m_grouped_gemm_nt_masked': 'm_grouped_fp8_gemm_nt_masked',
    'bf16_m_grouped_gemm_nt_masked': 'm_grouped_bf16_gemm_nt_masked',
    'get_m_alignment_for_contiguous_layout': 'get_mk_alignment_for_contiguous_layout',
    'get_k_alignment_for_contiguous_layout': 'get_mk_alignment_for_contiguous_layout',
}

# Where deep_gemm accepts more than DeepGEMM (a superset: every DeepGEMM call still binds the same way):
# parameters that have a default here but are required there.
EXTRA_DEFAULTS = {('per_token_cast_to_fp8', 'use_ue8m0'), ('per_block_cast_to_fp8', 'use_ue8m0'),
                  ('per_channel_cast_to_fp8', 'use_ue8m0'), ('per_custom_dims_cast_to_fp8', 'use_ue8m0')}

SM100_ONLY = {'k_grouped_fp8_gemm_tn_contiguous'}

_MISSING = object()


def parse(params: str):
    """'a, b=1, *c' -> [('a', _MISSING), ('b', 1), ('*c', _MISSING)] (torch.float32 allowed as a default)."""
    fn = ast.parse(f'def f({params}): pass').body[0].args
    out = [(a.arg, _MISSING) for a in fn.args]
    for i, default in enumerate(fn.defaults):
        name = out[len(out) - len(fn.defaults) + i][0]
        text = ast.unparse(default)
        out[len(out) - len(fn.defaults) + i] = (name, torch.float32 if text == 'torch.float32' else ast.literal_eval(default))
    if fn.vararg:
        out.append(('*' + fn.vararg.arg, _MISSING))
    return out


def stub_signatures():
    tree = ast.parse(open(os.path.join(os.path.dirname(deep_gemm.__file__), '_C.pyi')).read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            params = [(a.arg, _MISSING) for a in args.args]
            for i, default in enumerate(args.defaults):
                j = len(params) - len(args.defaults) + i
                params[j] = (params[j][0], ast.literal_eval(default))
            out[node.name] = params
    return out


STUB = stub_signatures()


def actual(fn, name):
    """(name, default) pairs of fn: inspect.signature, or the _C.pyi stub for pybind11 functions."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        name = getattr(fn, '__name__', name)  # an alias of a _C function
        assert name in STUB, f'{name}: no signature and no stub'
        return STUB[name]
    out = []
    for p in sig.parameters.values():
        key = '*' + p.name if p.kind is p.VAR_POSITIONAL else p.name
        out.append((key, _MISSING if p.default is p.empty else p.default))
    return out


def normalise(value):
    return list(value) if isinstance(value, tuple) else value


def check(name, fn, expected):
    want, got = parse(expected), actual(fn, name)
    assert [n for n, _ in got[:len(want)]] == [n for n, _ in want], f'{name}: parameters {got} vs DeepGEMM {want}'
    for (pname, want_default), (_, got_default) in zip(want, got):
        if want_default is _MISSING:
            assert got_default is _MISSING or (name, pname) in EXTRA_DEFAULTS, f'{name}: {pname} must be required'
        else:
            assert normalise(got_default) == normalise(want_default), f'{name}: {pname} defaults to {got_default!r}, not {want_default!r}'
    for pname, default in got[len(want):]:  # our extra trailing parameters must be optional
        assert default is not _MISSING, f'{name}: extra parameter {pname} must have a default'


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_deep_gemm_signature(name):
    fn = getattr(deep_gemm, name)
    if EXPECTED[name] is not None:
        check(name, fn, EXPECTED[name])
    if name in STUB and not inspect.isfunction(fn):
        check(name, fn, EXPECTED[name] or ', '.join(n for n, _ in STUB[name]))


@pytest.mark.parametrize('module,name', sorted((m, n) for m, fns in LEGACY.items() for n in fns))
def test_legacy_signature(module, name):
    import importlib
    mod = importlib.import_module(f'deep_gemm.legacy.{module}')
    check(name, getattr(mod, name), LEGACY[module][name])
    assert getattr(deep_gemm.legacy, name) is getattr(mod, name)   # also re-exported by the package


@pytest.mark.parametrize('name', sorted(TESTING))
def test_testing_signature(name):
    check(name, getattr(deep_gemm.testing, name), TESTING[name])


@pytest.mark.parametrize('name', sorted(DIST))
def test_dist_signature(name):
    check(name, getattr(deep_gemm.utils.dist, name), DIST[name])


def test_stub_defaults_match_deep_gemm():
    # The fast-path stubs state the same defaults as DeepGEMM (so _C and the wrappers agree).
    for name, params in STUB.items():
        if name in EXPECTED and EXPECTED[name]:
            want = dict(parse(EXPECTED[name]))
            for pname, default in params:
                if pname in want and want[pname] is not _MISSING:
                    assert normalise(default) == normalise(want[pname]), (name, pname)


@pytest.mark.parametrize('alias,target', sorted(ALIASES.items()))
def test_aliases_are_the_same_objects(alias, target):
    assert getattr(deep_gemm, alias) is getattr(deep_gemm, target)


def test_submodules_and_reexports():
    from deep_gemm.utils import dist, layout, math  # noqa: F401
    from deep_gemm.testing import bench_kineto, calc_diff, count_bytes, get_arch_major  # noqa: F401
    import deep_gemm.testing.numeric  # noqa: F401
    import deep_gemm.testing.utils  # noqa: F401
    # DeepGEMM's utils.math functions (it has no __all__; utils and the package re-export them all).
    for name in ('ceil_div', 'align', 'ceil_to_ue8m0', 'pack_ue8m0_to_int', 'unpack_ue8m0_from_int',
                 'per_token_cast_to_fp8', 'per_channel_cast_to_fp8', 'per_block_cast_to_fp8',
                 'per_custom_dims_cast_to_fp8', 'per_token_cast_to_fp4', 'transpose_packed_fp4', 'cast_back_from_fp4'):
        assert getattr(deep_gemm.utils, name) is getattr(deep_gemm.utils.math, name) is getattr(deep_gemm, name), name
    for name in ('get_tma_aligned_size', 'get_mn_major_tma_aligned_tensor', 'get_mn_major_tma_aligned_packed_ue8m0_tensor',
                 'get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor', 'get_mk_alignment_for_contiguous_layout',
                 'get_theoretical_mk_alignment_for_contiguous_layout', 'set_mk_alignment_for_contiguous_layout',
                 'get_m_alignment_for_contiguous_layout', 'get_k_alignment_for_contiguous_layout'):
        assert getattr(deep_gemm.utils.layout, name) is getattr(deep_gemm.utils, name) is getattr(deep_gemm, name), name
    for name in deep_gemm.utils.__all__:
        assert getattr(deep_gemm, name) is getattr(deep_gemm.utils, name), name
    for name in deep_gemm.__all__:
        assert hasattr(deep_gemm, name), name


def _dummy_args(fn):
    return [None] * sum(1 for p in inspect.signature(fn).parameters.values() if p.default is p.empty)


@pytest.mark.parametrize('name', sorted(SM100_ONLY))
def test_sm100_only_names_say_so(name):
    fn = getattr(deep_gemm, name)
    with pytest.raises(NotImplementedError, match=rf'^{name}: needs SM100'):
        fn(*_dummy_args(fn))


# DeepGEMM 2.8.1's Python forms (vLLM 0.34 calls these): the 2.6.1 parameters first, so positional calls of
# either version bind the same way, then the 2.8 keywords (docs/compat_2_8.md).
V281 = {
    **{f'fp8_gemm_{lay}': FP8_DENSE.format(dims) + ', alpha=None, epilogue=None'
       for lay, dims in (('nt', 'nk'), ('nn', 'nk'), ('tn', 'mn'), ('tt', 'mn'))},
    **{f'bf16_gemm_{lay}': f"a, b, d, c=None, compiled_dims='{dims}', alpha=None, epilogue=None"
       for lay, dims in (('nt', 'nk'), ('nn', 'nk'), ('tn', 'mn'), ('tt', 'mn'))},
    'm_grouped_fp8_gemm_nt_contiguous': M_CONTIG_FP8 + ', expected_m_for_psum_layout=None, epilogue=None',
    'm_grouped_fp8_gemm_nt_masked': MASKED_FP8 + ', epilogue=None',
    'use_deterministic_algorithms': 'enabled',
    'shutdown': '',
}


# The SGLang fork's keywords, after the 2.8.1 ones (its overlapped masked GEMM; docs/compat_2_8.md).
SGL_FORK_TAIL = {'m_grouped_fp8_gemm_nt_masked': ', max_block_n=256, enable_overlap=False, signal=None'}


@pytest.mark.parametrize('name', sorted(V281))
def test_deep_gemm_281_signature(name):
    fn = getattr(deep_gemm, name)
    check(name, fn, V281[name] + SGL_FORK_TAIL.get(name, ''))
    assert [n for n, _ in actual(fn, name)] == [n for n, _ in parse(V281[name] + SGL_FORK_TAIL.get(name, ''))], \
        f'{name}: nothing after the 2.8.1 parameters (and the SGLang fork\'s)'
