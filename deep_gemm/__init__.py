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
from . import _build_stamp
# An extension built for another torch fails to load with an undefined C++ symbol; say which torch and how to rebuild.
_build_stamp.check_torch(_build_stamp.read_record(_os.path.dirname(_os.path.abspath(__file__))), torch.__version__)
from . import _C  # noqa: E402

_C.set_include_dir(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), 'include'))
_atexit.register(_C._uninstall_python_logging)
from ._log_setup import make_debug_output_visible as _make_debug_output_visible  # noqa: E402
_make_debug_output_visible()  # DG_PRINT_CONFIGS etc. print to stderr without any logging set-up
from ._warmup import warmup  # noqa: E402,F401  (compile recorded or listed kernels ahead of a job: python -m deep_gemm warmup)

from . import testing, utils  # noqa: E402
from .utils import *  # noqa: E402,F401,F403  (DeepGEMM re-exports all of deep_gemm.utils)
from .utils import __all__ as _utils_all  # noqa: E402
from ._compat import (  # noqa: E402,F401
    _resolve_recipe,
    einsum, fp8_einsum, fp8_fp4_mqa_logits, fp8_fp4_paged_mqa_logits, fp8_mqa_logits,
    fp8_paged_mqa_logits, get_paged_mqa_logits_metadata, k_grouped_fp8_gemm_tn_contiguous, tf32_hc_prenorm_gemm,
    get_mqa_logits_metadata,
)

# Runtime knobs and JIT tools (plain C++ functions)
from ._C import (  # noqa: E402,F401
    compile_only,
    get_ignore_compile_dims,
    get_block_size_multiple_of,
    get_mk_alignment_for_contiguous_layout,
    get_num_sms,
    get_pdl,
    get_settings,
    get_tc_util,
    get_theoretical_mk_alignment_for_contiguous_layout,
    reload_settings,
    set_block_size_multiple_of,
    set_ignore_compile_dims,
    set_mk_alignment_for_contiguous_layout,
    set_num_sms,
    set_pdl,
    set_tc_util,
)

Tensor = torch.Tensor
FP8Operand = Tuple[Tensor, Tensor]
Recipe = Optional[Sequence[int]]

# Dynamo replaces this call with True while tracing (torch.compile / torch.export); in eager mode it is
# a trivial function. The wrappers then call the torch.library op, which FX can record, instead of the
# C++ fast path.
_tracing = torch.compiler.is_dynamo_compiling
_ops = torch.ops.deep_gemm

_c_transform_sf_into_required_layout = _C.transform_sf_into_required_layout

# ---- GEMMs: one wrapper per row of the C++ op table (csrc/python/gemm_table.hpp) ------------------------
# deep_gemm/_wrappers.py is generated from the table by scripts/gen_stubs.py: fp8_gemm_{nt,nn,tn,tt},
# m_grouped_fp8_gemm_nt_{contiguous,masked}, k_grouped_fp8_gemm_nt_contiguous, bf16_gemm_{nt,nn,tn,tt},
# m_grouped_bf16_gemm_nt_{contiguous,masked}, k_grouped_bf16_gemm_tn_contiguous and fp8_gemm_nt_skip_head_mid,
# each with DeepGEMM's signature and its docstring from _gemm_docs.py; also cublaslt_gemm_{nt,nn,tn,tt} (rows of
# csrc/python/op_table.hpp whose wrapper is generated).
from . import _wrappers  # noqa: E402
from ._wrappers import *  # noqa: E402,F401,F403


# ---- layout utilities ---------------------------------------------------------------------------------

