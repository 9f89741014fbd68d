"""Warm-up call lists: each entry names an op and its shapes; planning turns it into the kernels that call
compiles (the same config choice, cache key and source as the op), without tensors and without a GPU.

A call is a dict, e.g. ``{"op": "fp8_gemm_nt", "m": 4096, "n": 7168, "k": 2048}`` or
``{"op": "m_grouped_fp8_gemm_nt_masked", "num_groups": 32, "max_m": 256, "n": 4096, "k": 7168,
"expected_m": 192}``, or the same as text: ``'fp8_gemm_nt:m=4096,n=7168,k=2048'`` (list values separated
by ``;``: ``ks=512;1024``). Fields (all but ``op`` / ``m`` / ``n`` / ``k`` optional):

- ``op``: a GEMM op name (``deep_gemm.fp8_gemm_nt`` & co.) or a helper kernel ``compile_only`` knows
  (``layout_transpose_sf``; no other fields).
- ``m``, ``n``, ``k`` as the op sees them: M-grouped contiguous ``m`` = the rows of A (all groups);
  masked ``m`` (or ``max_m``) = rows per group; K-grouped ``k`` = the sum of the groups' K (or give ``ks``).
- ``num_groups``; ``expected_m`` (masked, and the contiguous ops' ``expected_m_for_psum_layout``); ``ks``
  (K-grouped: each group's K; one kernel for all groups).
- ``recipe`` (FP8: ``[1, 128, 128]`` the default, ``[1, 1, 128]`` for the FP32-output kernel, ``[1, 32, 32]``
  for block-32 scales on the dense ops);
  ``d_dtype`` (``"bfloat16"`` / ``"float32"``); ``c_dtype`` (the C operand's, if one is given).
- ``use_psum_layout``, ``ensure_zero_padding`` (M-grouped contiguous); ``use_padded_sf_layout`` (K-grouped FP8,
  with ``ks``: the scale layout, which with ``mk_alignment`` picks the kernel); ``compiled_dims``;
  ``mk_alignment`` and ``block_size_multiple_of`` (``[m, n]``) for jobs that change those knobs;
  ``head_splits`` (``[left, mid, right]``, fp8_gemm_nt_skip_head_mid; ``n`` = the computed columns);
  ``max_block_n`` and ``enable_overlap`` (m_grouped_fp8_gemm_nt_masked: SGLang's tile cap and tile-signal kernel).

FP8 ops that convert row-major scales use the ``layout_transpose_sf`` kernel: it is planned with them.
"""
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

from . import _C
from ._warmup import KernelRecord

Call = Dict[str, Any]

_DTYPES = ('bfloat16', 'float32')
_FIELDS = {'op', 'm', 'max_m', 'n', 'k', 'num_groups', 'expected_m', 'ks', 'recipe', 'd_dtype', 'c_dtype',
           'use_psum_layout', 'ensure_zero_padding', 'use_padded_sf_layout', 'compiled_dims', 'mk_alignment',
           'block_size_multiple_of', 'head_splits', 'max_block_n', 'enable_overlap'}
_SCALE_LAYOUT_KERNEL = 'layout_transpose_sf'
_INT32_MAX = 2**31 - 1

# What an H100/H200 SXM offers (the default without a GPU to ask).
_DEFAULT_NUM_SMS = 132
_DEFAULT_SMEM_OPTIN = 232448
_DEFAULT_CLOCK_MHZ = 1980


@dataclass(frozen=True)
class PlanTarget:
    """The device the kernels are planned for: the config choice depends on its SM count and shared memory, the
    tuning table's picks on its model (SM count and clock)."""
    arch: str
    num_sms: int
    smem_optin: int
    from_device: bool  # the defaults came from this machine's GPU
    clock_mhz: int = _DEFAULT_CLOCK_MHZ

    def __str__(self) -> str:
        where = "this machine's GPU" if self.from_device else 'given or default values'
        return f'{self.arch}, {self.num_sms} SMs, {self.smem_optin} B shared memory per block ({where})'


