"""Numerical tests of the ``deep_gemm.legacy`` Triton kernels on CPU, through Triton's interpreter.

``TRITON_INTERPRET=1`` must be set before the kernels are defined, and it changes what ``triton.jit``
returns for the whole process, so the cases run in one subprocess (this file executed as a script with
the variable set); pytest only reads back one JSON result per case. No GPU is needed.

Notes on the interpreter (Triton 3.6): BF16 ``tl.dot`` is computed on raw bit patterns there, so the kernels
upcast BF16 tiles to FP32 in interpreter mode only (see ``deep_gemm/legacy/_kernels.py``); inputs and
outputs here are still BF16 tensors, and the accuracy bar is the BF16 one of docs/architecture.md (calc_diff < 1e-5).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from legacy_util import calc_diff, load_legacy


# ---------------------------------------------------------------------------------------------------
# Cases (executed in the subprocess)
# ---------------------------------------------------------------------------------------------------

def _ref_m_grouped(a, b_gnk, m_indices):
    import torch
    ref = torch.zeros(a.shape[0], b_gnk.shape[1], dtype=torch.float32)
    for g in range(b_gnk.shape[0]):
        rows = m_indices == g
        if rows.any():
            ref[rows] = a[rows].float() @ b_gnk[g].float().T
    return ref


def _moe_indices(sizes, align, torch):
    """Contiguous groups, each padded with -1 rows up to a multiple of ``align``."""
    parts = []
    for g, size in enumerate(sizes):
        padded = (size + align - 1) // align * align
        parts.append(torch.full((size,), g, dtype=torch.int32))
        parts.append(torch.full((padded - size,), -1, dtype=torch.int32))
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int32)


def _run_m_grouped(legacy, torch, m_indices, n, k, num_groups, layout="nt", d_dtype=None, config=None,
                   a_row_pad=0, d_row_pad=0, seed=0):
    torch.manual_seed(seed)
    m = m_indices.shape[0]
    a_full = torch.randn(m, k + a_row_pad, dtype=torch.bfloat16)
    a = a_full[:, :k]                                    # row stride k + a_row_pad
    b_gnk = torch.randn(num_groups, n, k, dtype=torch.bfloat16)
    d_dtype = d_dtype or torch.bfloat16
    d_full = torch.full((m, n + d_row_pad), float("nan"), dtype=d_dtype)
    d = d_full[:, :n]
    if layout == "nt":
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b_gnk, d, m_indices, _config=config)
    elif layout == "nt_mn_major":                        # [G, N, K] with N contiguous
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b_gnk.mT.contiguous().mT, d, m_indices, _config=config)
    elif layout == "nn_k_major":                         # [G, K, N] with K contiguous
        legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b_gnk.mT, d, m_indices, _config=config)
    elif layout == "op_nt":                              # through the torch.library op
        torch.ops.deep_gemm.m_grouped_bf16_gemm_nt_contiguous_tl(a, b_gnk, d, m_indices)
    elif layout == "nt_inferred_kn":                     # [G, K, N] handed to the nt entry point
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b_gnk.transpose(1, 2).contiguous(), d, m_indices,
                                                     _config=config)
    else:
        legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b_gnk.transpose(1, 2).contiguous(), d, m_indices,
                                                     _config=config)
    ref = _ref_m_grouped(a, b_gnk, m_indices)
    result = {"diff": calc_diff(d, ref), "nan": bool(torch.isnan(d).any()),
              "padding_zero": bool((d[(m_indices < 0) | (m_indices >= num_groups)] == 0).all())}
    if d_row_pad:
        result["untouched_outside"] = bool(torch.isnan(d_full[:, n:]).all())
    return result


def _run_k_grouped(legacy, torch, ks, m, n, with_c=False, c_is_d=False, use_ks_tensor=False, config=None, seed=0):
    torch.manual_seed(seed)
    total = sum(ks)
    a = torch.randn(total, m, dtype=torch.bfloat16)
    b = torch.randn(total, n, dtype=torch.bfloat16)
    c = torch.randn(len(ks), m, n, dtype=torch.float32) if (with_c or c_is_d) else None
    ref = torch.zeros(len(ks), m, n) if c is None else c.clone()
    start = 0
    for g, kg in enumerate(ks):
        ref[g] += a[start:start + kg].float().T @ b[start:start + kg].float()
        start += kg
    ks_tensor = torch.tensor(ks, dtype=torch.int32) if use_ks_tensor else None
    if c_is_d:
        d = c
        legacy.k_grouped_bf16_gemm_tn_contiguous_tl(a, b, d, list(ks), ks_tensor, c=d, _config=config)
    else:
        d = torch.full((len(ks), m, n), float("nan"))
        legacy.k_grouped_bf16_gemm_tn_contiguous_tl(a, b, d, list(ks), ks_tensor, c=c, _config=config)
    return {"diff": calc_diff(d, ref), "nan": bool(torch.isnan(d).any()),
            "max_abs_err": float((d - ref).abs().max()) if d.numel() else 0.0}


def _run_a_fused_m(legacy, torch, m_indices, src_rows, t_rows, n, k, num_groups, layout="nt", config=None, seed=0):
    """d[r] = a[src_rows[r]] @ B[m_indices[r]]; rows with an invalid group or source row are zeros."""
    torch.manual_seed(seed)
    m = m_indices.shape[0]
    a = torch.randn(t_rows, k, dtype=torch.bfloat16)
    b_gnk = torch.randn(num_groups, n, k, dtype=torch.bfloat16)
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
    if layout == "nt":
        legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a, b_gnk, d, (m_indices, src_rows), _config=config)
    elif layout == "nt_mn_major":
        legacy.a_fused_m_grouped_gemm.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(
            a, b_gnk.mT.contiguous().mT, d, (m_indices, src_rows), _config=config)
    elif layout == "op_nn":
        torch.ops.deep_gemm.a_fused_m_grouped_bf16_gemm_nn_contiguous_tl(a, b_gnk.mT.contiguous(), d, m_indices,
                                                                         src_rows)
    else:
        legacy.a_fused_m_grouped_bf16_gemm_nn_contiguous_tl(a, b_gnk.mT.contiguous(), d, (m_indices, src_rows),
                                                            _config=config)
    ok = (m_indices >= 0) & (m_indices < num_groups) & (src_rows >= 0) & (src_rows < t_rows)
    gathered = a[torch.where(ok, src_rows, 0).long()]
    ref = _ref_m_grouped(gathered, b_gnk, torch.where(ok, m_indices, -1))
    return {"diff": calc_diff(d, ref), "nan": bool(torch.isnan(d).any()), "padding_zero": bool((d[~ok] == 0).all())}


def _run_fused_k(legacy, torch, fused, k_indices, k_start, k_end, t_rows, m, n, num_groups, acc=False,
                 d_dtype=None, via_op=False, config=None, seed=0):
    """a_fused: d[g] (+)= sum_k a[k_indices[k]]^T b[k]; b_fused: d[g] (+)= sum_k a[k]^T b[k_indices[k]], over
    each group's range clamped to [0, K]; an index outside [0, t_rows) contributes nothing."""
    torch.manual_seed(seed)
    positions = k_indices.shape[0]
    src = torch.randn(t_rows, m if fused == "a" else n, dtype=torch.bfloat16)
    plain = torch.randn(positions, n if fused == "a" else m, dtype=torch.bfloat16)
    a, b = (src, plain) if fused == "a" else (plain, src)
    d_dtype = d_dtype or torch.float32
    d0 = torch.randn(num_groups, m, n).to(d_dtype)
    d = d0.clone() if acc else torch.full((num_groups, m, n), float("nan"), dtype=d_dtype)
    ok = (k_indices >= 0) & (k_indices < t_rows)
    rows = src[torch.where(ok, k_indices, 0).long()].float() * ok[:, None]
    ref = d0.float().clone() if acc else torch.zeros(num_groups, m, n)
    for g in range(num_groups):
        lo, hi = max(int(k_start[g]), 0), min(int(k_end[g]), positions)
        if lo < hi:
            if fused == "a":
                ref[g] += rows[lo:hi].T @ plain[lo:hi].float()
            else:
                ref[g] += plain[lo:hi].float().T @ rows[lo:hi]
    fn_name = f"{fused}_fused_k_grouped_bf16_gemm_tn_contiguous_tl"
    if via_op:
        getattr(torch.ops.deep_gemm, fn_name)(a, b, d, k_indices, k_start, k_end, acc)
    else:
        getattr(legacy, fn_name)(a, b, d, (k_indices, k_start, k_end), acc, _config=config)
    bar = 1e-3 if d_dtype == torch.float32 else 0.5      # bf16 output: rounding of values of size ~10
    return {"diff": calc_diff(d, ref), "nan": bool(torch.isnan(d).any()),
            "max_abs_err": float((d.float() - ref).abs().max()), "abs_bar": bar}


