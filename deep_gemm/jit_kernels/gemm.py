"""DeepGEMM 1.x's FP8 GEMM name, which LMDeploy imports when ``deep_gemm.fp8_gemm_nt`` is missing."""

from .. import fp8_gemm_nt


def gemm_fp8_fp8_bf16_nt(lhs, rhs, out) -> None:
    """DeepGEMM 1.x's ``out = lhs @ rhs.T``: :func:`deep_gemm.fp8_gemm_nt` with ``a = lhs = (float8_e4m3fn [M, K],
    float32 [M, ceil(K/128)])``, ``b = rhs = (float8_e4m3fn [N, K], float32 [ceil(N/128), ceil(K/128)])`` and
    ``d = out`` bfloat16 ``[M, N]``; the same rules and errors."""
    fp8_gemm_nt(lhs, rhs, out)