def transform_sf_into_required_layout(sf: Tensor, mn: int, k: int, recipe: Sequence[int], num_groups: Optional[int] = None,
                                      is_sfa: Optional[bool] = None, disable_ue8m0_cast: bool = False, psum_layout=None) -> Tensor:
    """Checks scales against the problem and returns them in the kernel layout.

    ``sf`` is ``[ceil(mn/g_mn), ceil(k/g_k)]`` (``[num_groups, ...]`` when grouped) float32, where
    ``g_mn = recipe[0]`` for ``is_sfa`` else ``recipe[1]`` and ``g_k = recipe[2]``. Granularity
    ``(1, 128)`` -> :func:`get_mn_major_tma_aligned_tensor`; ``(128, 128)`` -> contiguous. Input already
    in that layout is returned as is. ``recipe`` may also be the operand's own ``(g_mn, g_k)``.
    ``disable_ue8m0_cast`` and ``psum_layout`` are accepted for DeepGEMM compatibility: SM90 keeps FP32
    scales, whose layout does not depend on the grouping. ``is_sfa=None`` means ``False``."""
    if _tracing():
        if len(recipe) == 2:
            recipe = (recipe[0], 128, recipe[1]) if is_sfa else (1, recipe[0], recipe[1])
        return _ops.transform_sf_into_required_layout(sf, mn, k, list(recipe), num_groups, bool(is_sfa), disable_ue8m0_cast)
    return _c_transform_sf_into_required_layout(sf, mn, k, recipe, num_groups, is_sfa, disable_ue8m0_cast, psum_layout)


# ---- the "nn" M-grouped GEMMs: the "nt" ops on a transposed view of B -------------------------------------
# The nn wrapper checks what it touches itself (b's type and rank) before transposing, and the nt op's
# validation errors are raised again under the nn name, so every error names the op the caller called.

def _nn_tensor_3d(op: str, name: str, t, dims: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f'{op}: {name} must be a torch.Tensor; got {type(t).__name__}')
    if t.dim() != 3:
        raise ValueError(f'{op}: {name} must be a 3-D tensor {dims}; got {t.dim()}-D with shape {list(t.shape)}')


def _nn_call(op: str, nt_op, *args) -> None:
    nt_name = nt_op.__name__
    try:
        nt_op(*args)
    except (TypeError, ValueError, RuntimeError, NotImplementedError) as e:
        message = str(e)
        if not message.startswith(nt_name + ':'):
            raise
        import re
        # b and sfb reached the nt op transposed: their shapes in the message are those of the [G, N, K] views
        note = ' (b and sfb as the nt op sees them: b.transpose(1, 2))' if re.search(r'\b(sf)?b\b', message) else ''
        raise type(e)(op + message[len(nt_name):] + note) from None


def m_grouped_fp8_gemm_nn_contiguous(a: FP8Operand, b: FP8Operand, d: Tensor, grouped_layout: Tensor, recipe: Recipe = None,
                                     recipe_a: Recipe = None, recipe_b: Recipe = None, compiled_dims: str = 'nk',
                                     disable_ue8m0_cast: bool = False, use_psum_layout: bool = False,
                                     ensure_zero_padding: bool = True) -> None:
    """:func:`m_grouped_fp8_gemm_nt_contiguous` with ``b = (B [G, K, N], sfb [G, ceil(K/128), ceil(N/128)])``:
    ``d[rows of g] = a[rows of g] @ b[g]``. On SM90 the FP8 kernel reads B K-major, so ``B`` must have
    ``stride(1) == 1`` (e.g. the ``.transpose(1, 2)`` view of a ``[G, N, K]`` tensor); the call runs the
    "nt" kernel on the transposed views (no copy)."""
    op = 'm_grouped_fp8_gemm_nn_contiguous'
    if not (isinstance(b, (tuple, list)) and len(b) == 2):
        raise TypeError(f'{op}: b must be a (tensor, scales) pair; got {type(b).__name__}')
    _nn_tensor_3d(op, 'b', b[0], '[G, K, N]')
    _nn_tensor_3d(op, 'sfb', b[1], '[G, ceil(K/128), ceil(N/128)]')
    b_nt = (b[0].transpose(-2, -1), b[1].transpose(-2, -1))
    if _tracing():
        return m_grouped_fp8_gemm_nt_contiguous(a, b_nt, d, grouped_layout, recipe, recipe_a, recipe_b, compiled_dims,
                                                disable_ue8m0_cast, use_psum_layout, ensure_zero_padding)
    _nn_call(op, m_grouped_fp8_gemm_nt_contiguous, a, b_nt, d, grouped_layout, recipe, recipe_a, recipe_b, compiled_dims,
             disable_ue8m0_cast, use_psum_layout, ensure_zero_padding)


