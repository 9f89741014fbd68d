"""``deep_gemm.legacy``: BF16 grouped GEMMs written in Triton.

For GPUs without the Hopper kernels, and as a reference implementation. Importing this package needs
neither Triton nor ``deep_gemm._C``; Triton is imported on the first call, and a call without Triton
raises ``ImportError`` saying so.

- :func:`m_grouped_bf16_gemm_nt_contiguous_tl` (``b [G, N, K]``), :func:`m_grouped_bf16_gemm_nn_contiguous_tl`
  (``b [G, K, N]``): M-grouped contiguous layout, per-row group ids, ``-1`` = padding (zeros in ``d``).
- :func:`k_grouped_bf16_gemm_tn_contiguous_tl`: K-grouped layout, ``d [G, M, N]`` float32, optional ``c``.

Under ``TRITON_INTERPRET=1`` (set before Triton is first imported) the kernels run on CPU tensors.
"""

from . import k_grouped_gemm, m_grouped_gemm
from ._common import triton_available
from .k_grouped_gemm import k_grouped_bf16_gemm_tn_contiguous_tl
from .m_grouped_gemm import m_grouped_bf16_gemm_nn_contiguous_tl, m_grouped_bf16_gemm_nt_contiguous_tl

__all__ = [
    "m_grouped_gemm",
    "k_grouped_gemm",
    "m_grouped_bf16_gemm_nt_contiguous_tl",
    "m_grouped_bf16_gemm_nn_contiguous_tl",
    "k_grouped_bf16_gemm_tn_contiguous_tl",
    "triton_available",
]
