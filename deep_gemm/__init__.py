"""deep_gemm: JIT-compiled FP8/BF16 GEMM kernels for NVIDIA Hopper (sm_90a) with DeepGEMM's Python API.

Kernels are compiled on first use for each configuration (NVCC, or NVRTC with ``DG_JIT_USE_NVRTC=1``),
cached under ``$DG_JIT_CACHE_DIR`` (default ``~/.deep_gemm``) and launched on the current torch stream.
``import deep_gemm`` needs neither a GPU nor a CUDA driver (nor Triton).

Conventions (SM90): ``D = C + A @ B.T`` ("nt"). FP8 operands are ``(tensor, scales)`` pairs:
``a = (float8_e4m3fn [M, K], float32 sfa [M, ceil(K/128)])``, ``b = (float8_e4m3fn [N, K], float32 sfb
[ceil(N/128), ceil(K/128)])`` for the default recipe ``(1, 128, 128)``. Both operands must be K-major in
memory (stride 1 along K); ``nn``/``tn``/``tt`` only change which dims the arguments name. TMA needs
16-byte aligned base pointers and row strides. ``sfa`` is read M-major with the M stride padded to a
multiple of 4 (:func:`get_mn_major_tma_aligned_tensor`); other layouts are converted on every call.

Errors: wrong dtype -> ``TypeError``; wrong shape/stride/alignment/overlap -> ``ValueError``; wrong or
mixed devices -> ``RuntimeError``; a kernel this build does not have yet, or a non-Hopper GPU ->
``NotImplementedError``. JIT problems (compiler missing, bad ``DG_*`` value) -> ``RuntimeError``.
Logging goes to the ``logging`` logger ``"deep_gemm"``.

Every op is also a ``torch.library`` op (``torch.ops.deep_gemm.<name>``, ``d`` mutated in place, meta
kernels for FakeTensor), so the functions below work under ``torch.compile(fullgraph=True)``; in eager
mode they call the C++ entry directly (no dispatcher). CUDA graphs: run each shape once before capturing
(the first call compiles and loads the kernel, which must not happen during capture).
"""

import atexit as _atexit
import os as _os
from typing import Optional, Sequence, Tuple

import torch

from ._version import __version__
from . import _C

_C.set_include_dir(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), 'include'))
_atexit.register(_C._uninstall_python_logging)

from . import testing, utils  # noqa: E402
from .utils import align, ceil_div, per_block_cast_to_fp8, per_token_cast_to_fp8  # noqa: E402,F401

# Runtime knobs and JIT tools (plain C++ functions)
from ._C import (  # noqa: E402,F401
    compile_only,
    get_ignore_compile_dims,
    get_mk_alignment_for_contiguous_layout,
    get_num_sms,
    get_pdl,
    get_settings,
    get_theoretical_mk_alignment_for_contiguous_layout,
    reload_settings,
    set_ignore_compile_dims,
    set_mk_alignment_for_contiguous_layout,
    set_num_sms,
    set_pdl,
)

Tensor = torch.Tensor
FP8Operand = Tuple[Tensor, Tensor]
Recipe = Optional[Sequence[int]]

# Dynamo replaces this call with True while tracing (torch.compile / torch.export); in eager mode it is
# a trivial function. The wrappers below then call the torch.library op, which FX can record, instead
# of the C++ fast path.
_tracing = torch.compiler.is_dynamo_compiling
_ops = torch.ops.deep_gemm

