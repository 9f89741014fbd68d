"""Triton kernels of ``deep_gemm.legacy`` (imported lazily: needs Triton).

Three kernels:

* ``m_grouped_kernel``: ``d[r, :] = a[r, :] @ B[m_indices[r]]`` for rows grouped along M (with
  ``A_GATHER``: ``a[rows[r], :]``, the ``a_fused`` variants). The B operand is addressed through (k, n)
  strides, so one kernel serves K-major and MN-major weights; ``B_K_MAJOR`` tells the compiler which
  stride is 1.
* ``m_grouped_tma_kernel``: the same product without the gather, loading (and storing) the tiles that
  hold one group's rows through TMA descriptors; the GPU default when the operands allow it.
* ``k_grouped_kernel``: ``d[g] = (c[g] +) a[k_g]^T @ b[k_g]`` for groups laid out along K, each group a
  ``[k_start, k_end)`` range of K positions; with ``GATHER`` the rows of ``a`` (``a_fused``) or ``b``
  (``b_fused``) are gathered through an index per K position.

Under the Triton interpreter (``TRITON_INTERPRET=1``) ``tl.dot`` on BF16 operands is wrong in Triton 3.6:
the interpreter keeps BF16 as raw ``uint16`` bit patterns and hands them to ``numpy.matmul`` unconverted
(``create_dot`` only converts 8-bit floats). ``UPCAST=True`` converts the loaded BF16 tiles to FP32 before
``tl.dot``; it is set only in interpreter mode, so the compiled GPU kernels keep BF16 tensor-core inputs.
FP32 products of BF16 values are exact, so the interpreter results differ from the GPU's only by summation
order.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._common import interpreter_enabled
from ._triton_cache import debug_enabled, launch_scope

INTERPRET = interpreter_enabled()


def _install_interpreter_index_fix() -> None:
    """Interpreter only: make ``range()`` accept runtime bounds with NumPy >= 2.4.

    Triton 3.6's interpreter keeps scalars as 1-element arrays and converts loop bounds with
    ``int(array)``, which NumPy 2.4 rejects ("only 0-dimensional arrays can be converted to Python
    scalars"; triton-lang/triton#9171), so every ``for i in range(0, tl.cdiv(K, BLOCK_K))`` fails. This
    re-registers ``tensor.__index__`` through ``reshape(())``, the upstream fix. Compiled kernels are not
    affected; nothing is patched when the interpreter already works.
    """
    import numpy as np
    try:
        int(np.ones(1, dtype=np.int32))
        return  # old NumPy: nothing to fix
    except TypeError:
        pass
    try:
        from triton.runtime import interpreter as _interp
    except ImportError:
        return
    original = getattr(_interp, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_deep_gemm_index_fix", False):
        return

    def _index(self):
        data = np.asarray(self.handle.data)
        return int(data.reshape(()) if data.size == 1 else data)

    def patched(tensor, scope, *args, **kwargs):
        result = original(tensor, scope, *args, **kwargs)
        scope.set_attr(tensor, "__index__", _index)
        return result

    patched._deep_gemm_index_fix = True
    _interp._patch_lang_tensor = patched


if INTERPRET:
    _install_interpreter_index_fix()


def _cfg(bm, bn, bk, warps, stages, group_m=8, maxnreg=None):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages, maxnreg=maxnreg)


# Hopper-oriented candidates (also valid on Ampere; configs that exceed shared memory are dropped by
# the autotuner). BLOCK_M stays <= 128 for the m-grouped kernel: with 128-row aligned groups, larger
# tiles would straddle two groups and run the K loop twice.
M_GROUPED_CONFIGS = [
    _cfg(128, 256, 64, 8, 3),
    _cfg(128, 128, 64, 8, 4),
    _cfg(128, 128, 64, 4, 4),
    _cfg(128, 64, 64, 4, 4),
    _cfg(64, 256, 64, 4, 4),
    _cfg(64, 128, 64, 4, 4),
    _cfg(64, 64, 64, 4, 5),
]

# The TMA kernel's candidates: the same tiles, plus deeper pipelines (TMA stages cost no registers), and
# 128x128 tiles with 3 stages (96 KiB of shared memory) in register budgets that let two blocks share an
# SM (8 warps capped at 128 registers: the K loop does not spill, only the rare path for tiles that
# straddle groups; 4 warps fit in 255), so one block's epilogue and pipeline fill overlap the other's
# main loop, which matters for short K loops such as K = 2048.
M_GROUPED_TMA_CONFIGS = M_GROUPED_CONFIGS + [
    _cfg(128, 256, 64, 8, 4),
    _cfg(128, 128, 64, 8, 5),
    _cfg(128, 128, 128, 8, 3),
    _cfg(128, 256, 64, 8, 3, group_m=16),
    _cfg(128, 128, 64, 8, 4, group_m=4),
    _cfg(128, 128, 64, 8, 3, maxnreg=128),
    _cfg(128, 128, 64, 4, 3),
]

LARGE_M_BUCKET = 4   # M_BUCKET >= 4: more than 1024 rows (8 blocks of 128)


def prune_m_grouped_configs(configs, named_args, **kwargs):
    """Autotuner pre-filter: with more than 1024 rows, 64-row tiles are not tried (128-row tiles keep the
    tensor cores busier and read B half as often), which also halves the first call's compile time."""
    if named_args["M_BUCKET"] < LARGE_M_BUCKET:
        return configs
    return [c for c in configs if c.kwargs["BLOCK_M"] >= 128] or configs


K_GROUPED_CONFIGS = [
    _cfg(128, 256, 64, 8, 3),
    _cfg(256, 128, 64, 8, 3),
    _cfg(128, 128, 64, 8, 4),
    _cfg(128, 128, 64, 4, 4),
    _cfg(128, 128, 32, 4, 5),
    _cfg(64, 128, 64, 4, 4),
]


def interpret_config(m: int, n: int) -> dict:
    """Interpreter: one fixed config (no autotuning). Small tiles for small problems, so that test
    shapes still span several tiles and partial tiles; large tiles otherwise (the interpreter's cost
    grows with the number of programs, not with the tile size)."""
    if m * n <= 256 * 256:
        return {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}
    return {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 4}


@triton.jit
def _tile_coords(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Walk the tile grid in bands of GROUP_M rows of tiles, column by column inside a band, so that
    # consecutive programs share A rows and B columns in L2.
    tiles_per_band = GROUP_M * num_pid_n
    band = pid // tiles_per_band
    band_first_m = band * GROUP_M
    band_rows = tl.minimum(num_pid_m - band_first_m, GROUP_M)
    local = pid - band * tiles_per_band
    pid_m = band_first_m + local % band_rows
    pid_n = local // band_rows
    return pid_m, pid_n


@triton.jit
def _m_grouped_tile(idx_ptr, M, N, G, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's tile of an m-grouped kernel: its coordinates, row / column offsets and bounds, and the
    group id of every row (rows past M and ids outside [0, G) are not `valid`: padding)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = offs_m < M
    col_ok = offs_n < N
    ids = tl.load(idx_ptr + offs_m, mask=row_ok, other=-1)
    valid = (ids >= 0) & (ids < G)
    return pid_m, pid_n, offs_m, offs_n, row_ok, col_ok, ids, valid


@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def m_grouped_kernel(
    a_ptr, b_ptr, d_ptr, idx_ptr, rows_ptr,
    M, N, K, G,
    A_ROWS,                    # rows of a (== M unless A_GATHER)
    M_BUCKET,                  # autotuning key only: log2 of the number of 128-row blocks
    stride_am,                 # a [A_ROWS, K], unit stride along K
    stride_bg, stride_bk, stride_bn,
    stride_dm,                 # d [M, N], unit stride along N
    B_K_MAJOR: tl.constexpr,   # True: stride_bk == 1 (K-major b); False: stride_bn == 1 (MN-major b)
    A_GATHER: tl.constexpr,    # True: row r of d uses row rows_ptr[r] of a (a_fused); False: row r
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    pid_m, pid_n, offs_m, offs_n, row_ok, col_ok, ids, valid = _m_grouped_tile(idx_ptr, M, N, G, BLOCK_M, BLOCK_N,
                                                                                GROUP_M)
    if A_GATHER:
        # A source row outside [0, A_ROWS) (e.g. -1) makes the output row padding (zeros) as well.
        src = tl.load(rows_ptr + offs_m, mask=row_ok, other=-1)
        valid = valid & (src >= 0) & (src < A_ROWS)
    g_lo = tl.min(tl.where(valid, ids, G), axis=0)

    # Rows past M (and, for a K-major b, columns past N) are clamped to index 0 instead of masked:
    # they are computed and then dropped by the store mask. Only non-contiguous dimensions are clamped
    # (a clamped index loses its contiguity, which would stop vectorised loads); contiguous dimensions
    # are masked.
    # (2-D pointer tensors are built where they are used: kept live across the group loop they would
    # cost two registers per tile element.)
    lm = tl.where(row_ok, offs_m, 0).to(tl.int64)
    ln = tl.where(col_ok, offs_n, 0).to(tl.int64)
    if A_GATHER:
        la = tl.where(valid, src, 0).to(tl.int64)   # row 0 exists: the host never launches with A_ROWS == 0
    else:
        la = lm

    # Padding rows (id -1) are written with zeros so that d is fully defined.
    pad = row_ok & (~valid)
    if tl.max(pad.to(tl.int32), axis=0) > 0:
        zeros = tl.zeros((BLOCK_M, BLOCK_N), dtype=d_ptr.dtype.element_ty)
        tl.store(d_ptr + lm[:, None] * stride_dm + offs_n[None, :], zeros, mask=pad[:, None] & col_ok[None, :])

    # The aligned MoE layout: every valid row of the tile is in one group -> a single pass over K; a tile
    # that straddles groups runs _group_passes. (The general loop is kept out of the fast path: wrapped
    # around it, the loop costs register spills.)
    g_hi = tl.max(tl.where(valid, ids, -1), axis=0)
    if g_lo == g_hi:
        _group_pass(a_ptr, b_ptr, d_ptr, g_lo, valid, la, lm, ln, offs_n, col_ok, K, stride_am, stride_bg,
                    stride_bk, stride_bn, stride_dm, B_K_MAJOR, UPCAST, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K)
    else:
        _group_passes(a_ptr, b_ptr, d_ptr, g_lo, G, ids, valid, la, lm, ln, offs_n, col_ok, K, stride_am,
                      stride_bg, stride_bk, stride_bn, stride_dm, B_K_MAJOR, UPCAST, BLOCK_M, BLOCK_N, BLOCK_K,
                      EVEN_K)


@triton.jit
def _group_passes(a_ptr, b_ptr, d_ptr, g_lo, G, ids, valid, la, lm, ln, offs_n, col_ok, K, stride_am, stride_bg,
                  stride_bk, stride_bn, stride_dm, B_K_MAJOR: tl.constexpr, UPCAST: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr):
    """A tile that straddles groups: one pass per group present, from g_lo in increasing group order, each
    storing only its own rows. (A while loop: the interpreter cannot take a reduction result as a range()
    bound.)"""
    g = g_lo
    while g < G:
        _group_pass(a_ptr, b_ptr, d_ptr, g, valid & (ids == g), la, lm, ln, offs_n, col_ok, K, stride_am,
                    stride_bg, stride_bk, stride_bn, stride_dm, B_K_MAJOR, UPCAST, BLOCK_M, BLOCK_N, BLOCK_K,
                    EVEN_K)
        g = tl.min(tl.where(valid & (ids > g), ids, G), axis=0)


@triton.jit
def _group_pass(a_ptr, b_ptr, d_ptr, g, rows_g, la, lm, ln, offs_n, col_ok, K, stride_am, stride_bg, stride_bk,
                stride_bn, stride_dm, B_K_MAJOR: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr):
    """d[rows_g, tile columns] = a[la, :] @ B[g] for one tile, FP32 accumulation over all of K (``la``: the
    a row of each tile row, ``lm``: its d row)."""
    offs_k = tl.arange(0, BLOCK_K)
    b_base = b_ptr + g.to(tl.int64) * stride_bg
    if B_K_MAJOR:
        b_ptrs = b_base + ln[None, :] * stride_bn + offs_k[:, None]
        b_step = BLOCK_K
    else:
        b_ptrs = b_base + offs_k[:, None] * stride_bk + offs_n[None, :]
        b_step = BLOCK_K * stride_bk
    a_ptrs = a_ptr + la[:, None] * stride_am + offs_k[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            if B_K_MAJOR:
                b = tl.load(b_ptrs)
            else:
                b = tl.load(b_ptrs, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = offs_k < K - kb * BLOCK_K
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            if B_K_MAJOR:
                b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
            else:
                b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += b_step
    out = acc.to(d_ptr.dtype.element_ty)
    tl.store(d_ptr + lm[:, None] * stride_dm + offs_n[None, :], out, mask=rows_g[:, None] & col_ok[None, :])


def set_tma_blocks(nargs) -> None:
    """Autotuner pre-hook: the TMA descriptors' block shapes follow the config being run."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bn, bk] if nargs["B_K_MAJOR"] else [bk, bn]
    nargs["d_desc"].block_shape = [bm, bn]


@triton.jit
def _zero_padding_rows(d_ptr, lm, offs_n, pad, col_ok, stride_dm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if tl.max(pad.to(tl.int32), axis=0) > 0:
        zeros = tl.zeros((BLOCK_M, BLOCK_N), dtype=d_ptr.dtype.element_ty)
        tl.store(d_ptr + lm[:, None] * stride_dm + offs_n[None, :], zeros, mask=pad[:, None] & col_ok[None, :])


@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def m_grouped_tma_kernel(
    a_desc, b_desc,            # TMA descriptors: a [M, K]; b as 2-D [G*N, K] (K-major) or [G*K, N] (MN-major)
    d_desc,                    # TMA descriptor of d [M, N] (used with D_TMA only)
    a_ptr, b_ptr, d_ptr, idx_ptr,
    M, N, K, G,
    M_BUCKET,                  # autotuning key only
    stride_am, stride_bg, stride_bk, stride_bn, stride_dm,
    B_K_MAJOR: tl.constexpr, D_TMA: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    """``m_grouped_kernel`` (without the row gather) with TMA on the fast path: a tile whose rows all
    belong to one group loads its A and B blocks through tensor-memory-accelerator descriptors (no
    address arithmetic per element, hardware bounds handling) and, with ``D_TMA``, stores its D block
    through one too (padding rows zeroed in registers first). Tiles that straddle groups take the same
    pointer path as ``m_grouped_kernel``.

    Bounds: TMA fills reads past the descriptor's edge with zeros and drops writes past it. A's rows past
    M and columns past K read zeros. With a K-major b viewed as ``[G*N, K]``, the rows of a block past
    this group's N are the next group's rows: they only feed output columns >= N, which are never
    stored. An MN-major b viewed as ``[G*K, N]`` would read the next group's K rows in a partial K block,
    so the host uses this kernel for MN-major b only when K is a multiple of every BLOCK_K (checked here
    too).
    """
    tl.static_assert(B_K_MAJOR or EVEN_K, "MN-major b through TMA needs K % BLOCK_K == 0")
    pid_m, pid_n, offs_m, offs_n, row_ok, col_ok, ids, valid = _m_grouped_tile(idx_ptr, M, N, G, BLOCK_M, BLOCK_N,
                                                                                GROUP_M)
    g_lo = tl.min(tl.where(valid, ids, G), axis=0)
    g_hi = tl.max(tl.where(valid, ids, -1), axis=0)
    lm = tl.where(row_ok, offs_m, 0).to(tl.int64)
    pad = row_ok & (~valid)

    if g_lo == g_hi:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        m0 = pid_m * BLOCK_M
        n0 = pid_n * BLOCK_N
        for kb in range(0, tl.cdiv(K, BLOCK_K)):
            k0 = kb * BLOCK_K
            a = a_desc.load([m0, k0])
            if B_K_MAJOR:
                b = b_desc.load([g_lo * N + n0, k0]).T
            else:
                b = b_desc.load([g_lo * K + k0, n0])
            if UPCAST:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        if D_TMA:
            d_desc.store([m0, n0], tl.where(valid[:, None], acc, 0.0).to(d_ptr.dtype.element_ty))
        else:
            _zero_padding_rows(d_ptr, lm, offs_n, pad, col_ok, stride_dm, BLOCK_M, BLOCK_N)
            tl.store(d_ptr + lm[:, None] * stride_dm + offs_n[None, :], acc.to(d_ptr.dtype.element_ty),
                     mask=valid[:, None] & col_ok[None, :])
    else:
        _zero_padding_rows(d_ptr, lm, offs_n, pad, col_ok, stride_dm, BLOCK_M, BLOCK_N)
        ln = tl.where(col_ok, offs_n, 0).to(tl.int64)
        _group_passes(a_ptr, b_ptr, d_ptr, g_lo, G, ids, valid, lm, lm, ln, offs_n, col_ok, K, stride_am,
                      stride_bg, stride_bk, stride_bn, stride_dm, B_K_MAJOR, UPCAST, BLOCK_M, BLOCK_N, BLOCK_K,
                      EVEN_K)


@triton.jit
def k_grouped_kernel(
    a_ptr, b_ptr, c_ptr, d_ptr, k_start_ptr, k_end_ptr, k_idx_ptr,
    M, N,
    K,                         # number of K positions (rows of the operand that is not gathered)
    SRC_ROWS,                  # rows of the gathered operand (GATHER != 0)
    stride_ak,                 # a [*, M], unit stride along M
    stride_bk,                 # b [*, N], unit stride along N
    stride_cg, stride_cm,      # c [G, M, N], unit stride along N
    stride_dg, stride_dm,      # d [G, M, N], unit stride along N
    GATHER: tl.constexpr,      # 0: none; 1: K position k reads row k_idx[k] of a (a_fused); 2: of b (b_fused)
    HAS_C: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    g = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)

    # Group g owns K positions [k_start[g], k_end[g]), clamped to [0, K] (the bounds may be device data
    # the host never sees); an empty range leaves d[g] = c[g] (or zeros).
    k_start = tl.maximum(tl.load(k_start_ptr + g), 0)
    k_end = tl.minimum(tl.load(k_end_ptr + g), K)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = offs_m < M
    col_ok = offs_n < N
    mask = row_ok[:, None] & col_ok[None, :]
    g64 = g.to(tl.int64)
    m64 = offs_m.to(tl.int64)
    if HAS_C:
        # Start from c (rather than adding it after the loop, which would hold a second FP32 tile).
        acc = tl.load(c_ptr + g64 * stride_cg + m64[:, None] * stride_cm + offs_n[None, :], mask=mask, other=0.0)
        acc = acc.to(tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)

    # a is read as an [BLOCK_M, BLOCK_K] tile of a^T (M contiguous), b as [BLOCK_K, BLOCK_N] (N
    # contiguous); every load is masked along K (group edges) and along its contiguous M or N. A gathered
    # operand reads the row named by k_idx; a name outside [0, SRC_ROWS) (e.g. -1) reads zeros.
    for k0 in range(k_start, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_ok = offs_k < k_end
        a_row = offs_k.to(tl.int64)
        b_row = offs_k.to(tl.int64)
        a_ok = k_ok
        b_ok = k_ok
        if GATHER != 0:
            src = tl.load(k_idx_ptr + offs_k, mask=k_ok, other=-1)
            src_ok = k_ok & (src >= 0) & (src < SRC_ROWS)
            if GATHER == 1:
                a_row = src.to(tl.int64)
                a_ok = src_ok
            else:
                b_row = src.to(tl.int64)
                b_ok = src_ok
        a = tl.load(a_ptr + a_row[None, :] * stride_ak + offs_m[:, None], mask=a_ok[None, :] & row_ok[:, None],
                    other=0.0)
        b = tl.load(b_ptr + b_row[:, None] * stride_bk + offs_n[None, :], mask=b_ok[:, None] & col_ok[None, :],
                    other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)

    tl.store(d_ptr + g64 * stride_dg + m64[:, None] * stride_dm + offs_n[None, :],
             acc.to(d_ptr.dtype.element_ty), mask=mask)


if INTERPRET:
    # The autotuner times configs with CUDA events; the interpreter runs one fixed config instead.
    m_grouped_kernel_tuned = None
    m_grouped_tma_kernel_tuned = None
    k_grouped_kernel_tuned = None
else:
    _prune = {"early_config_prune": prune_m_grouped_configs}
    m_grouped_kernel_tuned = triton.autotune(configs=M_GROUPED_CONFIGS, prune_configs_by=_prune,
                                             key=["N", "K", "M_BUCKET", "B_K_MAJOR", "A_GATHER"])(m_grouped_kernel)
    m_grouped_tma_kernel_tuned = triton.autotune(
        configs=[triton.Config(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages, maxnreg=c.maxnreg,
                               pre_hook=set_tma_blocks) for c in M_GROUPED_TMA_CONFIGS],
        key=["N", "K", "M_BUCKET", "B_K_MAJOR"], prune_configs_by=_prune)(m_grouped_tma_kernel)
    # d may alias c (in-place accumulation), so every timed run must start from the original d.
    k_grouped_kernel_tuned = triton.autotune(configs=K_GROUPED_CONFIGS, key=["M", "N", "HAS_C", "GATHER"],
                                             restore_value=["d_ptr"])(k_grouped_kernel)


def launch(kernel, grid, args, consts: dict, device) -> None:
    """Launch ``kernel`` (a JITFunction, or its autotuned wrapper) on ``device``'s current stream.

    Compiles happen inside this call, so Triton's cache directory and the ``DG_JIT_DEBUG`` compile log
    are set around it (``_triton_cache.launch_scope``). A plain JITFunction gets ``num_warps`` /
    ``num_stages`` from ``consts`` (defaults 4 / 3) on the GPU; the interpreter takes neither.
    """
    consts = dict(consts)
    if device.type != "cuda":
        consts.pop("num_warps", None)
        consts.pop("num_stages", None)
        kernel[grid](*args, **consts)
        return
    if not isinstance(kernel, triton.runtime.Autotuner):
        consts.setdefault("num_warps", 4)
        consts.setdefault("num_stages", 3)
    import torch
    with torch.cuda.device(device), launch_scope(debug_enabled()):   # environment read per launch
        kernel[grid](*args, **consts)