def plan_target(arch: Optional[str] = None, num_sms: Optional[int] = None,
                smem_optin: Optional[int] = None) -> PlanTarget:
    """The target for a warm-up: what is given, else this machine's GPU (its arch, ``get_num_sms()`` so a
    ``set_num_sms`` cap counts, its shared memory) unless ``arch`` names another, else an H100/H200 SXM
    (sm_90a, 132 SMs, 232448 B)."""
    import torch
    if torch.cuda.is_available():
        info = _C.device_info(torch.cuda.current_device())
        if arch is None or arch == info['arch']:
            return PlanTarget(info['arch'], num_sms or _C.get_num_sms(), smem_optin or info['max_smem_per_block_optin'],
                              True, info['clock_mhz'])
    return PlanTarget(arch or 'sm_90a', num_sms or _DEFAULT_NUM_SMS, smem_optin or _DEFAULT_SMEM_OPTIN, False)


def _cc_major(arch: str) -> int:
    match = re.fullmatch(r'sm_(\d+)(\d)[a-z]?', arch)
    if not match:
        raise ValueError(f"warmup: arch must look like 'sm_90a'; got {arch!r}")
    return int(match.group(1))


def _scalar(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ('true', 'false'):
        return lowered == 'true'
    try:
        return int(text)
    except ValueError:
        return text.strip()


def parse_call(text: str) -> Call:
    """``'op:field=value,...'`` -> a call dict (ints, true/false, ``;``-separated lists, else strings)."""
    op, _, rest = text.partition(':')
    call: Call = {'op': op.strip()}
    for item in filter(None, (part.strip() for part in rest.split(','))):
        name, eq, value = item.partition('=')
        if not eq:
            raise ValueError(f"warmup: a call field must be name=value; got {item!r} in {text!r}")
        call[name.strip()] = [_scalar(v) for v in value.split(';')] if ';' in value else _scalar(value)
    return call


def read_calls(path: Union[str, os.PathLike]) -> List[Call]:
    """A JSON file holding a list of calls (or ``{"calls": [...]}``)."""
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict) and 'calls' in data:
        data = data['calls']
    if not isinstance(data, list):
        raise ValueError(f'{path}: expected a JSON list of calls or {{"calls": [...]}}; got {type(data).__name__}')
    return data


def describe(call: Any) -> str:
    if not isinstance(call, dict):
        return repr(call)
    fields = ', '.join(f'{k}={v}' for k, v in call.items() if k != 'op')
    return f"{call.get('op', '?')}({fields})"


