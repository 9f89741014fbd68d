"""Valid argument sets for every GEMM op of the public API, on any device, with named tensors that the
tests mutate one at a time (dtype, shape, layout) to check the errors.

`Case.build(device, **overrides)` returns `(args, kwargs, tensors)`; each override maps a tensor name
to a function of the valid tensor (or to a replacement value for non-tensor arguments).
"""

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

import torch

import deep_gemm

FP8 = torch.float8_e4m3fn
BF16 = torch.bfloat16
F32 = torch.float32
I32 = torch.int32


def ceil_div(x, y):
    return (x + y - 1) // y


def operand(rows: int, k: int, dtype, device, transposed: bool, groups: int = 0) -> torch.Tensor:
    """A K-major operand [.., rows, K]; `transposed` returns the [.., K, rows] view the t/n variants take."""
    shape = (groups, rows, k) if groups else (rows, k)
    t = torch.empty(shape, dtype=dtype, device=device)
    return t.transpose(-2, -1) if transposed else t


def scales(rows: int, cols: int, device, transposed: bool, groups: int = 0) -> torch.Tensor:
    shape = (groups, rows, cols) if groups else (rows, cols)
    t = torch.ones(shape, dtype=F32, device=device)
    return t.transpose(-2, -1) if transposed else t


@dataclass
class Case:
    name: str
    fn: Callable
    make: Callable  # (device, dims) -> dict of named arguments
    assemble: Callable  # dict -> (args, kwargs)
    tensor_dtypes: Dict[str, List[torch.dtype]] = field(default_factory=dict)  # name -> accepted dtypes
    dims: Dict[str, int] = field(default_factory=lambda: dict(M=128, N=256, K=512, G=2))

    def build(self, device='meta', dims=None, **overrides) -> Tuple[tuple, dict, dict]:
        d = dict(self.dims)
        d.update(dims or {})
        named = self.make(device, d)
        for key, value in overrides.items():
            named[key] = value(named[key]) if callable(value) else value
        args, kwargs = self.assemble(named)
        return args, kwargs, named

    def call(self, device='meta', dims=None, **overrides):
        args, kwargs, _ = self.build(device, dims, **overrides)
        return self.fn(*args, **kwargs)


def _fp8_normal(layout: str) -> Case:
    ta, tb = layout[0] == 't', layout[1] == 'n'

    def make(device, d):
        M, N, K = d['M'], d['N'], d['K']
        return dict(a=operand(M, K, FP8, device, ta), sfa=scales(M, ceil_div(K, 128), device, ta),
                    b=operand(N, K, FP8, device, tb), sfb=scales(ceil_div(N, 128), ceil_div(K, 128), device, tb),
                    d=torch.empty(M, N, dtype=BF16, device=device), c=None, recipe=None, compiled_dims='nk')

    def assemble(t):
        return ((t['a'], t['sfa']), (t['b'], t['sfb']), t['d']), dict(c=t['c'], recipe=t['recipe'], compiled_dims=t['compiled_dims'])

    return Case(f'fp8_gemm_{layout}', getattr(deep_gemm, f'fp8_gemm_{layout}'), make, assemble,
                dict(a=[FP8], b=[FP8], sfa=[F32], sfb=[F32], d=[BF16]))


def _bf16_normal(layout: str) -> Case:
    ta, tb = layout[0] == 't', layout[1] == 'n'

    def make(device, d):
        M, N, K = d['M'], d['N'], d['K']
        return dict(a=operand(M, K, BF16, device, ta), b=operand(N, K, BF16, device, tb),
                    d=torch.empty(M, N, dtype=BF16, device=device), c=None, compiled_dims='nk')

    def assemble(t):
        return (t['a'], t['b'], t['d']), dict(c=t['c'], compiled_dims=t['compiled_dims'])

    return Case(f'bf16_gemm_{layout}', getattr(deep_gemm, f'bf16_gemm_{layout}'), make, assemble,
                dict(a=[BF16], b=[BF16], d=[BF16, F32]))