def m_grouped_bf16_gemm_nn_contiguous(a: Tensor, b: Tensor, d: Tensor, grouped_layout: Tensor, compiled_dims: str = 'nk',
                                      use_psum_layout: bool = False, ensure_zero_padding: bool = True) -> None:
    """:func:`m_grouped_bf16_gemm_nt_contiguous` with ``b`` stored ``[G, K, N]``: ``d[rows of g] = a[rows of g] @ b[g]``.
    ``b`` may be N-major (contiguous ``[G, K, N]``) or K-major; the call runs the "nt" kernel on
    ``b.transpose(1, 2)`` (no copy)."""
    op = 'm_grouped_bf16_gemm_nn_contiguous'
    _nn_tensor_3d(op, 'b', b, '[G, K, N]')
    if _tracing():
        return m_grouped_bf16_gemm_nt_contiguous(a, b.transpose(-2, -1), d, grouped_layout, compiled_dims, use_psum_layout,
                                                 ensure_zero_padding)
    _nn_call(op, m_grouped_bf16_gemm_nt_contiguous, a, b.transpose(-2, -1), d, grouped_layout, compiled_dims, use_psum_layout,
             ensure_zero_padding)


# ---- DeepGEMM's alternative names (the same function objects) ------------------------------------------

fp8_fp4_gemm_nt, fp8_fp4_gemm_nn, fp8_fp4_gemm_tn, fp8_fp4_gemm_tt = fp8_gemm_nt, fp8_gemm_nn, fp8_gemm_tn, fp8_gemm_tt
m_grouped_fp8_fp4_gemm_nt_contiguous = m_grouped_fp8_gemm_nt_contiguous
m_grouped_fp8_fp4_gemm_nn_contiguous = m_grouped_fp8_gemm_nn_contiguous
m_grouped_fp8_fp4_gemm_nt_masked = fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_gemm_nt_masked
bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked


# ---- fused FP8 quantisation (SwiGLU -> FP8, per-token FP8) -------------------------------------------------

_c_swiglu_apply_weight_to_fp8 = _C.swiglu_apply_weight_to_fp8
_c_apply_weight_to_fp8 = _C.apply_weight_to_fp8