def _moe_rows(torch, sizes, align, t_rows, seed):
    """The a_fused MoE mapping: contiguous groups padded to ``align`` with -1, each row naming a random
    token of ``a`` (tokens repeat across groups, as with top-k routing)."""
    m_indices = _moe_indices(sizes, align, torch)
    gen = torch.Generator().manual_seed(seed)
    rows = torch.randint(0, t_rows, (m_indices.shape[0],), dtype=torch.int32, generator=gen)
    return m_indices, torch.where(m_indices >= 0, rows, torch.full_like(rows, -1))


def _case_exact_call(legacy, torch):
    # A user's reported call, as written (CPU tensors under the interpreter): b [1, 256, 1024] is read
    # as [G, K, N] because K = 256 (from a) and N = 1024 (from d).
    torch.manual_seed(0)
    A = torch.randn(1024, 256, dtype=torch.bfloat16)
    B = torch.randn(1, 256, 1024, dtype=torch.bfloat16)
    D = torch.empty(1024, 1024, dtype=torch.bfloat16)
    m_idx = torch.zeros(1024, dtype=torch.int32)
    legacy.m_grouped_gemm.m_grouped_bf16_gemm_nt_contiguous_tl(A, B, D, m_idx)
    return {"diff": calc_diff(D, A.float() @ B[0].float()), "nan": bool(torch.isnan(D).any())}