def _cublaslt(layout: str) -> Case:
    """cublaslt_gemm_*: the arguments of the bf16_gemm_* op of the same layout, without compiled_dims."""
    ta, tb = layout[0] == 't', layout[1] == 'n'

    def make(device, d):
        M, N, K = d['M'], d['N'], d['K']
        return dict(a=operand(M, K, BF16, device, ta), b=operand(N, K, BF16, device, tb),
                    d=torch.empty(M, N, dtype=BF16, device=device), c=None)

    def assemble(t):
        return (t['a'], t['b'], t['d']), dict(c=t['c'])

    return Case(f'cublaslt_gemm_{layout}', getattr(deep_gemm, f'cublaslt_gemm_{layout}'), make, assemble,
                dict(a=[BF16], b=[BF16], d=[BF16, F32]))


def _m_grouped_contiguous(fp8: bool) -> Case:
    dt = FP8 if fp8 else BF16

    def make(device, d):
        M, N, K, G = d['M'], d['N'], d['K'], d['G']
        t = dict(a=operand(M, K, dt, device, False), b=operand(N, K, dt, device, False, groups=G),
                 d=torch.empty(M, N, dtype=BF16, device=device), grouped_layout=torch.zeros(M, dtype=I32, device=device))
        if fp8:
            t.update(sfa=scales(M, ceil_div(K, 128), device, False),
                     sfb=scales(ceil_div(N, 128), ceil_div(K, 128), device, False, groups=G))
        return t

    def assemble(t):
        if fp8:
            return ((t['a'], t['sfa']), (t['b'], t['sfb']), t['d'], t['grouped_layout']), {}
        return (t['a'], t['b'], t['d'], t['grouped_layout']), {}

    name = f'm_grouped_{"fp8" if fp8 else "bf16"}_gemm_nt_contiguous'
    dtypes = dict(a=[dt], b=[dt], d=[BF16], grouped_layout=[I32])
    if fp8:
        dtypes.update(sfa=[F32], sfb=[F32])
    return Case(name, getattr(deep_gemm, name), make, assemble, dtypes)


def _m_grouped_masked(fp8: bool) -> Case:
    dt = FP8 if fp8 else BF16

    def make(device, d):
        M, N, K, G = d['M'], d['N'], d['K'], d['G']
        t = dict(a=operand(M, K, dt, device, False, groups=G), b=operand(N, K, dt, device, False, groups=G),
                 d=torch.empty(G, M, N, dtype=BF16, device=device), masked_m=torch.zeros(G, dtype=I32, device=device),
                 expected_m=M)
        if fp8:
            t.update(sfa=scales(M, ceil_div(K, 128), device, False, groups=G),
                     sfb=scales(ceil_div(N, 128), ceil_div(K, 128), device, False, groups=G))
        return t

    def assemble(t):
        if fp8:
            return ((t['a'], t['sfa']), (t['b'], t['sfb']), t['d'], t['masked_m'], t['expected_m']), {}
        return (t['a'], t['b'], t['d'], t['masked_m'], t['expected_m']), {}

    name = f'm_grouped_{"fp8" if fp8 else "bf16"}_gemm_nt_masked'
    dtypes = dict(a=[dt], b=[dt], d=[BF16], masked_m=[I32])
    if fp8:
        dtypes.update(sfa=[F32], sfb=[F32])
    return Case(name, getattr(deep_gemm, name), make, assemble, dtypes)


