"""Call forms of sgl-deep-gemm 0.2.5 / SGLang, DeepGEMM 2.8.1's cuBLASLt extras and LMDeploy's old-DeepGEMM fallbacks
that need no kernel of their own (docs/compat_2_8.md, "sgl-deep-gemm 0.2.5").

- ``get_compile_mode()`` / ``set_compile_mode(mode)``: mode 1 makes the GEMM ops compile the kernels a call needs
  (the warm-up planner's kernels for its shapes, into the cache) without launching anything; 0 is normal.
- ``batched_syrk(a, d)`` / ``batched_symm(a, b, d)``: one ``cublaslt_gemm_*`` call per batch.
- The SM90 Mega MoE names: ``NotImplementedError`` (several GPUs with symmetric memory)."""

import torch

from . import _C, _warmup, _wrappers
from ._compat import _resolve_recipe

# ---- compile mode (SGLang's warm-up) ----------------------------------------------------------------------

_compile_mode = 0
_C_ENTRIES = {name: getattr(_wrappers, f'_c_{name}') for name, _ in _C._gemm_op_table()}
_PARAMS = {name: [p for p, _, _ in params] for name, params in _C._gemm_op_table()}


def get_compile_mode() -> int:
    """0: the GEMM ops run; 1: they only compile (see :func:`set_compile_mode`)."""
    return _compile_mode


def set_compile_mode(mode: int) -> None:
    """SGLang's warm-up switch. ``1``: every GEMM op of the op table (``fp8_gemm_nt``, the M- and K-grouped GEMMs,
    ``bf16_gemm_*``, ...) compiles the kernels its call needs into the cache (``DG_JIT_CACHE_DIR``) and returns
    without launching: no GPU work, ``d`` is not written. The kernels are those :func:`deep_gemm.warmup` plans for
    the call's sizes on this machine's GPU (the same config choice, source and cache key as a launch), so the
    later launch of that call finds them in the cache. ``0``: normal. In eager mode only (a torch.compile'd
    graph runs its ops). A ``bf16_gemm_*`` call with ``alpha`` (cuBLASLt, nothing to build) returns at once. Ops
    outside the GEMM table still run (``cublaslt_gemm_*``, ``einsum``, the MQA-logits and quantisation ops). A
    call's problem (a size the kernels cannot take) raises as the planner reports it; a failed compile raises
    ``RuntimeError`` with the compiler's message."""
    global _compile_mode
    if isinstance(mode, bool) or mode not in (0, 1):
        raise ValueError(f'set_compile_mode: mode must be 0 (run) or 1 (compile without launching); got {mode!r}')
    _compile_mode = mode
    for name, entry in _C_ENTRIES.items():
        setattr(_wrappers, f'_c_{name}', _compile_only_entry(name) if mode else entry)


def _tensor(x) -> torch.Tensor:
    return x[0] if isinstance(x, (tuple, list)) else x


def plan_fields(name: str, args: tuple) -> dict:
    """The warm-up call (deep_gemm/_warmup_calls.py) equivalent to a GEMM op's C-entry arguments ``args``."""
    bound = dict(zip(_PARAMS[name], args))
    a, b, d = _tensor(bound['a']), _tensor(bound['b']), bound['d']
    call = {'op': name, 'm': d.shape[-2], 'n': d.shape[-1], 'd_dtype': str(d.dtype).replace('torch.', '')}
    if 'ks_cpu' in bound:  # K-grouped: d [G, M, N]
        call['ks'] = [int(k) for k in bound['ks_cpu']]
    else:
        call['k'] = a.shape[-2] if name.endswith(('_tn', '_tt')) else a.shape[-1]
    if 'masked_m' in bound:  # d [G, max_m, N]
        call['num_groups'], call['expected_m'] = d.shape[0], int(bound['expected_m'])
    elif 'grouped_layout' in bound and 'ks_cpu' not in bound:  # M-grouped contiguous: b [G, N, K]
        call['num_groups'] = b.shape[0]
        if bound.get('expected_m_for_psum_layout') is not None:
            call['expected_m'] = int(bound['expected_m_for_psum_layout'])
    if 'head_splits' in bound:
        call['head_splits'], call['n'] = [int(x) for x in bound['head_splits']], b.shape[0]
    if bound.get('c') is not None:
        call['c_dtype'] = str(bound['c'].dtype).replace('torch.', '')
    if 'recipe' in bound:
        recipe = _resolve_recipe(name, bound['recipe'], bound.get('recipe_a'), bound.get('recipe_b'))
        if recipe is not None:
            call['recipe'] = recipe
    for key in ('compiled_dims', 'use_psum_layout', 'ensure_zero_padding', 'use_padded_sf_layout', 'max_block_n',
                'enable_overlap'):
        if key in bound:
            call[key] = bound[key]
    return call


def _compile_only_entry(name: str):
    def compile_only(*args) -> None:
        result = _warmup.warmup(calls=[plan_fields(name, args)], progress=False)
        if result.failed:
            raise RuntimeError(f'{name} (compile mode 1): ' + '\n'.join(result.details or result.failed))
    compile_only.__name__ = f'_c_{name}'
    return compile_only