def _case_square_is_nt(legacy, torch):
    # N == K: both readings of b fit; the documented [G, N, K] one must be used.
    torch.manual_seed(1)
    a = torch.randn(96, 64, dtype=torch.bfloat16)
    b = torch.randn(2, 64, 64, dtype=torch.bfloat16)
    idx = torch.cat([torch.zeros(40, dtype=torch.int32), torch.ones(56, dtype=torch.int32)])
    d = torch.full((96, 64), float("nan"), dtype=torch.bfloat16)
    legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx)
    as_nt = calc_diff(d, _ref_m_grouped(a, b, idx))
    as_nn = calc_diff(d, _ref_m_grouped(a, b.transpose(1, 2), idx))
    return {"diff": as_nt, "diff_other_reading": as_nn, "nan": bool(torch.isnan(d).any())}


def _case_tma_eligibility(legacy, torch):
    """Which calls may take the TMA kernel (descriptors need 16-byte aligned bases and row strides)."""
    mg = legacy.m_grouped_gemm
    a = torch.randn(64, 128, dtype=torch.bfloat16)
    b = torch.randn(2, 48, 128, dtype=torch.bfloat16)
    d = torch.empty(64, 48, dtype=torch.bfloat16)
    idx = torch.zeros(64, dtype=torch.int32)
    plan = lambda a, b, rows=None, layout="nt": mg.check_m_grouped("x", a, b, d, idx, rows, b_layout=layout)
    odd_k = torch.randn(2, 48, 100, dtype=torch.bfloat16)
    return {"k_major": mg.tma_eligible(plan(a, b)),
            "mn_major_k128": mg.tma_eligible(plan(a, b.mT.contiguous().mT)),
            "not_gather": not mg.tma_eligible(plan(a, b, idx)),
            "not_odd_row_stride": not mg.tma_eligible(plan(torch.randn(64, 129, dtype=torch.bfloat16)[:, 1:], b)),
            "not_mn_major_k100": not mg.tma_eligible(plan(a[:, :100], odd_k.mT.contiguous().mT)),
            "not_sparse_groups": not mg.tma_eligible(plan(a, torch.randn(2, 64, 128, dtype=torch.bfloat16)[:, :48]))}