def swiglu_apply_weight_to_fp8(x: Tensor, topk_weights: Optional[Tensor], avail_tokens: Optional[Tensor],
                               num_per_channels: int, use_col_major_scales: bool, round_scale: bool, ue8m0_scale: bool,
                               clamp_value: Optional[float] = None, fmt: str = 'e4m3', num_sms: Optional[int] = None,
                               output_bf16: bool = False, fast_math: bool = True):
    """Fused ``y = silu(gate) * up * topk_weights`` and per-token FP8 quantisation, one pass over ``x``.

    - ``x``: ``[T, 2H]`` (bfloat16; float16/float32 also accepted), rows 16-byte aligned with unit column
      stride; ``gate = x[:, :H]``, ``up = x[:, H:]``. ``2H`` must be divisible by ``2 * num_per_channels``
      and ``H`` a multiple of 16. ``T == 0`` is allowed.
    - ``topk_weights``: float32 ``[T]`` or None (weight 1). ``avail_tokens``: an int32 one-element tensor on
      the same GPU, or None (= ``T``). It is read by the kernel (no host sync); rows ``t >= avail_tokens``
      of every output are left untouched.
    - Arithmetic, in FP32 per element: with ``clamp_value`` c, ``up = clamp(up, -c, c)`` and
      ``gate = min(gate, c)``; ``v = gate / (1 + exp(-gate)) * up * w``, evaluated in that order
      (``fast_math``: hardware exp and division approximations for the SiLU, a few ulp off; without it
      ``expf`` and IEEE division). Per token and group of ``num_per_channels`` columns (a power of two in
      [16, 512]): ``amax = max(max|v|, 1e-4)``; ``scale = amax / 448`` as one correctly rounded FP32
      division (on a CUDA tensor, PyTorch's ``amax / 448`` multiplies by a rounded ``1/448`` instead and
      is one ulp off for about half of all values); ``round_scale``: the smallest power of two ``>= scale``,
      exactly (from the bits; ``2 ** ceil(log2(scale))`` in FP32 can round a scale a few ulp above a power
      of two down); ``y = float8_e4m3fn(v * r)`` with ``r = 1 / scale`` correctly rounded (exact for
      power-of-two scales), round to nearest even, saturating at 448. ``output_bf16`` also returns
      ``y_bf16 = bfloat16(v)`` (round to nearest even). Without ``fast_math`` a float32 PyTorch evaluation
      of these steps reproduces the scales and codes bitwise.
    - Scales (``S = H / num_per_channels``): ``use_col_major_scales``: float32 ``[T, S]`` with strides
      ``(1, align(T, 4))`` -- the M-major TMA-aligned layout that :func:`fp8_gemm_nt` & co. take as
      ``sfa`` without a copy; otherwise contiguous float32 ``[T, S]``. ``ue8m0_scale`` (needs
      ``round_scale`` and column-major scales): int32 ``[T, ceil(S/4)]`` with strides ``(1, align(T, 4))``,
      the biased 8-bit exponents of the scales, group ``4j + i`` in byte ``i`` of word ``j`` (unused bytes 0).
      The padding rows ``[T, align(T, 4))`` are not written.
    - ``fmt`` must be ``'e4m3'``; ``num_sms`` caps the grid (default: :func:`get_num_sms`).

    Returns ``(y, y_sf)``, or ``(y, y_sf, y_bf16)`` with ``output_bf16``; ``y`` is float8_e4m3fn ``[T, H]``.
    """
    if _tracing():
        y, sf, y_bf16 = _ops.swiglu_apply_weight_to_fp8(x, topk_weights, avail_tokens, num_per_channels, use_col_major_scales,
                                                        round_scale, ue8m0_scale, clamp_value, fmt, num_sms, output_bf16, fast_math)
    else:
        y, sf, y_bf16 = _c_swiglu_apply_weight_to_fp8(x, topk_weights, avail_tokens, num_per_channels, use_col_major_scales,
                                                      round_scale, ue8m0_scale, clamp_value, fmt, num_sms, output_bf16, fast_math)
    return (y, sf, y_bf16) if output_bf16 else (y, sf)


def apply_weight_to_fp8(x: Tensor, out: Tensor, *, topk_weights: Optional[Tensor] = None, avail_tokens: Optional[Tensor] = None,
                        num_per_channels: int = 128, use_col_major_scales: bool = True, round_scale: bool = False,
                        ue8m0_scale: bool = False, clamp_value: Optional[float] = None, fmt: str = 'e4m3',
                        num_sms: Optional[int] = None, fast_math: bool = True) -> Tensor:
    """Per-token FP8 quantisation of ``x`` (no SwiGLU) into the caller's ``out``; returns the scales.

    ``x``: float16/bfloat16/float32 ``[T, H]``, ``H`` a multiple of 16; ``out``: float8_e4m3fn ``[T, H]``
    (unit column stride, 16-byte aligned rows, not overlapping ``x``). In FP32 per element:
    ``v = x`` (clamped to ``[-clamp_value, clamp_value]`` when given) ``* topk_weights[t]`` (1 without
    weights). Per token and group of ``num_per_channels`` columns -- ``ceil(H / num_per_channels)`` groups,
    a trailing partial group getting its own scale -- ``amax = max(max|v|, 1e-4)``, ``scale = amax / 448``
    (rounded up to a power of two with ``round_scale``), ``out = float8_e4m3fn(v * (1 / scale))``, each
    step rounded exactly as in :func:`swiglu_apply_weight_to_fp8`; with no exp involved, ``fast_math``
    changes nothing here and the result is always bitwise reproducible.

    Returns the scales in the layouts of :func:`swiglu_apply_weight_to_fp8`: by default float32 ``[T, S]``
    M-major with the M stride ``align(T, 4)``, ready to pass with ``out`` to :func:`fp8_gemm_nt` as
    ``(out, scales)`` (when ``H`` is a multiple of 128 and ``num_per_channels == 128``). ``avail_tokens``
    behaves as in :func:`swiglu_apply_weight_to_fp8` (rows past it are untouched).
    """
    if _tracing():
        return _ops.apply_weight_to_fp8(x, out, topk_weights=topk_weights, avail_tokens=avail_tokens,
                                        num_per_channels=num_per_channels, use_col_major_scales=use_col_major_scales,
                                        round_scale=round_scale, ue8m0_scale=ue8m0_scale, clamp_value=clamp_value, fmt=fmt,
                                        num_sms=num_sms, fast_math=fast_math)
    return _c_apply_weight_to_fp8(x, out, topk_weights=topk_weights, avail_tokens=avail_tokens, num_per_channels=num_per_channels,
                                  use_col_major_scales=use_col_major_scales, round_scale=round_scale, ue8m0_scale=ue8m0_scale,
                                  clamp_value=clamp_value, fmt=fmt, num_sms=num_sms, fast_math=fast_math)