# The C entries, bound to module globals so an eager call costs one lookup.
_c_get_mn_major_tma_aligned_tensor = _C.get_mn_major_tma_aligned_tensor
_c_transform_sf_into_required_layout = _C.transform_sf_into_required_layout
_c_fp8_gemm_nt = _C.fp8_gemm_nt
_c_fp8_gemm_nn = _C.fp8_gemm_nn
_c_fp8_gemm_tn = _C.fp8_gemm_tn
_c_fp8_gemm_tt = _C.fp8_gemm_tt
_c_m_grouped_fp8_gemm_nt_contiguous = _C.m_grouped_fp8_gemm_nt_contiguous
_c_m_grouped_fp8_gemm_nt_masked = _C.m_grouped_fp8_gemm_nt_masked
_c_k_grouped_fp8_gemm_nt_contiguous = _C.k_grouped_fp8_gemm_nt_contiguous
_c_bf16_gemm_nt = _C.bf16_gemm_nt
_c_bf16_gemm_nn = _C.bf16_gemm_nn
_c_bf16_gemm_tn = _C.bf16_gemm_tn
_c_bf16_gemm_tt = _C.bf16_gemm_tt
_c_m_grouped_bf16_gemm_nt_contiguous = _C.m_grouped_bf16_gemm_nt_contiguous
_c_m_grouped_bf16_gemm_nt_masked = _C.m_grouped_bf16_gemm_nt_masked
_c_k_grouped_bf16_gemm_tn_contiguous = _C.k_grouped_bf16_gemm_tn_contiguous


# ---- layout utilities ---------------------------------------------------------------------------------

