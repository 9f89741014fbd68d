"""Compatibility namespace for code written against DeepGEMM's ``third-party`` helpers.

Only ``third_party.tilelang_ops`` exists here; its kernels are native CUDA compiled by deep_gemm's JIT
(no TileLang needed)."""