def _case_empty(legacy, torch):
    out = {}
    a = torch.randn(0, 32, dtype=torch.bfloat16)
    d = torch.empty(0, 48, dtype=torch.bfloat16)
    legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, torch.randn(2, 48, 32, dtype=torch.bfloat16), d,
                                                torch.zeros(0, dtype=torch.int32))
    a = torch.randn(20, 0, dtype=torch.bfloat16)
    d = torch.full((20, 48), float("nan"), dtype=torch.bfloat16)
    legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, torch.randn(2, 48, 0, dtype=torch.bfloat16), d,
                                                torch.zeros(20, dtype=torch.int32))
    out["k0_zero"] = bool((d == 0).all())
    d = torch.full((3, 16, 24), float("nan"))
    legacy.k_grouped_bf16_gemm_tn_contiguous_tl(torch.randn(0, 16, dtype=torch.bfloat16),
                                                torch.randn(0, 24, dtype=torch.bfloat16), d, [0, 0, 0])
    out["kgrouped_all_k0_zero"] = bool((d == 0).all())
    c = torch.randn(2, 16, 24)
    d = torch.full((2, 16, 24), float("nan"))
    legacy.k_grouped_bf16_gemm_tn_contiguous_tl(torch.randn(0, 16, dtype=torch.bfloat16),
                                                torch.randn(0, 24, dtype=torch.bfloat16), d, [0, 0], c=c)
    out["kgrouped_all_k0_copies_c"] = bool(torch.equal(d, c))
    # a_fused with no source rows: nothing to gather, every row of d is zero.
    d = torch.full((20, 48), float("nan"), dtype=torch.bfloat16)
    legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(
        torch.randn(0, 32, dtype=torch.bfloat16), torch.randn(2, 48, 32, dtype=torch.bfloat16), d,
        (torch.zeros(20, dtype=torch.int32), torch.zeros(20, dtype=torch.int32)))
    out["a_fused_no_rows_zero"] = bool((d == 0).all())
    # Fused k-grouped with no K positions: zeros, or d unchanged with acc.
    handle = (torch.zeros(0, dtype=torch.int32), torch.zeros(2, dtype=torch.int32), torch.zeros(2, dtype=torch.int32))
    d = torch.full((2, 16, 24), float("nan"))
    legacy.a_fused_k_grouped_bf16_gemm_tn_contiguous_tl(torch.randn(5, 16, dtype=torch.bfloat16),
                                                        torch.randn(0, 24, dtype=torch.bfloat16), d, handle, False)
    out["a_fused_k_no_positions_zero"] = bool((d == 0).all())
    d = torch.randn(2, 16, 24)
    d0 = d.clone()
    legacy.b_fused_k_grouped_bf16_gemm_tn_contiguous_tl(torch.randn(0, 16, dtype=torch.bfloat16),
                                                        torch.randn(5, 24, dtype=torch.bfloat16), d, handle, True)
    out["b_fused_k_no_positions_acc_unchanged"] = bool(torch.equal(d, d0))
    return out


