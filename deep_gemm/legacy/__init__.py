"""``deep_gemm.legacy``: BF16 grouped GEMMs written in Triton.

For GPUs without the Hopper kernels, and as a reference implementation. Importing this package needs
neither Triton nor ``deep_gemm._C``; Triton is imported on the first call, and a call without Triton
raises ``ImportError`` saying so.

- ``m_grouped_gemm``: :func:`m_grouped_bf16_gemm_nt_contiguous_tl` (``b [G, N, K]``),
  :func:`m_grouped_bf16_gemm_nn_contiguous_tl` (``b [G, K, N]``): M-grouped contiguous layout, per-row
  group ids, ``-1`` = padding (zeros in ``d``); ``b`` K-major or MN-major.
- ``a_fused_m_grouped_gemm``: the same with the rows of ``a`` gathered,
  ``(a, b, d, (m_indices, m_row_indices))``.
- ``k_grouped_gemm``: :func:`k_grouped_bf16_gemm_tn_contiguous_tl`, K-grouped layout, ``d [G, M, N]``
  float32, optional ``c``.
- ``a_fused_k_grouped_gemm`` / ``b_fused_k_grouped_gemm``: K-grouped with the rows of ``a`` / ``b``
  gathered, ``(a, b, d, (k_indices, k_start, k_end), acc)``.

Every function is also a ``torch.library`` op, ``torch.ops.deep_gemm.<name>`` (see ``_ops``). Triton's
cache for these kernels lives in ``$DG_JIT_CACHE_DIR/triton`` unless ``TRITON_CACHE_DIR`` is set; with
``DG_JIT_DEBUG`` their compiles are logged (see ``_triton_cache``).

Under ``TRITON_INTERPRET=1`` (set before Triton is first imported) the kernels run on CPU tensors.
"""

from . import (a_fused_k_grouped_gemm, a_fused_m_grouped_gemm, b_fused_k_grouped_gemm, k_grouped_gemm,
               m_grouped_gemm)
from ._common import triton_available
from ._ops import register_all as _register_ops
from .a_fused_k_grouped_gemm import a_fused_k_grouped_bf16_gemm_tn_contiguous_tl
from .a_fused_m_grouped_gemm import (a_fused_m_grouped_bf16_gemm_nn_contiguous_tl,
                                     a_fused_m_grouped_bf16_gemm_nt_contiguous_tl)
from .b_fused_k_grouped_gemm import b_fused_k_grouped_bf16_gemm_tn_contiguous_tl
from .k_grouped_gemm import k_grouped_bf16_gemm_tn_contiguous_tl
from .m_grouped_gemm import m_grouped_bf16_gemm_nn_contiguous_tl, m_grouped_bf16_gemm_nt_contiguous_tl

_register_ops()

__all__ = [
    "m_grouped_gemm",
    "a_fused_m_grouped_gemm",
    "k_grouped_gemm",
    "a_fused_k_grouped_gemm",
    "b_fused_k_grouped_gemm",
    "m_grouped_bf16_gemm_nt_contiguous_tl",
    "m_grouped_bf16_gemm_nn_contiguous_tl",
    "a_fused_m_grouped_bf16_gemm_nt_contiguous_tl",
    "a_fused_m_grouped_bf16_gemm_nn_contiguous_tl",
    "k_grouped_bf16_gemm_tn_contiguous_tl",
    "a_fused_k_grouped_bf16_gemm_tn_contiguous_tl",
    "b_fused_k_grouped_bf16_gemm_tn_contiguous_tl",
    "triton_available",
]