def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``x`` rounded up to whole 16-byte TMA units of ``element_size``-byte elements
    (e.g. ``get_tma_aligned_size(130, 4) == 132``)."""
    if element_size <= 0 or 16 % element_size != 0:
        raise ValueError(f'get_tma_aligned_size: element_size must divide 16 (1, 2, 4, 8 or 16 bytes); got {element_size}')
    if x < 0:
        raise ValueError(f'get_tma_aligned_size: x must be non-negative; got {x}')
    unit = 16 // element_size
    return (x + unit - 1) // unit * unit


def get_mn_major_tma_aligned_tensor(sf: Tensor) -> Tensor:
    """FP32 scales ``sf`` (``[M, K']`` or ``[G, M, K']``) in the layout the SM90 kernels read: same
    shape, M-major (``stride(-2) == 1``), ``stride(-1) == align(M, 4)``, groups packed
    (``stride(0) == align(M, 4) * K'``), padding rows zero.

    Returns ``sf`` itself when it already has that layout (free), else a new tensor written by a JIT
    CUDA kernel on the current stream (CPU tensors: a torch fallback)."""
    if _tracing():
        return _ops.get_mn_major_tma_aligned_tensor(sf)
    return _c_get_mn_major_tma_aligned_tensor(sf)


def transform_sf_into_required_layout(sf: Tensor, mn: int, k: int, recipe: Sequence[int], num_groups: Optional[int] = None,
                                      is_sfa: bool = False, disable_ue8m0_cast: bool = False) -> Tensor:
    """Checks scales against the problem and returns them in the kernel layout.

    ``sf`` is ``[ceil(mn/g_mn), ceil(k/g_k)]`` (``[num_groups, ...]`` when grouped) float32, where
    ``g_mn = recipe[0]`` for ``is_sfa`` else ``recipe[1]`` and ``g_k = recipe[2]``. Granularity
    ``(1, 128)`` -> :func:`get_mn_major_tma_aligned_tensor`; ``(128, 128)`` -> contiguous. Input already
    in that layout is returned as is. ``disable_ue8m0_cast`` is accepted for DeepGEMM compatibility
    (SM90 keeps FP32 scales)."""
    if _tracing():
        return _ops.transform_sf_into_required_layout(sf, mn, k, list(recipe), num_groups, is_sfa, disable_ue8m0_cast)
    return _c_transform_sf_into_required_layout(sf, mn, k, recipe, num_groups, is_sfa, disable_ue8m0_cast)


# ---- FP8 GEMMs ----------------------------------------------------------------------------------------

def fp8_gemm_nt(a: FP8Operand, b: FP8Operand, d: Tensor, c: Optional[Tensor] = None, recipe: Recipe = None,
                compiled_dims: str = 'nk', disable_ue8m0_cast: bool = False) -> None:
    """``d = c + a @ b.T`` with FP8 operands, written into ``d`` in place.

    - ``a = (A float8_e4m3fn [M, K] K-major, sfa float32 [M, ceil(K/128)])``
    - ``b = (B float8_e4m3fn [N, K] K-major, sfb float32 [ceil(N/128), ceil(K/128)])``
    - ``d``: ``[M, N]`` N-major; bfloat16 for recipe ``(1, 128, 128)`` (default, the 1D2D kernel),
      float32 for ``(1, 1, 128)`` (1D1D kernel, per-row B scales ``sfb [N, ceil(K/128)]``).
    - ``c``: optional ``[M, N]`` added to the product (bfloat16 or float32; with a bfloat16 ``d`` the
      addition happens after the kernel in ``c``'s precision, then rounds to bfloat16; with recipe
      ``(1, 1, 128)`` ``c`` is float32 and the kernel adds it in FP32 as it stores). ``c`` may be ``d``.
    - Alignment (TMA): A/B base pointers 16-byte aligned, row strides multiples of 16 bytes (K % 16 == 0
      for contiguous FP8 rows). ``d`` only needs ``stride(-1) == 1``; 16-byte aligned rows take the
      faster TMA-store epilogue.
    - ``compiled_dims``: which of ``m``, ``n``, ``k`` are compile-time constants of the kernel.
    - Empty problems: ``M == 0`` or ``N == 0`` returns; ``K == 0`` sets ``d = c`` (or zeros).
    """
    if _tracing():
        return _ops.fp8_gemm_nt(a[0], a[1], b[0], b[1], d, c, recipe, compiled_dims, disable_ue8m0_cast)
    _c_fp8_gemm_nt(a, b, d, c, recipe, compiled_dims, disable_ue8m0_cast)


def fp8_gemm_nn(a: FP8Operand, b: FP8Operand, d: Tensor, c: Optional[Tensor] = None, recipe: Recipe = None,
                compiled_dims: str = 'nk', disable_ue8m0_cast: bool = False) -> None:
    """``d = c + a @ b`` with ``b = (B [K, N], sfb [ceil(K/128), ceil(N/128)])``. ``B`` must still be
    K-major in memory (``B.stride(0) == 1``, e.g. ``W.t()`` of a row-major ``W [N, K]``). See
    :func:`fp8_gemm_nt`."""
    if _tracing():
        return _ops.fp8_gemm_nn(a[0], a[1], b[0], b[1], d, c, recipe, compiled_dims, disable_ue8m0_cast)
    _c_fp8_gemm_nn(a, b, d, c, recipe, compiled_dims, disable_ue8m0_cast)


def fp8_gemm_tn(a: FP8Operand, b: FP8Operand, d: Tensor, c: Optional[Tensor] = None, recipe: Recipe = None,
                compiled_dims: str = 'mn', disable_ue8m0_cast: bool = False) -> None:
    """``d = c + a.T @ b`` with ``a = (A [K, M], sfa [ceil(K/128), M])`` and ``b = (B [K, N], sfb
    [ceil(K/128), ceil(N/128)])``; both K-major in memory (``stride(0) == 1``). See :func:`fp8_gemm_nt`."""
    if _tracing():
        return _ops.fp8_gemm_tn(a[0], a[1], b[0], b[1], d, c, recipe, compiled_dims, disable_ue8m0_cast)
    _c_fp8_gemm_tn(a, b, d, c, recipe, compiled_dims, disable_ue8m0_cast)


def fp8_gemm_tt(a: FP8Operand, b: FP8Operand, d: Tensor, c: Optional[Tensor] = None, recipe: Recipe = None,
                compiled_dims: str = 'mn', disable_ue8m0_cast: bool = False) -> None:
    """``d = c + a.T @ b.T`` with ``a = (A [K, M], sfa [ceil(K/128), M])`` (K-major in memory:
    ``A.stride(0) == 1``) and ``b`` as in :func:`fp8_gemm_nt`."""
    if _tracing():
        return _ops.fp8_gemm_tt(a[0], a[1], b[0], b[1], d, c, recipe, compiled_dims, disable_ue8m0_cast)
    _c_fp8_gemm_tt(a, b, d, c, recipe, compiled_dims, disable_ue8m0_cast)


def m_grouped_fp8_gemm_nt_contiguous(a: FP8Operand, b: FP8Operand, d: Tensor, grouped_layout: Tensor, recipe: Recipe = None,
                                     compiled_dims: str = 'nk', disable_ue8m0_cast: bool = False,
                                     use_psum_layout: bool = False) -> None:
    """Grouped GEMM over row blocks: ``d[rows of g] = a[rows of g] @ b[g].T``.

    - ``a = (float8_e4m3fn [ΣM, K], sfa float32 [ΣM, ceil(K/128)])``,
      ``b = (float8_e4m3fn [G, N, K], sfb float32 [G, ceil(N/128), ceil(K/128)])``, ``d`` bfloat16 ``[ΣM, N]``.
    - ``grouped_layout`` int32 on the GPU: ``[ΣM]`` group id per row (-1 for padding rows; each group
      starts at a multiple of :func:`get_mk_alignment_for_contiguous_layout`), or with
      ``use_psum_layout=True`` ``[G]`` group ends: group ``g`` owns rows ``[align(end[g-1]), end[g])`` with
      ``end = grouped_layout``, ``end[-1] = 0`` and ``align`` rounding up to
      :func:`get_mk_alignment_for_contiguous_layout` (ends non-decreasing; an empty group has its end at its
      start). Rows outside every group are padding: their ``d`` rows are unspecified.
    """
    if _tracing():
        return _ops.m_grouped_fp8_gemm_nt_contiguous(a[0], a[1], b[0], b[1], d, grouped_layout, recipe, compiled_dims,
                                                     disable_ue8m0_cast, use_psum_layout)
    _c_m_grouped_fp8_gemm_nt_contiguous(a, b, d, grouped_layout, recipe, compiled_dims, disable_ue8m0_cast, use_psum_layout)


def m_grouped_fp8_gemm_nt_masked(a: FP8Operand, b: FP8Operand, d: Tensor, masked_m: Tensor, expected_m: int,
                                 recipe: Recipe = None, compiled_dims: str = 'nk', disable_ue8m0_cast: bool = False) -> None:
    """Batched GEMM where group ``g`` uses only its first ``masked_m[g]`` rows:
    ``d[g, :masked_m[g]] = a[g, :masked_m[g]] @ b[g].T``.

    - ``a = (float8_e4m3fn [G, maxM, K], sfa float32 [G, maxM, ceil(K/128)])``,
      ``b = (float8_e4m3fn [G, N, K], sfb float32 [G, ceil(N/128), ceil(K/128)])``, ``d`` bfloat16 ``[G, maxM, N]``.
    - ``masked_m`` int32 ``[G]`` on the GPU (read by the kernel: no host sync, CUDA-graph safe);
      ``expected_m`` > 0 is a host-side hint of the typical rows per group (config choice only).
    """
    if _tracing():
        return _ops.m_grouped_fp8_gemm_nt_masked(a[0], a[1], b[0], b[1], d, masked_m, expected_m, recipe, compiled_dims,
                                                 disable_ue8m0_cast)
    _c_m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m, recipe, compiled_dims, disable_ue8m0_cast)


def k_grouped_fp8_gemm_nt_contiguous(a: FP8Operand, b: FP8Operand, d: Tensor, ks: Sequence[int], ks_tensor: Tensor,
                                     c: Optional[Tensor] = None, recipe: Sequence[int] = (1, 1, 128),
                                     compiled_dims: str = 'mn') -> None:
    """Grouped GEMM over K blocks (weight gradients): ``d[g] = c[g] + A_g @ B_g.T`` with ``A_g [M, k_g]``.

    - ``a = (float8_e4m3fn, contiguous, Σ_g M*k_g elements: each group's K-major ``[M, k_g]`` block
      back to back; sfa float32 [Σ k_g/128, M])``, ``b`` likewise with N.
    - ``d`` float32 ``[G, M, N]`` contiguous; ``c`` optional float32 ``[G, M, N]`` (may be ``d``).
    - ``ks``: the K of each group (host ints, multiples of 128); ``ks_tensor``: the same as int32 ``[G]``
      on the GPU. ``recipe`` must be ``(1, 1, 128)``.
    - Groups with ``k_g == 0`` get ``d[g] = c[g]`` (or zeros). The host ``ks`` drive the computation (one
      1D1D kernel launch per non-empty group); ``ks_tensor`` must hold the same values.
    """
    if _tracing():
        return _ops.k_grouped_fp8_gemm_nt_contiguous(a[0], a[1], b[0], b[1], d, list(ks), ks_tensor, c, list(recipe),
                                                     compiled_dims)
    _c_k_grouped_fp8_gemm_nt_contiguous(a, b, d, ks, ks_tensor, c, recipe, compiled_dims)


# ---- BF16 GEMMs ---------------------------------------------------------------------------------------

def bf16_gemm_nt(a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor] = None, compiled_dims: str = 'nk') -> None:
    """``d = c + a @ b.T``: ``a`` bfloat16 ``[M, K]``, ``b`` bfloat16 ``[N, K]`` (each K-major or MN-major
    in memory; the row stride must be a multiple of 8 elements), ``d`` ``[M, N]`` bfloat16 or float32,
    N-major. ``c``: optional ``[M, N]`` bfloat16/float32 added in the kernel's epilogue (converted to
    ``d``'s dtype first when it differs; ``c`` may be ``d``). TMA alignment as in :func:`fp8_gemm_nt`.
    For tuning, ``DG_BF16_GEMM_CONFIG="block_m,block_n,stages[,multicast]"`` forces the kernel config of the
    four dense BF16 ops (README; call :func:`reload_settings` after changing it)."""
    if _tracing():
        return _ops.bf16_gemm_nt(a, b, d, c, compiled_dims)
    _c_bf16_gemm_nt(a, b, d, c, compiled_dims)


def bf16_gemm_nn(a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor] = None, compiled_dims: str = 'nk') -> None:
    """``d = c + a @ b`` with ``b`` ``[K, N]``. See :func:`bf16_gemm_nt`."""
    if _tracing():
        return _ops.bf16_gemm_nn(a, b, d, c, compiled_dims)
    _c_bf16_gemm_nn(a, b, d, c, compiled_dims)


def bf16_gemm_tn(a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor] = None, compiled_dims: str = 'mn') -> None:
    """``d = c + a.T @ b`` with ``a`` ``[K, M]``, ``b`` ``[K, N]``. See :func:`bf16_gemm_nt`."""
    if _tracing():
        return _ops.bf16_gemm_tn(a, b, d, c, compiled_dims)
    _c_bf16_gemm_tn(a, b, d, c, compiled_dims)


def bf16_gemm_tt(a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor] = None, compiled_dims: str = 'mn') -> None:
    """``d = c + a.T @ b.T`` with ``a`` ``[K, M]``, ``b`` ``[N, K]``. See :func:`bf16_gemm_nt`."""
    if _tracing():
        return _ops.bf16_gemm_tt(a, b, d, c, compiled_dims)
    _c_bf16_gemm_tt(a, b, d, c, compiled_dims)


def m_grouped_bf16_gemm_nt_contiguous(a: Tensor, b: Tensor, d: Tensor, grouped_layout: Tensor, compiled_dims: str = 'nk',
                                      use_psum_layout: bool = False) -> None:
    """BF16 version of :func:`m_grouped_fp8_gemm_nt_contiguous`: ``a [ΣM, K]``, ``b [G, N, K]``, ``d [ΣM, N]``."""
    if _tracing():
        return _ops.m_grouped_bf16_gemm_nt_contiguous(a, b, d, grouped_layout, compiled_dims, use_psum_layout)
    _c_m_grouped_bf16_gemm_nt_contiguous(a, b, d, grouped_layout, compiled_dims, use_psum_layout)


def m_grouped_bf16_gemm_nt_masked(a: Tensor, b: Tensor, d: Tensor, masked_m: Tensor, expected_m: int,
                                  compiled_dims: str = 'nk') -> None:
    """BF16 version of :func:`m_grouped_fp8_gemm_nt_masked`: ``a [G, maxM, K]``, ``b [G, N, K]``, ``d [G, maxM, N]``."""
    if _tracing():
        return _ops.m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m, compiled_dims)
    _c_m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m, compiled_dims)


def k_grouped_bf16_gemm_tn_contiguous(a: Tensor, b: Tensor, d: Tensor, ks: Sequence[int], ks_tensor: Tensor,
                                      c: Optional[Tensor] = None, compiled_dims: str = 'mn') -> None:
    """Grouped GEMM over K blocks (weight gradients of a grouped linear layer), in place into ``d``:
    ``d[g] = c[g] + a[K_g].T @ b[K_g]`` for each group ``g``, where ``K_g`` is the row range
    ``[ks[0] + ... + ks[g-1], + ks[g])``; without ``c``, ``d[g] = a[K_g].T @ b[K_g]``.

    - ``a``: bfloat16 ``[sum(ks), M]``, contiguous (the groups' rows back to back); ``b``: bfloat16
      ``[sum(ks), N]``, contiguous. ``M`` and ``N`` must be multiples of 8 (TMA reads 16-byte rows); base
      pointers 16-byte aligned.
    - ``d``: float32 ``[G, M, N]``, contiguous. ``c``: optional float32 ``[G, M, N]``, contiguous; it may be
      ``d`` itself (accumulate in place).
    - ``ks``: the K of each group, ``G`` host ints, each a non-negative multiple of 128; ``ks[g] == 0``
      gives ``d[g] = c[g]`` (or zeros). ``ks_tensor``: the same values as an int32 ``[G]`` tensor on the GPU
      (read by the kernel; it is not compared with ``ks``, which would need a device sync).
    - ``compiled_dims``: which of ``m``, ``n`` are compile-time constants (K never is: it varies per group).
    - The kernel config depends on ``M``, ``N``, ``G`` and the average K rounded up to a power of two, so
      changing ``ks`` rarely compiles a new kernel.
    """
    if _tracing():
        return _ops.k_grouped_bf16_gemm_tn_contiguous(a, b, d, list(ks), ks_tensor, c, compiled_dims)
    _c_k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c, compiled_dims)


def __getattr__(name: str):
    # `deep_gemm.legacy` (Triton kernels) is imported on first use so `import deep_gemm` stays light.
    if name == 'legacy':
        import importlib
        return importlib.import_module('.legacy', __name__)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


__all__ = [
    '__version__',
    # GEMMs
    'fp8_gemm_nt', 'fp8_gemm_nn', 'fp8_gemm_tn', 'fp8_gemm_tt',
    'm_grouped_fp8_gemm_nt_contiguous', 'm_grouped_fp8_gemm_nt_masked', 'k_grouped_fp8_gemm_nt_contiguous',
    'bf16_gemm_nt', 'bf16_gemm_nn', 'bf16_gemm_tn', 'bf16_gemm_tt',
    'm_grouped_bf16_gemm_nt_contiguous', 'm_grouped_bf16_gemm_nt_masked', 'k_grouped_bf16_gemm_tn_contiguous',
    # layout
    'get_tma_aligned_size', 'get_mn_major_tma_aligned_tensor', 'transform_sf_into_required_layout',
    # knobs and JIT
    'set_num_sms', 'get_num_sms', 'set_pdl', 'get_pdl', 'set_ignore_compile_dims', 'get_ignore_compile_dims',
    'set_mk_alignment_for_contiguous_layout', 'get_mk_alignment_for_contiguous_layout',
    'get_theoretical_mk_alignment_for_contiguous_layout', 'reload_settings', 'get_settings', 'compile_only',
    # helpers
    'utils', 'testing', 'ceil_div', 'align', 'per_token_cast_to_fp8', 'per_block_cast_to_fp8',
]