def _k_grouped() -> Case:
    def make(device, d):
        M, N, G = d['M'], d['N'], d['G']
        ks = [128 * (i + 1) for i in range(G)]
        sum_k = sum(ks)
        return dict(a=torch.empty(sum_k * M, dtype=FP8, device=device), sfa=scales(sum_k // 128, M, device, False),
                    b=torch.empty(sum_k * N, dtype=FP8, device=device), sfb=scales(sum_k // 128, N, device, False),
                    d=torch.empty(G, M, N, dtype=F32, device=device), ks=ks,
                    grouped_layout=torch.tensor(ks, dtype=I32).to(device), c=None)

    def assemble(t):
        return ((t['a'], t['sfa']), (t['b'], t['sfb']), t['d'], t['ks'], t['grouped_layout']), dict(c=t['c'])

    return Case('k_grouped_fp8_gemm_nt_contiguous', deep_gemm.k_grouped_fp8_gemm_nt_contiguous, make, assemble,
                dict(a=[FP8], b=[FP8], sfa=[F32], sfb=[F32], d=[F32], grouped_layout=[I32]))


def _k_grouped_bf16() -> Case:
    def make(device, d):
        M, N, G = d['M'], d['N'], d['G']
        ks = [128 * (i + 1) for i in range(G)]
        sum_k = sum(ks)
        return dict(a=torch.empty(sum_k, M, dtype=BF16, device=device), b=torch.empty(sum_k, N, dtype=BF16, device=device),
                    d=torch.empty(G, M, N, dtype=F32, device=device), ks=ks, grouped_layout=torch.tensor(ks, dtype=I32).to(device),
                    c=None, compiled_dims='mn')

    def assemble(t):
        return (t['a'], t['b'], t['d'], t['ks'], t['grouped_layout']), dict(c=t['c'], compiled_dims=t['compiled_dims'])

    return Case('k_grouped_bf16_gemm_tn_contiguous', deep_gemm.k_grouped_bf16_gemm_tn_contiguous, make, assemble,
                dict(a=[BF16], b=[BF16], d=[F32], grouped_layout=[I32]))


def _skip_head_mid() -> Case:
    """fp8_gemm_nt_skip_head_mid: N = 2 heads of (left + right) = 128 columns, d 2 heads of 192."""
    def make(device, d):
        M, N, K = d['M'], d['N'], d['K']
        head_splits = (96, 64, 32)
        width = N // 128 * 192
        return dict(a=operand(M, K, FP8, device, False), sfa=scales(M, ceil_div(K, 128), device, False),
                    b=operand(N, K, FP8, device, False), sfb=scales(ceil_div(N, 128), ceil_div(K, 128), device, False),
                    d=torch.empty(M, width, dtype=BF16, device=device), head_splits=head_splits, recipe=None, compiled_dims='nk')

    def assemble(t):
        return ((t['a'], t['sfa']), (t['b'], t['sfb']), t['d'], t['head_splits']), dict(recipe=t['recipe'],
                                                                                     compiled_dims=t['compiled_dims'])

    return Case('fp8_gemm_nt_skip_head_mid', deep_gemm.fp8_gemm_nt_skip_head_mid, make, assemble,
                dict(a=[FP8], b=[FP8], sfa=[F32], sfb=[F32], d=[BF16]))


CASES = ([_fp8_normal(x) for x in ('nt', 'nn', 'tn', 'tt')] + [_m_grouped_contiguous(True), _m_grouped_masked(True), _k_grouped()]
         + [_bf16_normal(x) for x in ('nt', 'nn', 'tn', 'tt')] + [_m_grouped_contiguous(False), _m_grouped_masked(False),
                                                                  _k_grouped_bf16()]
         + [_cublaslt(x) for x in ('nt', 'nn', 'tn', 'tt')] + [_skip_head_mid()])
CASES_BY_NAME = {c.name: c for c in CASES}


def other_dtype(accepted: List[torch.dtype]) -> torch.dtype:
    for candidate in (torch.float16, torch.int64, torch.float64, BF16, F32):
        if candidate not in accepted:
            return candidate
    raise AssertionError('unreachable')


def retype(t: torch.Tensor, dtype) -> torch.Tensor:
    """Same shape and strides, another dtype."""
    return torch.empty_strided(t.shape, t.stride(), dtype=dtype, device=t.device)
