"""DeepGEMM 1.x's module path, kept for clients that fall back to it (LMDeploy): ``deep_gemm.jit_kernels.gemm``."""
