"""The docstrings of the wrappers that scripts/gen_stubs.py writes into deep_gemm/_wrappers.py: one per row of
csrc/python/gemm_table.hpp and per row of csrc/python/op_table.hpp whose module is ``_wrappers`` (the cuBLASLt
GEMMs); a missing one fails scripts/gen_stubs.py and tests/python/test_op_table.py."""


DOCS = {
    'fp8_gemm_nt': """``d = c + a @ b.T`` with FP8 operands, written into ``d`` in place.

    - ``a = (A float8_e4m3fn [M, K] K-major, sfa float32 [M, ceil(K/128)])``
    - ``b = (B float8_e4m3fn [N, K] K-major, sfb float32 [ceil(N/128), ceil(K/128)])``
    - ``d``: ``[M, N]`` N-major; bfloat16 for recipe ``(1, 128, 128)`` (default, the 1D2D kernel),
      float32 for ``(1, 1, 128)`` (1D1D kernel, per-row B scales ``sfb [N, ceil(K/128)]``).
    - Recipe ``(1, 32, 32)`` (block-32 scales, the 1D2D kernel, bfloat16 ``d``): ``sfa [M, ceil(K/32)]`` per row
      per 32 K and ``sfb [ceil(N/32), ceil(K/32)]`` per 32x32 block, float32 (also as ``recipe_a=(1, 32),
      recipe_b=(32, 32)``); the dense ``fp8_gemm_*`` only (the grouped ops raise ``NotImplementedError``).
    - ``c``: optional ``[M, N]`` added to the product (bfloat16 or float32; float32 with recipe
      ``(1, 1, 128)``): the kernel's epilogue adds it to the FP32 accumulators as it stores, so ``d`` is
      rounded once. ``c`` may be ``d``.
    - Alignment (TMA): A/B base pointers 16-byte aligned, row strides multiples of 16 bytes (K % 16 == 0
      for contiguous FP8 rows). ``d`` only needs ``stride(-1) == 1``; 16-byte aligned rows take the
      faster TMA-store epilogue.
    - ``recipe_a`` / ``recipe_b``: DeepGEMM's per-operand form ``(g_mn, g_k)`` of the scale granularity;
      given (both), they define the recipe ``(g_mn_a, g_mn_b, g_k)``; a ``recipe`` passed as well must agree
      (``ValueError`` otherwise).
    - ``compiled_dims``: which of ``m``, ``n``, ``k`` are compile-time constants of the kernel.
    - Empty problems: ``M == 0`` or ``N == 0`` returns; ``K == 0`` sets ``d = c`` (or zeros).
    """,

    'fp8_gemm_nn': """``d = c + a @ b`` with ``b = (B [K, N], sfb [ceil(K/128), ceil(N/128)])``. ``B`` must still be
    K-major in memory (``B.stride(0) == 1``, e.g. ``W.t()`` of a row-major ``W [N, K]``). See
    :func:`fp8_gemm_nt`.""",

    'fp8_gemm_tn': """``d = c + a.T @ b`` with ``a = (A [K, M], sfa [ceil(K/128), M])`` and ``b = (B [K, N], sfb
    [ceil(K/128), ceil(N/128)])``; both K-major in memory (``stride(0) == 1``). See :func:`fp8_gemm_nt`.""",

    'fp8_gemm_tt': """``d = c + a.T @ b.T`` with ``a = (A [K, M], sfa [ceil(K/128), M])`` (K-major in memory:
    ``A.stride(0) == 1``) and ``b`` as in :func:`fp8_gemm_nt`.""",

    'm_grouped_fp8_gemm_nt_contiguous': """Grouped GEMM over row blocks: ``d[rows of g] = a[rows of g] @ b[g].T``.

    - ``a = (float8_e4m3fn [ΣM, K], sfa float32 [ΣM, ceil(K/128)])``,
      ``b = (float8_e4m3fn [G, N, K], sfb float32 [G, ceil(N/128), ceil(K/128)])``, ``d`` bfloat16 ``[ΣM, N]``.
    - ``grouped_layout`` int32 on the GPU: ``[ΣM]`` group id per row (-1 for padding rows; each group
      starts at a multiple of :func:`get_mk_alignment_for_contiguous_layout`), or with
      ``use_psum_layout=True`` ``[G]`` group ends: group ``g`` owns rows ``[align(end[g-1]), end[g])`` with
      ``end = grouped_layout``, ``end[-1] = 0`` and ``align`` rounding up to
      :func:`get_mk_alignment_for_contiguous_layout` (ends non-decreasing; an empty group has its end at its
      start).
    - Padding rows (rows outside every group: ``grouped_layout == -1``, or with the psum layout the rows
      between a group's end and the next aligned start and those past the last end): with
      ``ensure_zero_padding=True`` (the default) their ``d`` rows are written as zeros; with ``False``
      (DeepGEMM's SM90 behaviour) a padding row inside an alignment block (rows ``[i * A, (i + 1) * A)``,
      ``A`` = :func:`get_mk_alignment_for_contiguous_layout`) that starts in a group's rows is computed with
      that group's ``b`` and stored (so zero rows of ``a`` give zero rows of ``d``), and the rows of a block
      that starts in padding are not written; their content is otherwise unspecified.
    - ``expected_m_for_psum_layout``: with the psum layout, a host-side hint of the typical rows per group
      (positive or ``None``): like ``expected_m`` of the masked op it sets the tile height (64-row tiles
      for groups of at most 64 rows, else 128).
    - ``recipe_a`` / ``recipe_b``: as in :func:`fp8_gemm_nt`.
    """,

    'm_grouped_fp8_gemm_nt_masked': """Batched GEMM where group ``g`` uses only its first ``masked_m[g]`` rows:
    ``d[g, :masked_m[g]] = a[g, :masked_m[g]] @ b[g].T``.

    - ``a = (float8_e4m3fn [G, maxM, K], sfa float32 [G, maxM, ceil(K/128)])``,
      ``b = (float8_e4m3fn [G, N, K], sfb float32 [G, ceil(N/128), ceil(K/128)])``, ``d`` bfloat16 ``[G, maxM, N]``.
    - ``masked_m`` int32 ``[G]`` on the GPU (read by the kernel: no host sync, CUDA-graph safe; values
      below 0 count as 0, above maxM as maxM); ``expected_m`` > 0 is a host-side hint of the typical rows
      per group (config choice only).
    - Rows ``d[g, masked_m[g]:]`` are never written.
    - ``max_block_n`` (default 256, at least 16): the largest BLOCK_N the config may pick (SGLang passes 160 on
      H20); it caps the tile with or without overlap.
    - ``enable_overlap=True`` with ``signal`` (the SGLang fork's overlapped combine; eager calls only, not under
      ``torch.compile``): ``signal`` is int32 1-D contiguous on ``d``'s device with at least
      ``G * ceil(maxM / 64)`` elements, zeroed by the caller. After each stored tile the kernel adds 1, with a
      GPU-scope release, to ``signal[g * ceil(maxM / block_m) + m // block_m]``; the call returns
      ``(block_m, threshold)`` with ``threshold = ceil(N / block_n)``: once a consumer reads (acquire) the counter of
      rows ``m`` equal to ``threshold``, those rows of ``d[g]`` are written. Counters of M blocks at or past
      ``ceil(masked_m[g] / block_m)`` stay 0. Without overlap the call returns None.
    """,

    'k_grouped_fp8_gemm_nt_contiguous': """Grouped GEMM over K blocks (weight gradients): ``d[g] = c[g] + A_g @ B_g.T`` with ``A_g [M, k_g]``.

    - ``a = (float8_e4m3fn, contiguous, Σ_g M*k_g elements: each group's K-major ``[M, k_g]`` block
      back to back; sfa float32 [M, S])``, ``b`` likewise with N (DeepGEMM's scale shapes; its tests pass the
      ``.T`` view of a ``[S, M]`` buffer, which is read without a copy when M is a multiple of 4). The
      transposes ``[S, M]`` / ``[S, N]`` are also accepted; a square scale tensor (M or N equal to S) is read in
      DeepGEMM's form.
    - Scales per group (sgl-deep-gemm 0.2.5's layouts): group ``g`` owns ``ceil(k_g/128)`` scale columns (the
      compact layout, the default; a partial last K block has its own scale), or with
      ``use_padded_sf_layout=True`` ``ceil(align(k_g, get_mk_alignment_for_contiguous_layout())/128)`` (the columns
      past its own are never read); its columns follow the previous groups'. S is their sum. With every ``k_g`` a
      multiple of 128 and the alignment 128 (DeepGEMM 2.6.1's calls) both layouts are ``[M, Σ k_g/128]``.
    - ``d`` float32 ``[G, M, N]`` contiguous; ``c`` optional float32 ``[G, M, N]`` (may be ``d``).
    - ``ks_cpu``: the K of each group (host ints, multiples of 16: each group's rows are read by TMA; the
      kernel reads zeros past ``k_g`` in a partial last K block); ``grouped_layout``: the same as int32 ``[G]``
      on the GPU. ``recipe`` must be ``(1, 1, 128)``. ``use_psum_layout=True`` (cumulative K ends) raises
      ``NotImplementedError`` on SM90. ``epilogue``: ``None`` or an identity epilogue (``deep_gemm.epilogue``).
    - Groups with ``k_g == 0`` get ``d[g] = c[g]`` (or zeros). The host ``ks_cpu`` drive the computation (one
      1D1D kernel launch for up to 32 groups); ``grouped_layout`` must hold the same values.
    """,

    'fp8_gemm_nt_skip_head_mid': """:func:`fp8_gemm_nt` whose output skips the middle columns of each head.

    - ``a``, ``b``: as in :func:`fp8_gemm_nt` (recipe ``(1, 128, 128)``, the only one on SM90); ``b`` has
      ``N = num_heads * (left + right)`` rows, ``head_splits = (left, mid, right)`` (non-negative ints,
      ``left + right > 0``).
    - ``d``: bfloat16 ``[M, num_heads * (left + mid + right)]``, N-major (any row stride). Head ``h``'s
      computed columns ``[h * (left + right), (h + 1) * (left + right))`` of ``A @ B.T`` are written to
      ``d[:, h * (left + mid + right) + ...]``: the first ``left`` of them at offset 0, the other ``right`` at
      offset ``left + mid``. The ``mid`` columns of each head are never written (they keep what the caller
      put there). With ``K == 0`` the left and right columns are zeroed.
    - The 1D2D kernel with a head-split epilogue that stores from registers (no TMA store); the config is
      chosen for the computed ``M x N x K`` problem.
    """,

    'bf16_gemm_nt': """``d = c + a @ b.T``: ``a`` bfloat16 ``[M, K]``, ``b`` bfloat16 ``[N, K]`` (each K-major or MN-major
    in memory; the row stride must be a multiple of 8 elements), ``d`` ``[M, N]`` bfloat16 or float32,
    N-major. ``c``: optional ``[M, N]`` bfloat16/float32 added in the kernel's epilogue (converted to
    ``d``'s dtype first when it differs; ``c`` may be ``d``). TMA alignment as in :func:`fp8_gemm_nt`.
    For tuning, ``DG_BF16_GEMM_CONFIG="block_m,block_n,stages[,multicast]"`` forces the kernel config of the
    four dense BF16 ops (README; call :func:`reload_settings` after changing it).""",

    'bf16_gemm_nn': """``d = c + a @ b`` with ``b`` ``[K, N]``. See :func:`bf16_gemm_nt`.""",

    'bf16_gemm_tn': """``d = c + a.T @ b`` with ``a`` ``[K, M]``, ``b`` ``[K, N]``. See :func:`bf16_gemm_nt`.""",

    'bf16_gemm_tt': """``d = c + a.T @ b.T`` with ``a`` ``[K, M]``, ``b`` ``[N, K]``. See :func:`bf16_gemm_nt`.""",

    'm_grouped_bf16_gemm_nt_contiguous': """BF16 version of :func:`m_grouped_fp8_gemm_nt_contiguous`: ``a [ΣM, K]``, ``b [G, N, K]`` (K-major or
    MN-major), ``d [ΣM, N]``; padding rows follow ``ensure_zero_padding`` as there (zeros, or DeepGEMM's SM90 rows);
    ``expected_m_for_psum_layout`` is validated as there (the BF16 config choice does not use it yet).""",

    'm_grouped_bf16_gemm_nt_masked': """BF16 version of :func:`m_grouped_fp8_gemm_nt_masked`: ``a [G, maxM, K]``, ``b [G, N, K]``, ``d [G, maxM, N]``.""",

    'k_grouped_bf16_gemm_tn_contiguous': """Grouped GEMM over K blocks (weight gradients of a grouped linear layer), in place into ``d``:
    ``d[g] = c[g] + a[K_g].T @ b[K_g]`` for each group ``g``, where ``K_g`` is the row range
    ``[ks_cpu[0] + ... + ks_cpu[g-1], + ks_cpu[g])``; without ``c``, ``d[g] = a[K_g].T @ b[K_g]``.

    - ``a``: bfloat16 ``[sum(ks), M]``, contiguous (the groups' rows back to back); ``b``: bfloat16
      ``[sum(ks), N]``, contiguous. ``M`` and ``N`` must be multiples of 8 (TMA reads 16-byte rows); base
      pointers 16-byte aligned.
    - ``d``: float32 ``[G, M, N]``, contiguous. ``c``: optional float32 ``[G, M, N]``, contiguous; it may be
      ``d`` itself (accumulate in place).
    - ``ks_cpu``: the K of each group, ``G`` host ints, each a non-negative multiple of 128; ``ks_cpu[g] == 0``
      gives ``d[g] = c[g]`` (or zeros). ``grouped_layout``: the same values as an int32 ``[G]`` tensor on the
      GPU (read by the kernel; it is not compared with ``ks_cpu``, which would need a device sync).
    - ``use_psum_layout=True`` (cumulative K ends) raises ``NotImplementedError`` on SM90.
    - ``compiled_dims``: which of ``m``, ``n`` are compile-time constants (K never is: it varies per group).
    - The kernel config depends on ``M``, ``N``, ``G`` and the average K rounded up to a power of two, so
      changing ``ks_cpu`` rarely compiles a new kernel.
    """,

'cublaslt_gemm_nt': """``d = c + a @ b.T`` in BF16 through cuBLASLt (the libcublasLt that PyTorch loads; FP32 accumulation),
    written into ``d`` in place on the current stream.

    Arguments as in :func:`bf16_gemm_nt`: ``a`` bfloat16 ``[M, K]``, ``b`` bfloat16 ``[N, K]`` (each K-major or
    MN-major, 16-byte aligned base and row stride), ``d`` ``[M, N]`` bfloat16 or float32 with unit stride along N,
    ``c`` optional ``[M, N]`` (float32 when ``d`` is; bfloat16 or float32 for a bfloat16 ``d``, then rounded
    to bfloat16 before the addition); ``c`` may be ``d`` itself (accumulate in place). The same errors are
    raised before any cuBLASLt call; ``RuntimeError`` when cuBLASLt cannot be loaded. Descriptors and the
    algorithm are chosen once per shape/layout/alignment and reused; each (device, stream) gets a 32 MiB
    workspace on first use (run a shape once before capturing a CUDA graph).

    ``a`` and ``b`` may instead both be ``torch.float8_e4m3fn`` (an unscaled FP8 product with FP32
    accumulation, as DeepGEMM's ``cublaslt_gemm_nt`` takes them): both must then be K-major in memory (``a``
    ``[M, K]`` and ``b`` ``[N, K]`` row-major, the only form cuBLASLt's FP8 kernels take; other forms raise
    ``ValueError``) with ``K`` a multiple of 16; ``d`` and ``c`` as above (docs/cublaslt.md).""",

'cublaslt_gemm_nn': """``d = c + a @ b`` with ``b`` ``[K, N]``, through cuBLASLt. See :func:`cublaslt_gemm_nt`.""",

'cublaslt_gemm_tn': """``d = c + a.T @ b`` with ``a`` ``[K, M]``, ``b`` ``[K, N]``, through cuBLASLt. See :func:`cublaslt_gemm_nt`.""",

'cublaslt_gemm_tt': """``d = c + a.T @ b.T`` with ``a`` ``[K, M]``, ``b`` ``[N, K]``, through cuBLASLt. See :func:`cublaslt_gemm_nt`.""",
}
