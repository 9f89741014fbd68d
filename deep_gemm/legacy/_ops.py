"""``torch.library`` registration of the legacy functions: ``torch.ops.deep_gemm.<name>``.

As for the C++ ops, ``d`` is mutated in place and nothing is returned; tuple arguments are passed
flattened (``mappings`` -> ``m_indices, m_row_indices``; ``handle`` -> ``k_indices, k_start, k_end``).
The fake (meta) implementations run the same argument checks without touching a device, so shape
errors surface while tracing. The public functions call these ops only while torch.compile traces them;
eager calls launch directly.

Registering needs only torch. It is idempotent per process (the package may be loaded twice under
different names, e.g. by tests): an op already defined is left as it is.
"""

from __future__ import annotations

from typing import List, Optional

import torch
from torch import Tensor

from . import k_grouped_gemm as KG
from . import m_grouped_gemm as MG

NAMESPACE = "deep_gemm"


def _register(name: str, impl, fake) -> None:
    if hasattr(getattr(torch.ops, NAMESPACE), name):
        return
    op = torch.library.custom_op(f"{NAMESPACE}::{name}", impl, mutates_args=("d",))
    op.register_fake(fake)


# ---- m-grouped (plain and a_fused) ----

def _m_grouped(op: str, layout: str):
    def impl(a: Tensor, b: Tensor, d: Tensor, m_indices: Tensor) -> None:
        MG.run_m_grouped(op, MG.check_m_grouped(op, a, b, d, m_indices, b_layout=layout))

    def fake(a, b, d, m_indices):
        MG.check_m_grouped(op, a, b, d, m_indices, b_layout=layout)
    return impl, fake


def _a_fused_m_grouped(op: str, layout: str):
    def impl(a: Tensor, b: Tensor, d: Tensor, m_indices: Tensor, m_row_indices: Tensor) -> None:
        MG.run_m_grouped(op, MG.check_m_grouped(op, a, b, d, m_indices, m_row_indices, b_layout=layout))

    def fake(a, b, d, m_indices, m_row_indices):
        MG.check_m_grouped(op, a, b, d, m_indices, m_row_indices, b_layout=layout)
    return impl, fake


# ---- k-grouped (plain and fused) ----

def _k_grouped_impl(a: Tensor, b: Tensor, d: Tensor, ks: List[int], ks_tensor: Optional[Tensor],
                    c: Optional[Tensor]) -> None:
    op = "k_grouped_bf16_gemm_tn_contiguous_tl"
    ks, c_is_d = KG.check_k_grouped(op, a, b, d, ks, ks_tensor, c)
    KG.run_plain_k_grouped(op, a, b, d, ks, ks_tensor, c, c_is_d, None)


def _k_grouped_fake(a, b, d, ks, ks_tensor, c):
    KG.check_k_grouped("k_grouped_bf16_gemm_tn_contiguous_tl", a, b, d, ks, ks_tensor, c)


def _fused_k_grouped(op: str, gathered: str):
    def impl(a: Tensor, b: Tensor, d: Tensor, k_indices: Tensor, k_start: Tensor, k_end: Tensor, acc: bool) -> None:
        KG.check_fused_k_grouped(op, a, b, d, k_indices, k_start, k_end, acc, gathered)
        KG.run_fused_k_grouped(op, a, b, d, k_indices, k_start, k_end, acc, gathered)

    def fake(a, b, d, k_indices, k_start, k_end, acc):
        KG.check_fused_k_grouped(op, a, b, d, k_indices, k_start, k_end, acc, gathered)
    return impl, fake


OP_NAMES = (
    "m_grouped_bf16_gemm_nt_contiguous_tl", "m_grouped_bf16_gemm_nn_contiguous_tl",
    "a_fused_m_grouped_bf16_gemm_nt_contiguous_tl", "a_fused_m_grouped_bf16_gemm_nn_contiguous_tl",
    "k_grouped_bf16_gemm_tn_contiguous_tl",
    "a_fused_k_grouped_bf16_gemm_tn_contiguous_tl", "b_fused_k_grouped_bf16_gemm_tn_contiguous_tl",
)


def register_all() -> None:
    for layout in ("nt", "nn"):
        name = f"m_grouped_bf16_gemm_{layout}_contiguous_tl"
        _register(name, *_m_grouped(name, layout))
        name = f"a_fused_m_grouped_bf16_gemm_{layout}_contiguous_tl"
        _register(name, *_a_fused_m_grouped(name, layout))
    _register("k_grouped_bf16_gemm_tn_contiguous_tl", _k_grouped_impl, _k_grouped_fake)
    for gathered in ("a", "b"):
        name = f"{gathered}_fused_k_grouped_bf16_gemm_tn_contiguous_tl"
        _register(name, *_fused_k_grouped(name, gathered))