def _int(call: Call, name: str, default: Optional[int] = None) -> int:
    value = call.get(name, default)
    if value is None:
        raise ValueError(f"missing field {name!r}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f'field {name!r} must be an int; got {value!r}')
    if not 0 <= value <= _INT32_MAX:  # the planner (and the kernels) take these as 32-bit ints
        raise ValueError(f'field {name!r} must be in [0, {_INT32_MAX}]; got {value}')
    return value


def _dtype(call: Call, name: str) -> Optional[str]:
    value = call.get(name)
    if value is not None and str(value).replace('torch.', '') not in _DTYPES:
        raise ValueError(f'field {name!r} must be one of {_DTYPES}; got {value!r}')
    return None if value is None else str(value).replace('torch.', '')


def _bool(call: Call, name: str, default: bool) -> bool:
    value = call.get(name, default)
    if not isinstance(value, bool):
        raise TypeError(f'field {name!r} must be true or false; got {value!r}')
    return value


def _optional(call: Call, name: str, kind: type) -> Any:
    value = call.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise TypeError(f'field {name!r} must be {kind.__name__}; got {value!r}')
    if kind is int and value is not None:
        return _int(call, name)
    return value


def _helper_kernel(kernel: str, arch: str) -> KernelRecord:
    name, symbol, code = _C._compile_only_source(kernel)
    return KernelRecord(name, symbol, arch, code)


def plan_call(call: Call, target: PlanTarget) -> List[KernelRecord]:
    """The kernels `call` compiles on `target`. Raises ValueError / TypeError naming the problem."""
    _check_fields(call)
    op = call['op']
    if op not in [name for name, _ in _C._gemm_op_table()]:
        return [_helper_call(call, target)]
    fp8 = op.startswith(('fp8_', 'm_grouped_fp8_', 'k_grouped_fp8_'))
    records = [KernelRecord(name, symbol, target.arch, code)
               for name, symbol, code in _C._plan_gemm_call(**call_kwargs(call, target))]
    if fp8 and not op.startswith('k_grouped_'):
        records.append(_helper_kernel(_SCALE_LAYOUT_KERNEL, target.arch))
    return records


def _helper_call(call: Call, target: PlanTarget) -> KernelRecord:
    """The helper kernel a call names (an op that is not a GEMM op)."""
    op = call['op']
    gemm_ops = [name for name, _ in _C._gemm_op_table()]
    try:
        helper = _helper_kernel(op, target.arch)
    except ValueError:
        raise ValueError(f'unknown op {op!r}; known: {", ".join(gemm_ops)}, {_SCALE_LAYOUT_KERNEL}') from None
    if set(call) != {'op'}:
        raise ValueError(f'{op} is a helper kernel and takes no fields; got {sorted(set(call) - {"op"})}')
    return helper


def _check_fields(call: Call) -> None:
    if not isinstance(call, dict):
        raise TypeError(f'a call must be a dict or an "op:field=value,..." string; got {call!r}')
    op = call.get('op')
    if not isinstance(op, str):
        raise ValueError("missing field 'op'")
    unknown = sorted(set(call) - _FIELDS)
    if unknown:
        raise ValueError(f'unknown fields {unknown}; known: {sorted(_FIELDS)}')


def call_kwargs(call: Call, target: PlanTarget) -> Dict[str, Any]:
    """The keyword arguments of _C._plan_gemm_call (and _C._gemm_call_candidates) for a GEMM op call on
    `target`. Raises ValueError / TypeError naming the problem."""
    _check_fields(call)
    op = call['op']
    if 'm' in call and 'max_m' in call:
        raise ValueError("give 'm' or 'max_m', not both")
    ks = call.get('ks') or []
    ks = [ks] if isinstance(ks, int) and not isinstance(ks, bool) else ks  # one group (text form 'ks=512')
    if not isinstance(ks, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in ks):
        raise TypeError(f"field 'ks' must be a list of ints; got {ks!r}")
    if not all(0 <= v <= _INT32_MAX for v in ks) or sum(ks) > _INT32_MAX:
        raise ValueError(f"field 'ks' must hold ints in [0, {_INT32_MAX}] with a sum of at most that; got {ks}")
    d_dtype, c_dtype = _dtype(call, 'd_dtype'), _dtype(call, 'c_dtype')
    recipe = call.get('recipe')
    fp8 = op.startswith(('fp8_', 'm_grouped_fp8_', 'k_grouped_fp8_'))
    k_grouped = op.startswith('k_grouped_')
    fp8_1d1d = fp8 and (k_grouped or (recipe is not None and list(recipe) == [1, 1, 128]))
    if fp8 and d_dtype is not None and d_dtype != ('float32' if fp8_1d1d else 'bfloat16'):
        raise ValueError(f"d_dtype must be {'float32' if fp8_1d1d else 'bfloat16'} with this recipe; got {d_dtype}")
    multiple = call.get('block_size_multiple_of')
    multiple = (multiple, multiple) if isinstance(multiple, int) else multiple  # as set_block_size_multiple_of
    if multiple:
        multiple = tuple(_int({'block_size_multiple_of': v}, 'block_size_multiple_of') for v in multiple)
    return dict(
        op=op, m=_int(call, 'max_m' if 'max_m' in call else 'm'), n=_int(call, 'n'), k=_int(call, 'k', sum(ks) if ks else None),
        num_groups=_int(call, 'num_groups', len(ks) or 1), expected_m=_int(call, 'expected_m', 0), ks=ks,
        recipe=tuple(recipe) if recipe is not None else None, d_fp32=d_dtype == 'float32',
        with_c=c_dtype is not None, c_fp32=c_dtype == 'float32',
        use_psum_layout=_bool(call, 'use_psum_layout', False),
        ensure_zero_padding=_bool(call, 'ensure_zero_padding', True),
        use_padded_sf_layout=_bool(call, 'use_padded_sf_layout', False),
        mk_alignment=_optional(call, 'mk_alignment', int), block_size_multiple_of=tuple(multiple) if multiple else None,
        compiled_dims=_optional(call, 'compiled_dims', str), num_sms=target.num_sms, smem_optin=target.smem_optin,
        cc_major=_cc_major(target.arch), head_splits=[int(x) for x in call.get('head_splits', ())],
        clock_mhz=target.clock_mhz, max_block_n=_int(call, 'max_block_n', 256), enable_overlap=_bool(call, 'enable_overlap', False))
