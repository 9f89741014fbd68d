"""Helpers for preparing inputs: integer rounding, FP8/FP4 quantization and UE8M0 packing (pure PyTorch,
any device), scale layouts and contiguous-layout alignment, ``torch.distributed`` helpers.

Submodules as in DeepGEMM: ``math``, ``layout`` (both re-exported here) and ``dist`` (``init_dist`` and
``uneven_all_gather`` re-exported here and at ``deep_gemm``; ``dist_print`` stays in ``dist``)."""

from . import dist, layout, math  # noqa: F401
from .dist import init_dist, uneven_all_gather
from .layout import (
    get_k_alignment_for_contiguous_layout,
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_m_alignment_for_contiguous_layout,
    get_mk_alignment_for_contiguous_layout,
    get_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_tensor,
    get_theoretical_mk_alignment_for_contiguous_layout,
    get_tma_aligned_size,
    set_mk_alignment_for_contiguous_layout,
)
from .math import (
    align,
    cast_back_from_fp4,
    ceil_div,
    ceil_to_ue8m0,
    dequantize_per_block,
    dequantize_per_token,
    pack_ue8m0_to_int,
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_custom_dims_cast_to_fp8,
    per_token_cast_to_fp4,
    per_token_cast_to_fp8,
    transpose_packed_fp4,
    unpack_ue8m0_from_int,
)

__all__ = [
    'align', 'ceil_div', 'ceil_to_ue8m0', 'dequantize_per_block', 'dequantize_per_token', 'pack_ue8m0_to_int',
    'unpack_ue8m0_from_int', 'per_block_cast_to_fp8', 'per_channel_cast_to_fp8', 'per_custom_dims_cast_to_fp8',
    'per_token_cast_to_fp8', 'per_token_cast_to_fp4', 'transpose_packed_fp4', 'cast_back_from_fp4',
    'get_tma_aligned_size', 'get_mn_major_tma_aligned_tensor', 'get_mn_major_tma_aligned_packed_ue8m0_tensor',
    'get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor', 'get_mk_alignment_for_contiguous_layout',
    'get_theoretical_mk_alignment_for_contiguous_layout', 'set_mk_alignment_for_contiguous_layout',
    'get_m_alignment_for_contiguous_layout', 'get_k_alignment_for_contiguous_layout',
    'init_dist', 'uneven_all_gather',
]