def build_cases():
    """name -> callable(legacy, torch) returning a dict of measurements."""
    import torch
    cases = {}

    def mg(name, indices_fn, n, k, g, **kw):
        cases[name] = lambda legacy, torch: _run_m_grouped(legacy, torch, indices_fn(torch), n, k, g, **kw)

    # MoE layout: groups padded to 32 rows (= the interpreter's BLOCK_M, so tiles are single-group).
    mg("nt_aligned_groups", lambda t: _moe_indices([50, 32, 0, 17], 32, t), 80, 96, 4)
    # Unaligned contiguous groups: tiles straddle groups and padding; K and N not multiples of the block.
    mg("nt_unaligned_groups", lambda t: _moe_indices([37, 20, 0, 61], 1, t), 72, 72, 4)
    mg("nt_unaligned_groups_padded", lambda t: _moe_indices([37, 20, 0, 61], 8, t), 72, 40, 4)
    # Arbitrary ids (not contiguous, several groups and padding in every tile), M not a block multiple.
    mg("nt_random_ids", lambda t: torch.randint(-1, 3, (200,), dtype=torch.int32,
                                                generator=torch.Generator().manual_seed(5)), 72, 72, 3)
    mg("nn_random_ids", lambda t: torch.randint(-1, 3, (200,), dtype=torch.int32,
                                                generator=torch.Generator().manual_seed(6)), 72, 72, 3,
       layout="nn")
    mg("nn_aligned_groups", lambda t: _moe_indices([64, 40], 32, t), 96, 64, 2, layout="nn")
    mg("nt_inferred_kn_layout", lambda t: _moe_indices([30, 50], 1, t), 48, 80, 2, layout="nt_inferred_kn")
    # Ids outside [-1, G) are padding too (memory-safe), and all-padding tiles.
    mg("nt_out_of_range_ids", lambda t: torch.tensor([5, 0, 0, 7, -3] * 8 + [-1] * 40, dtype=torch.int32),
       40, 32, 2)
    mg("nt_float32_d", lambda t: _moe_indices([33, 31], 1, t), 40, 48, 2, d_dtype=torch.float32)
    mg("nt_strided_rows", lambda t: _moe_indices([45, 30], 1, t), 56, 64, 2, a_row_pad=8, d_row_pad=5)
    # Other tile shapes: 16x16x16 tiles (many mixed tiles), and one tile covering every row.
    mg("nt_tiles_16", lambda t: torch.randint(-1, 4, (90,), dtype=torch.int32,
                                              generator=torch.Generator().manual_seed(7)), 50, 40, 4,
       config={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 3})
    mg("nn_tiles_128", lambda t: _moe_indices([70, 3, 40], 1, t), 100, 130, 3, layout="nn",
       config={"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8})
    mg("nt_single_group_zero_weights", lambda t: torch.full((64,), -1, dtype=torch.int32), 32, 32, 0)

    mg("nt_mn_major_b", lambda t: _moe_indices([37, 20, 0, 61], 8, t), 72, 40, 4, layout="nt_mn_major")
    mg("nt_mn_major_b_tiles_16", lambda t: torch.randint(-1, 3, (70,), dtype=torch.int32,
                                                         generator=torch.Generator().manual_seed(8)), 50, 40, 3,
       layout="nt_mn_major", config={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})
    mg("nn_k_major_b", lambda t: _moe_indices([30, 50], 1, t), 48, 80, 2, layout="nn_k_major")
    mg("op_nt", lambda t: _moe_indices([50, 32, 0, 17], 32, t), 80, 96, 4, layout="op_nt")

    # The TMA kernel (forced: by default it runs on the GPU only). Single-group tiles take the TMA path
    # (K and N tails read zeros; K-major b blocks past N read the next group's rows, never stored); tiles
    # that straddle groups or hold padding take the pointer path.
    tma = {"TMA": True}
    mg("tma_nt_aligned", lambda t: _moe_indices([50, 32, 0, 17], 32, t), 80, 96, 4, config=tma)
    mg("tma_nt_k_and_n_tails", lambda t: _moe_indices([64, 30], 32, t), 72, 88, 2, config=tma)
    mg("tma_nt_random_ids", lambda t: torch.randint(-1, 3, (100,), dtype=torch.int32,
                                                    generator=torch.Generator().manual_seed(9)), 40, 56, 3, config=tma)
    mg("tma_nt_mn_major_b", lambda t: _moe_indices([40, 64, 9], 32, t), 72, 128, 3, layout="nt_mn_major",
       config=tma)
    mg("tma_nn_tiles_16", lambda t: _moe_indices([20, 33], 16, t), 40, 128, 2, layout="nn",
       config={"TMA": True, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})
    # D through TMA: an M tail and columns past N inside d's row stride (must stay NaN); d whose rows are
    # not 16-byte aligned (pointer stores); float32 d.
    mg("tma_d_m_tail_row_pad", lambda t: torch.zeros(70, dtype=torch.int32), 72, 64, 1, d_row_pad=8, config=tma)
    mg("tma_d_unaligned_rows", lambda t: _moe_indices([40, 23], 32, t), 45, 64, 2, d_row_pad=0, config=tma)
    mg("tma_d_float32", lambda t: _moe_indices([40, 23], 32, t), 40, 64, 2, d_dtype=torch.float32, config=tma)
    cases["tma_eligibility"] = _case_tma_eligibility

    def am(name, mapping_fn, t_rows, n, k, g, **kw):
        cases[name] = lambda legacy, torch: _run_a_fused_m(legacy, torch, *mapping_fn(torch), t_rows, n, k, g, **kw)

    am("a_fused_nt_moe", lambda t: _moe_rows(t, [50, 32, 0, 17], 32, 45, 1), 45, 80, 72, 4)
    am("a_fused_nt_mn_major_b", lambda t: _moe_rows(t, [37, 20, 61], 1, 70, 2), 70, 72, 40, 3, layout="nt_mn_major")
    am("a_fused_nn", lambda t: _moe_rows(t, [40, 25], 8, 30, 3), 30, 48, 80, 2, layout="nn")
    am("a_fused_op_nn", lambda t: _moe_rows(t, [40, 25], 8, 30, 4), 30, 48, 80, 2, layout="op_nn")
    # Invalid source rows (-1, >= T) and group ids (-1, >= G) in every tile: zero rows, no stray reads.
    am("a_fused_bad_indices", lambda t: (torch.tensor([0, 1, -1, 5, 1, 0, 2, 9] * 9, dtype=torch.int32),
                                         torch.tensor([3, -1, 0, 1, 40, 2, 7, 0, 1] * 8, dtype=torch.int32)),
       8, 40, 24, 3, config={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2})

    def fk(name, fused, idx_fn, starts, ends, t_rows, m, n, **kw):
        cases[name] = lambda legacy, torch: _run_fused_k(
            legacy, torch, fused, idx_fn(torch), torch.tensor(starts, dtype=torch.int32),
            torch.tensor(ends, dtype=torch.int32), t_rows, m, n, len(starts), **kw)

    def perm(positions, t_rows, seed, pad_every=0):
        def make(torch):
            gen = torch.Generator().manual_seed(seed)
            idx = torch.randint(0, t_rows, (positions,), dtype=torch.int32, generator=gen)
            if pad_every:
                idx[::pad_every] = -1
            return idx
        return make

    # Groups of 40, 0, 57 and 33 positions; every 7th position is padding (-1).
    fk("a_fused_k", "a", perm(130, 90, 1, 7), [0, 40, 40, 97], [40, 40, 97, 130], 90, 72, 80)
    fk("a_fused_k_acc", "a", perm(130, 90, 2, 5), [0, 40, 40, 97], [40, 40, 97, 130], 90, 40, 56, acc=True)
    fk("b_fused_k", "b", perm(100, 64, 3, 6), [0, 64], [64, 100], 64, 48, 72)
    fk("b_fused_k_acc_bf16_d", "b", perm(100, 64, 4), [0, 30], [30, 100], 64, 33, 65, acc=True,
       d_dtype=torch.bfloat16)
    # Device-side bounds outside [0, K] are clamped; indices >= T read nothing; empty and reversed ranges.
    fk("a_fused_k_bad_ranges", "a", lambda t: torch.tensor(list(range(-3, 57)), dtype=torch.int32),
       [-20, 30, 50, 10], [25, 500, 40, 10], 50, 24, 40, acc=True)
    fk("b_fused_k_tiles_16", "b", perm(70, 30, 5, 4), [0, 20], [20, 70], 30, 50, 36,
       config={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2})
    fk("a_fused_k_op", "a", perm(60, 40, 6, 3), [0, 25], [25, 60], 40, 32, 48, via_op=True)
    fk("b_fused_k_op_acc", "b", perm(60, 40, 7), [0, 25], [25, 60], 40, 32, 48, acc=True, via_op=True)

    def kg(name, ks, m, n, **kw):
        cases[name] = lambda legacy, torch: _run_k_grouped(legacy, torch, ks, m, n, **kw)

    kg("k_grouped", [40, 0, 57, 33], 72, 80)
    kg("k_grouped_with_c", [64, 96, 7], 48, 40, with_c=True)
    kg("k_grouped_c_is_d", [30, 50], 40, 24, c_is_d=True)
    kg("k_grouped_ks_tensor", [16, 100, 1], 33, 65, use_ks_tensor=True)
    kg("k_grouped_tiles_16", [20, 45], 50, 36, config={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2})

    cases["exact_call"] = _case_exact_call
    cases["square_b_is_nt"] = _case_square_is_nt
    cases["empty_problems"] = _case_empty
    return cases


CASE_NAMES = [
    "nt_aligned_groups", "nt_unaligned_groups", "nt_unaligned_groups_padded", "nt_random_ids",
    "nn_random_ids", "nn_aligned_groups", "nt_inferred_kn_layout", "nt_out_of_range_ids", "nt_float32_d",
    "nt_strided_rows", "nt_tiles_16", "nn_tiles_128", "nt_single_group_zero_weights",
    "k_grouped", "k_grouped_with_c", "k_grouped_c_is_d", "k_grouped_ks_tensor", "k_grouped_tiles_16",
    "exact_call", "square_b_is_nt", "empty_problems",
    "nt_mn_major_b", "nt_mn_major_b_tiles_16", "nn_k_major_b", "op_nt",
    "a_fused_nt_moe", "a_fused_nt_mn_major_b", "a_fused_nn", "a_fused_op_nn", "a_fused_bad_indices",
    "a_fused_k", "a_fused_k_acc", "b_fused_k", "b_fused_k_acc_bf16_d", "a_fused_k_bad_ranges",
    "b_fused_k_tiles_16", "a_fused_k_op", "b_fused_k_op_acc",
    "tma_nt_aligned", "tma_nt_k_and_n_tails", "tma_nt_random_ids", "tma_nt_mn_major_b", "tma_nn_tiles_16",
    "tma_eligibility", "tma_d_m_tail_row_pad", "tma_d_unaligned_rows", "tma_d_float32",
]


def _worker(out_path: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import time
    import traceback

    import torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    legacy = load_legacy()
    results = {}
    for name, fn in build_cases().items():
        start = time.perf_counter()
        try:
            results[name] = fn(legacy, torch)
        except Exception:
            results[name] = {"error": traceback.format_exc()}
        results[name]["seconds"] = round(time.perf_counter() - start, 3)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


# ---------------------------------------------------------------------------------------------------
# pytest side
# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def interp_results(tmp_path_factory):
    pytest.importorskip("triton")
    out = tmp_path_factory.mktemp("legacy_interp") / "results.json"
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, __file__, str(out)], env=env, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"interpreter worker failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


def test_case_list_is_complete():
    assert sorted(build_cases()) == sorted(CASE_NAMES)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_interpreter_case(interp_results, name):
    res = interp_results[name]
    assert "error" not in res, res.get("error")
    if "diff" in res:
        assert res["diff"] < 1e-5, res
    if "nan" in res:
        assert not res["nan"], f"unwritten (NaN) output elements: {res}"
    for key in ("padding_zero", "untouched_outside", "k0_zero", "kgrouped_all_k0_zero", "kgrouped_all_k0_copies_c",
                "a_fused_no_rows_zero", "a_fused_k_no_positions_zero", "b_fused_k_no_positions_acc_unchanged",
                "k_major", "mn_major_k128", "not_gather", "not_odd_row_stride", "not_mn_major_k100",
                "not_sparse_groups"):
        if key in res:
            assert res[key], f"{key}: {res}"
    if "diff_other_reading" in res:
        assert res["diff_other_reading"] > 0.1, res   # the [G, K, N] reading would be a different result
    if name.startswith("k_grouped"):
        assert res["max_abs_err"] < 1e-3, res         # FP32 output: only summation order differs
    if "abs_bar" in res:
        assert res["max_abs_err"] < res["abs_bar"], res


if __name__ == "__main__":
    _worker(sys.argv[1])