# ---- DeepGEMM 2.8.1's batched SYRK / SYMM through cuBLASLt ---------------------------------------------------

def _batched(op: str, tensors: dict, ranks: str) -> int:
    for key, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f'{op}: {key} must be a torch.Tensor; got {type(t).__name__}')
        if t.dim() not in (2, 3):
            raise ValueError(f'{op}: {key} must be 2-D or 3-D (a batch of matrices) as in {ranks}; got shape {list(t.shape)}')
    dims = {t.dim() for t in tensors.values()}
    if len(dims) != 1:
        raise ValueError(f'{op}: ' + ', '.join(tensors) + ' must all be 2-D or all 3-D; got shapes ' +
                         ', '.join(str(list(t.shape)) for t in tensors.values()))
    if dims == {3} and len({t.shape[0] for t in tensors.values()}) != 1:
        raise ValueError(f'{op}: the batch sizes differ: ' + ', '.join(f'{k} {list(t.shape)}' for k, t in tensors.items()))
    return 0 if dims == {2} else next(iter(tensors.values())).shape[0]


def _each(batch: int, *tensors):
    return [tensors] if batch == 0 else [tuple(t[i] for t in tensors) for i in range(batch)]


def batched_syrk(a: torch.Tensor, d: torch.Tensor) -> None:
    """``d[i] = a[i] @ a[i].T`` for each matrix of the batch (DeepGEMM 2.8.1), written into ``d`` in place.

    ``a`` ``[B, M, K]`` (or ``[M, K]``) bfloat16, K-major or M-major; ``d`` ``[B, M, M]`` bfloat16 or float32 with
    unit stride along its last dim (both triangles are written). One :func:`cublaslt_gemm_nt` call per matrix, with
    its rules (16-byte aligned rows) and errors; float32 ``a`` is not taken (deep_gemm's cuBLASLt layer has BF16 and
    FP8 operands)."""
    op = 'batched_syrk'
    batch = _batched(op, {'a': a, 'd': d}, 'a [B, M, K], d [B, M, M]')
    if d.shape[-2:] != (a.shape[-2], a.shape[-2]):
        raise ValueError(f'{op}: d must be [.., M, M] with M = a.shape[-2] = {a.shape[-2]}; got a {list(a.shape)}, d {list(d.shape)}')
    _cublaslt(op, 'cublaslt_gemm_nt', [(x, x, y) for x, y in _each(batch, a, d)])


def batched_symm(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor) -> None:
    """``d[i] = a[i] @ b[i]`` with each ``a[i]`` symmetric (DeepGEMM 2.8.1), written into ``d`` in place.

    ``a`` ``[B, M, M]``, ``b`` ``[B, M, N]`` (or 2-D) bfloat16, either majorness; ``d`` ``[B, M, N]`` bfloat16 or
    float32, unit stride along N. ``a`` is read whole (not one triangle), so ``a @ b`` is what is computed. One
    :func:`cublaslt_gemm_nn` call per matrix, with its rules and errors."""
    op = 'batched_symm'
    batch = _batched(op, {'a': a, 'b': b, 'd': d}, 'a [B, M, M], b [B, M, N], d [B, M, N]')
    m = a.shape[-2]
    if a.shape[-1] != m or b.shape[-2] != m or d.shape[-2:] != (m, b.shape[-1]):
        raise ValueError(f'{op}: a must be [.., M, M], b [.., M, N] and d [.., M, N]; got a {list(a.shape)}, b {list(b.shape)}, '
                         f'd {list(d.shape)}')
    _cublaslt(op, 'cublaslt_gemm_nn', _each(batch, a, b, d))


def _cublaslt(op: str, gemm: str, calls) -> None:
    fn = getattr(_wrappers, gemm)
    for index, args in enumerate(calls):
        try:
            fn(*args)
        except (TypeError, ValueError, RuntimeError, NotImplementedError) as e:
            message = str(e)
            if index or not message.startswith(gemm + ':'):
                raise
            raise type(e)(f'{op}: {message[len(gemm) + 1:].strip()} (as {gemm} sees each matrix)') from None


# ---- SM90 Mega MoE (sgl-deep-gemm 0.2.5): out of scope ---------------------------------------------------------

_MEGA_MOE = ('SM90 Mega MoE is not implemented in deep_gemm: it dispatches tokens to experts on several GPUs through '
             'torch symmetric memory (a later issue); run the MoE through m_grouped_fp8_gemm_nt_contiguous / _masked')


def fp8_mega_moe(*args, **kwargs):
    """sgl-deep-gemm 0.2.5's SM90 Mega MoE: not implemented (``NotImplementedError``)."""
    raise NotImplementedError(f'fp8_mega_moe: {_MEGA_MOE}')


def mega_moe_pre_dispatch_sm90(*args, **kwargs):
    """sgl-deep-gemm 0.2.5's SM90 Mega MoE dispatch: not implemented (``NotImplementedError``)."""
    raise NotImplementedError(f'mega_moe_pre_dispatch_sm90: {_MEGA_MOE}')


class SM90SymmBuffer:
    """sgl-deep-gemm 0.2.5's symmetric buffer of the SM90 Mega MoE: not implemented (``NotImplementedError``)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f'SM90SymmBuffer: {_MEGA_MOE}')
