"""``from third_party.tilelang_ops.swiglu_apply_weight_to_fp8 import apply_weight_to_fp8`` (and
``swiglu_apply_weight_to_fp8``): re-exports of deep_gemm's JIT-compiled fused FP8 quantisation ops, so
the kernel is built, cached, dumped (``DG_JIT_DUMP_PTX``) and logged like every deep_gemm kernel."""

from deep_gemm import apply_weight_to_fp8, swiglu_apply_weight_to_fp8

__all__ = ['swiglu_apply_weight_to_fp8', 'apply_weight_to_fp8']