def __getattr__(name: str):
    # `deep_gemm.legacy` (Triton kernels) is imported on first use so `import deep_gemm` stays light.
    if name == 'legacy':
        import importlib
        return importlib.import_module('.legacy', __name__)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


__all__ = [
    '__version__',
    # every op of the op table (csrc/python/gemm_table.hpp, then csrc/python/op_table.hpp), in its order
    *_wrappers.PUBLIC_OPS,
    # aliases
    'fp8_fp4_gemm_nt', 'fp8_fp4_gemm_nn', 'fp8_fp4_gemm_tn', 'fp8_fp4_gemm_tt', 'm_grouped_fp8_fp4_gemm_nt_contiguous',
    'm_grouped_fp8_fp4_gemm_nn_contiguous', 'm_grouped_fp8_fp4_gemm_nt_masked', 'fp8_m_grouped_gemm_nt_masked',
    'bf16_m_grouped_gemm_nt_masked',
    # knobs and JIT
    'set_num_sms', 'get_num_sms', 'set_tc_util', 'get_tc_util', 'set_block_size_multiple_of', 'get_block_size_multiple_of',
    'set_pdl', 'get_pdl', 'set_ignore_compile_dims', 'get_ignore_compile_dims',
    'set_mk_alignment_for_contiguous_layout', 'get_mk_alignment_for_contiguous_layout',
    'get_theoretical_mk_alignment_for_contiguous_layout', 'reload_settings', 'get_settings', 'compile_only', 'warmup',
    # helpers
    'utils', 'testing',
]
__all__ += [name for name in _utils_all if name not in __all__]  # utils re-exports some of the names above

# ---- DeepGEMM 2.8 call forms (alpha= / epilogue= are in the generated GEMM wrappers; docs/compat_2_8.md) ----
from ._compat28 import get_deterministic_algorithms, shutdown, use_deterministic_algorithms  # noqa: E402

__all__ += ['use_deterministic_algorithms', 'get_deterministic_algorithms', 'shutdown']

# ---- sgl-deep-gemm 0.2.5 / SGLang / DeepGEMM 2.8.1 extras / LMDeploy's fallbacks (docs/compat_2_8.md) -----------
from . import epilogue  # noqa: E402,F401  (Identity, Alpha, FP8CastWithClamp, FP8Quantization, BF16StochasticRounding)
from ._compat025 import (  # noqa: E402
    SM90SymmBuffer, batched_symm, batched_syrk, fp8_mega_moe, get_compile_mode, mega_moe_pre_dispatch_sm90, set_compile_mode,
)
get_col_major_tma_aligned_tensor = get_mn_major_tma_aligned_tensor  # DeepGEMM 1.x's name (LMDeploy)

__all__ += ['get_compile_mode', 'set_compile_mode', 'batched_syrk', 'batched_symm', 'get_col_major_tma_aligned_tensor',
            'fp8_mega_moe', 'mega_moe_pre_dispatch_sm90', 'SM90SymmBuffer', 'epilogue']
