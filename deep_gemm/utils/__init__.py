"""Helpers for preparing inputs: integer rounding and FP8 quantization (pure PyTorch, any device)."""

from .math import (
    align,
    ceil_div,
    ceil_to_ue8m0,
    dequantize_per_block,
    dequantize_per_token,
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_token_cast_to_fp8,
)

__all__ = [
    'align',
    'ceil_div',
    'ceil_to_ue8m0',
    'dequantize_per_block',
    'dequantize_per_token',
    'per_block_cast_to_fp8',
    'per_channel_cast_to_fp8',
    'per_token_cast_to_fp8',
]
