"""A few small calls of every JIT kernel, for compute-sanitizer (memcheck, racecheck) on the H200.

Shapes are small and include sizes that are not multiples of the block sizes. References are computed
on the CPU so that only deep_gemm's kernels run on the GPU (racecheck would otherwise also report
inside cuBLAS's own kernels). Exits non-zero if a result is wrong.
"""
import contextlib
import os
import sys

import torch

import deep_gemm
from deep_gemm.testing import calc_diff
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8, unpack_ue8m0_from_int


def _tests_dir() -> None:
    """Makes the float references of tests/python importable."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python")
    if path not in sys.path:
        sys.path.insert(0, path)


def check_layout() -> None:
    for shape in [(100, 7), (3, 129, 5)]:
        sf = torch.randn(*shape, device="cuda")
        out = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
        assert torch.equal(out, sf), f"layout transform wrong for {shape}"


def check_fp8_gemm() -> None:
    # (1000, 2112, 8192): the heuristics choose A multicast over 2-CTA clusters (K >= 8192), odd N pairs.
    for m, n, k in [(1, 576, 512), (100, 2112, 7168), (257, 100, 192), (1000, 2112, 8192)]:
        fp8_case(m, n, k)


def check_fp8_gemm_256() -> None:
    # 256-row tiles (two math warpgroups of two 64-row waves): A multicast with an odd number of N blocks and
    # an M tail, B multicast with an odd number of M blocks, B scales straddling 128-column blocks (every
    # n0 % 128 case of BLOCK_N 112), the direct-store epilogue (D rows not 16-byte aligned).
    with forced_config("DG_FP8_GEMM_CONFIG", "256,128,3,0,2"):
        fp8_case(1000, 2112, 1536)
    with forced_config("DG_FP8_GEMM_CONFIG", "256,128,3,0,1"):
        fp8_case(1100, 576, 512)
    with forced_config("DG_FP8_GEMM_CONFIG", "256,112,0,0,0"):
        fp8_case(300, 1000, 384)
    with forced_config("DG_FP8_GEMM_CONFIG", "256,64,0,0,0"):
        fp8_case(300, 520, 256, d_row_pad=2)


def check_fp8_gemm_192() -> None:
    # 192-row tiles (three math warpgroups): A multicast with straddling B scales and an M tail, B multicast
    # with the pipelined promotion and an odd number of M blocks, the direct-store epilogue.
    with forced_config("DG_FP8_GEMM_CONFIG", "192,112,0,0,2"):
        fp8_case(1000, 2112, 1536)
    with forced_config("DG_FP8_GEMM_CONFIG", "192,80,0,1,1"):
        fp8_case(500, 576, 512)
    with forced_config("DG_FP8_GEMM_CONFIG", "192,64,0,0,0"):
        fp8_case(300, 520, 256, d_row_pad=2)


def check_fp8_gemm_deferred_store() -> None:
    # The deferred store (K of 32+ blocks: a tile's D staged and stored during the next tile's first K block) on
    # four SMs, so every CTA stores tiles while computing the next: 256-row tiles with A multicast, 192-row tiles.
    old = deep_gemm.get_num_sms()
    try:
        deep_gemm.set_num_sms(4)
        with forced_config("DG_FP8_GEMM_CONFIG", "256,128,3,0,2"):
            fp8_case(600, 700, 4112)
        with forced_config("DG_FP8_GEMM_CONFIG", "192,128,0,0,0"):
            fp8_case(600, 700, 4112)
    finally:
        deep_gemm.set_num_sms(old)


def check_fp8_gemm_c() -> None:
    # D = C + A @ B^T in the epilogue: float32 C on 256-row tiles (two waves per warpgroup), bfloat16 C
    # aliasing D on 128-row tiles; M, N, K tails.
    with forced_config("DG_FP8_GEMM_CONFIG", "256,128,3,0,2"):
        fp8_case(300, 1000, 384, c="f32")
    with forced_config("DG_FP8_GEMM_CONFIG", "128,112,0,1,0"):
        fp8_case(200, 520, 256, d_row_pad=2, c="is_d")


def check_fp8_gemm_split_k() -> None:
    # Split-K: partials, the per-tile counters and the last unit's sum; K blocks not a multiple of the
    # splits, M/N tails, the direct-store epilogue, and two calls (the counters must be back at zero).
    with forced_config("DG_FP8_GEMM_CONFIG", "128,64,0,0,0,8,4"):
        fp8_case(100, 1000, 1664)
        fp8_case(128, 2112, 7168)
    with forced_config("DG_FP8_GEMM_CONFIG", "64,32,0,1,0,8,3"):
        fp8_case(70, 520, 896, d_row_pad=2)


def check_fp8_gemm_block32() -> None:
    # Block-32 scales (recipe (1, 32, 32)): the model's pick, both promotions (pipelined 0 / 1), 256-row tiles with
    # A multicast, B multicast, split-K; N and K tails (K not a multiple of 32: the padded B-scale rows), the
    # direct-store epilogue.
    _tests_dir()
    from block32_reference import make_inputs, reference

    def case(m: int, n: int, k: int, d_row_pad: int = 0) -> None:
        a_fp8, sfa, b_fp8, sfb = make_inputs(m, n, k, seed=m + n + k, device="cpu")
        d = torch.full((m, n + d_row_pad), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :n]
        deep_gemm.fp8_gemm_nt((a_fp8.cuda(), sfa.cuda()), (b_fp8.cuda(), sfb.cuda()), d, recipe=(1, 32, 32))
        torch.cuda.synchronize()
        got = d.cpu()
        diff = calc_diff(got.double(), reference(a_fp8, sfa, b_fp8, sfb))
        assert diff < 1e-5 and not got.isnan().any(), f"block-32 fp8_gemm_nt wrong for {(m, n, k)}: diff={diff}"

    case(100, 2112, 1536)
    case(257, 100, 400, d_row_pad=2)
    for config, shape in [("128,128,0,0,0", (300, 576, 512)), ("128,96,0,1,1", (300, 1000, 1552)),
                          ("256,128,3,0,2", (600, 2080, 512)), ("64,32,0,1,0,8,4", (70, 520, 896))]:
        with forced_config("DG_FP8_GEMM_CONFIG", config):
            case(*shape)


def check_fp8_gemm_skip_head_mid() -> None:
    # The head-split epilogue: odd widths (element stores), M/N tails, a split-K shape; the mid columns and a
    # row pad keep their NaN (never written), every computed column is.
    for (left, mid, right), m, heads, k in [((3, 5, 7), 77, 6, 384), ((128, 64, 128), 129, 4, 512), ((128, 64, 128), 64, 2, 7168)]:
        n, width = heads * (left + right), heads * (left + mid + right)
        a, b = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(n, k, dtype=torch.bfloat16)
        a8 = tuple(t.cuda() for t in per_token_cast_to_fp8(a))
        b8 = tuple(t.cuda() for t in per_block_cast_to_fp8(b))
        d = torch.full((m, width + 4), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :width]
        deep_gemm.fp8_gemm_nt_skip_head_mid(a8, b8, d, (left, mid, right))
        torch.cuda.synchronize()
        heads_d = d.cpu().contiguous().view(m, heads, left + mid + right)
        got = torch.cat([heads_d[:, :, :left], heads_d[:, :, left + mid:]], dim=2).reshape(m, n)
        diff = calc_diff(got, a.float() @ b.float().t())
        assert diff < 1e-3 and not got.isnan().any(), f"skip_head_mid wrong for {(left, mid, right, m, k)}: diff={diff}"
        assert heads_d[:, :, left:left + mid].isnan().all(), "skip_head_mid wrote a mid column"


def fp8_case(m: int, n: int, k: int, d_row_pad: int = 0, c: str = "") -> None:
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(n, k, dtype=torch.bfloat16)
    a8 = tuple(t.cuda() for t in per_token_cast_to_fp8(a))
    b8 = tuple(t.cuda() for t in per_block_cast_to_fp8(b))
    d = torch.full((m, n + d_row_pad), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :n]
    c_tensor = None
    if c == "f32":
        c_tensor = torch.randn(m, n, device="cuda")
    elif c == "is_d":
        d.copy_(torch.randn(m, n))
        c_tensor = d
    c_value = c_tensor.float().cpu() if c_tensor is not None else 0.0
    deep_gemm.fp8_gemm_nt(a8, b8, d, c=c_tensor)
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), c_value + a.float() @ b.float().t())
    assert diff < 1e-3 and not d.cpu().isnan().any(), f"fp8_gemm_nt wrong for {(m, n, k)}: diff={diff}"


@contextlib.contextmanager
def forced_config(variable: str, value: str):
    """Forces a kernel config through DG_FP8_GEMM_CONFIG / DG_BF16_GEMM_CONFIG for the calls inside."""
    os.environ[variable] = value
    deep_gemm.reload_settings()
    try:
        yield
    finally:
        os.environ.pop(variable)
        deep_gemm.reload_settings()


def check_bf16_gemm() -> None:
    # (128, 2112, 2048): a 64x48 tile with 15 stages, the ring wraps twice per tile.
    for m, n, k in [(100, 576, 512), (257, 100, 192), (128, 2112, 2048)]:
        bf16_case(m, n, k)
    # B multicast over 2-CTA clusters (off by default), odd number of M blocks.
    with forced_config("DG_BF16_GEMM_CONFIG", "128,128,0,1"):
        bf16_case(1100, 576, 512)
    # Direct-store epilogue (D rows not 16-byte aligned) with the widest tile and 4 stages.
    with forced_config("DG_BF16_GEMM_CONFIG", "128,256,4,0"):
        bf16_case(300, 520, 256, d_row_pad=2)


def bf16_case(m: int, n: int, k: int, d_row_pad: int = 0) -> None:
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(n, k, dtype=torch.bfloat16)
    d = torch.full((m, n + d_row_pad), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :n]
    deep_gemm.bf16_gemm_nt(a.cuda(), b.cuda(), d)
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), a.float() @ b.float().t())
    assert diff < 1e-5 and not d.cpu().isnan().any(), f"bf16_gemm_nt wrong for {(m, n, k)}: diff={diff}"


def check_k_grouped_bf16_gemm() -> None:
    ks, m, n = [128, 0, 256], 136, 200  # an empty group; M, N multiples of no block size
    a = torch.randn(sum(ks), m, dtype=torch.bfloat16)
    b = torch.randn(sum(ks), n, dtype=torch.bfloat16)
    c = torch.randn(len(ks), m, n)
    ref = c.clone()
    start = 0
    for g, k in enumerate(ks):
        ref[g] += a[start:start + k].float().t() @ b[start:start + k].float()
        start += k
    d = c.cuda()
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a.cuda(), b.cuda(), d, ks, torch.tensor(ks, dtype=torch.int32).cuda(), c=d)
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), ref)
    assert diff < 1e-5 and not d.cpu().isnan().any(), f"k_grouped_bf16_gemm_tn_contiguous wrong: diff={diff}"


def check_m_grouped_bf16_gemm_psum() -> None:
    # use_psum_layout=True: group ends [130, 256, 261] (group 1 empty), groups start at multiples of 128,
    # 40 rows past the last group; only the groups' rows are compared.
    ends, starts, m, n, k = [130, 256, 261], [0, 256, 256], 424, 200, 192
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(len(ends), n, k, dtype=torch.bfloat16)
    d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    layout = torch.tensor(ends, dtype=torch.int32).cuda()
    deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a.cuda(), b.cuda(), d, layout, use_psum_layout=True)
    torch.cuda.synchronize()
    out = d.cpu()
    for g, (start, end) in enumerate(zip(starts, ends)):
        if end > start:
            diff = calc_diff(out[start:end], a[start:end].float() @ b[g].float().t())
            assert diff < 1e-5 and not out[start:end].isnan().any(), f"psum group {g} wrong: diff={diff}"


def fp8_grouped_operands(a: torch.Tensor, b: torch.Tensor):
    """CUDA FP8 operands of a [.., M, K] and b [G, N, K] (A per 128-K row scales, B 128x128 block scales)."""
    a_parts = [per_token_cast_to_fp8(x) for x in (a.unsqueeze(0) if a.dim() == 2 else a)]
    b_parts = [per_block_cast_to_fp8(x) for x in b]
    a8 = torch.stack([p[0] for p in a_parts]), torch.stack([p[1] for p in a_parts])
    if a.dim() == 2:
        a8 = a8[0][0], a8[1][0]
    b8 = torch.stack([p[0] for p in b_parts]), torch.stack([p[1] for p in b_parts])
    return tuple(t.cuda() for t in a8), tuple(t.cuda() for t in b8)


def check_m_grouped_fp8_gemm_contiguous() -> None:
    m_grouped_fp8_contiguous_case()


def check_m_grouped_fp8_gemm_contiguous_256() -> None:
    # 256-row tiles: the block of rows 256-511 holds groups 2 and 3 (visited once per group).
    with forced_config("DG_FP8_GEMM_CONFIG", "256,128,0,0,0"):
        m_grouped_fp8_contiguous_case()


def check_m_grouped_fp8_gemm_contiguous_multicast() -> None:
    # 2-CTA clusters sharing A (N = 200: two 128-column blocks, one pair; and 256-row tiles with a block of two
    # groups, visited twice by both CTAs of the pair). Clusters sharing B (pairs of M blocks): one pair in one
    # group (B multicast), one of two groups (each CTA loads its own B), an all-padding block beside one past M;
    # on 64-row tiles also padding blocks beside group blocks (computed along, written as padding); 128x192 sharing
    # B is the model's pick for large contiguous calls without zeroing (B scales straddle 128-column blocks).
    for value in ("128,128,0,0,2", "256,128,0,0,2", "128,128,0,0,1", "64,128,0,0,1", "128,192,0,0,1"):
        with forced_config("DG_FP8_GEMM_CONFIG", value):
            m_grouped_fp8_contiguous_case()


def m_grouped_fp8_contiguous_case() -> None:
    # Groups of 130, 0, 5 and 100 rows (aligned to 128) plus 40 padding rows past the last group, both
    # grouped_layout forms; padding rows (A holds random data there) must come out as zeros, or, with
    # ensure_zero_padding=False (DeepGEMM's SM90 rows), be computed in every 128-row block holding group rows.
    _tests_dir()
    from padding_rows import assert_padding_rows, contiguous_rows

    group_ms, n, k = [130, 0, 5, 100], 200, 320
    ends, rows, m = contiguous_rows(group_ms, 128, psum=True, tail=40, device="cpu")
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(len(group_ms), n, k, dtype=torch.bfloat16)
    a8, b8 = fp8_grouped_operands(a, b)
    for psum in (False, True):
        layout = (ends if psum else rows).cuda()
        for zero in (True, False):
            d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a8, b8, d, layout, use_psum_layout=psum, ensure_zero_padding=zero)
            torch.cuda.synchronize()
            out = d.cpu()
            for g in range(len(group_ms)):
                mine = rows == g
                if mine.any():
                    diff = calc_diff(out[mine], a[mine].float() @ b[g].float().t())
                    assert diff < 1e-3 and not out[mine].isnan().any(), f"contiguous group {g} wrong: diff={diff}"
            assert_padding_rows(out, rows, 128, zero, False, f"contiguous psum={psum}")
    # A malformed index layout (a group id past the last group) must not make the kernel read past B or its
    # scales: those rows count as padding.
    bad = rows.clone()
    bad[:128] = len(group_ms) + 4
    d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a8, b8, d, bad.cuda())
    torch.cuda.synchronize()
    assert (d[:128].cpu() == 0).all(), "rows of an out-of-range group id are not zero"


def check_m_grouped_fp8_gemm_masked() -> None:
    m_grouped_fp8_masked_case()


def check_m_grouped_fp8_gemm_masked_256() -> None:
    # 256-row tiles: two 64-row waves per math warpgroup, clipped per wave.
    with forced_config("DG_FP8_GEMM_CONFIG", "256,128,0,0,0"):
        m_grouped_fp8_masked_case()


def check_m_grouped_fp8_gemm_masked_128pp() -> None:
    # 128-row tiles, pipelined: a group's last tile whose second warpgroup has no rows (37) only passes slots on.
    with forced_config("DG_FP8_GEMM_CONFIG", "128,128,0,1,0"):
        m_grouped_fp8_masked_case()


def check_m_grouped_fp8_gemm_masked_multicast() -> None:
    # 2-CTA clusters on pairs of one group's M blocks sharing B: 64-row tiles (groups of 100 rows: two blocks, one
    # pair; 37: one block, the pair's second tile past masked_m) and pipelined 128-row tiles (one block per group).
    for value in ("64,128,0,0,1", "128,128,0,1,1"):
        with forced_config("DG_FP8_GEMM_CONFIG", value):
            m_grouped_fp8_masked_case()


def check_m_grouped_fp8_gemm_masked_overlap() -> None:
    # enable_overlap (tile signals): the masked case's groups on the default tiles and on 64-row B-sharing pairs
    # (a pair's second tile past masked_m signals nothing), the signal exactly G * ceil(max_m / 64) long so that a
    # counter written out of bounds is a memcheck error; the counters then hold ceil(N / BLOCK_N) per M block
    # with rows, 0 elsewhere.
    for value in ("", "64,128,0,0,1"):
        with forced_config("DG_FP8_GEMM_CONFIG", value):
            m_grouped_fp8_masked_case(overlap=True)


def m_grouped_fp8_masked_case(overlap: bool = False) -> None:
    # max_m = 100 (not a multiple of 64); masked_m 0, 37, 100, > max_m and negative (clamped on the device).
    values, max_m, n, k = [0, 37, 100, 1000, -7], 100, 200, 320
    a = torch.randn(len(values), max_m, k, dtype=torch.bfloat16)
    b = torch.randn(len(values), n, k, dtype=torch.bfloat16)
    a8, b8 = fp8_grouped_operands(a, b)
    d = torch.full((len(values), max_m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    masked_m = torch.tensor(values, dtype=torch.int32).cuda()
    if overlap:
        signal = torch.zeros(len(values) * ((max_m + 63) // 64), dtype=torch.int32, device="cuda")
        block_m, threshold = deep_gemm.m_grouped_fp8_gemm_nt_masked(a8, b8, d, masked_m, 64, enable_overlap=True, signal=signal)
        torch.cuda.synchronize()
        m_blocks = (max_m + block_m - 1) // block_m
        want = torch.zeros_like(signal, device="cpu")
        for g, v in enumerate(values):
            want[g * m_blocks:g * m_blocks + (min(max(v, 0), max_m) + block_m - 1) // block_m] = threshold
        assert torch.equal(signal.cpu(), want), f"signals {signal.tolist()} != {want.tolist()} (block_m {block_m})"
    else:
        deep_gemm.m_grouped_fp8_gemm_nt_masked(a8, b8, d, masked_m, 64)
    torch.cuda.synchronize()
    out = d.cpu()
    for g, v in enumerate(values):
        rows = min(max(v, 0), max_m)
        if rows:
            diff = calc_diff(out[g, :rows], a[g, :rows].float() @ b[g].float().t())
            assert diff < 1e-3 and not out[g, :rows].isnan().any(), f"masked group {g} wrong: diff={diff}"
        assert out[g, rows:].isnan().all(), f"masked group {g}: rows past masked_m written"


def check_swiglu_fp8() -> None:
    # Fused SwiGLU -> FP8: T not a multiple of 4, a 64-column group size, UE8M0 with S % 4 != 0 (zeroed tail
    # bytes), bf16 copy, avail_tokens < T; then apply_weight_to_fp8 with a trailing partial group. The
    # references run on the CPU.
    t, h = 37, 192
    x = torch.randn(t, 2 * h, dtype=torch.bfloat16)
    w = torch.rand(t)
    avail = torch.tensor([30], dtype=torch.int32).cuda()
    y, sf, y_bf16 = deep_gemm.swiglu_apply_weight_to_fp8(x.cuda(), w.cuda(), avail, 64, True, True, True, clamp_value=4.0,
                                                         output_bf16=True)
    torch.cuda.synchronize()
    gate, up = x[:30, :h].float(), x[:30, h:].float().clamp(-4, 4)
    v = torch.nn.functional.silu(gate.clamp(max=4.0)) * up * w[:30, None]
    # sf is int32 [37, 1] with strides (1, 40) (M-major): unpack with shifts, an int32 -> uint8 view needs unit stride
    scale = unpack_ue8m0_from_int(sf.cpu()[:30])[:, :3].repeat_interleave(64, dim=1)
    diff = calc_diff(y.cpu()[:30].float() * scale, v)
    assert diff < 1e-3, f"swiglu_apply_weight_to_fp8 wrong: diff={diff}"
    assert calc_diff(y_bf16.cpu()[:30].float(), v) < 1e-5, "swiglu_apply_weight_to_fp8 bf16 copy wrong"

    x = torch.randn(9, 208, dtype=torch.float16)
    out = torch.empty(9, 208, dtype=torch.float8_e4m3fn, device="cuda")
    sf = deep_gemm.apply_weight_to_fp8(x.cuda(), out, use_col_major_scales=False)
    torch.cuda.synchronize()
    deq = out.cpu().float() * sf.cpu().repeat_interleave(128, dim=1)[:, :208]
    diff = calc_diff(deq, x.float())
    assert diff < 1e-3, f"apply_weight_to_fp8 wrong: diff={diff}"


def dequantized(x_fp8: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """x_fp8 [R, K] with per-row-per-128-K scales sf [R, ceil(K/128)], as float32."""
    return x_fp8.float() * sf.repeat_interleave(128, dim=1)[:, :x_fp8.shape[1]]


def check_fp8_1d1d_gemm() -> None:
    # Recipe (1, 1, 128), FP32 d = c + A @ B^T with c added in the epilogue; M, N, K multiples of no block.
    m, n, k = 130, 200, 400
    a8, sfa = per_token_cast_to_fp8(torch.randn(m, k, dtype=torch.bfloat16))
    b8, sfb = per_token_cast_to_fp8(torch.randn(n, k, dtype=torch.bfloat16))
    c = torch.randn(m, n)
    ref = c + dequantized(a8, sfa) @ dequantized(b8, sfb).t()
    d = torch.full((m, n), float("nan"), device="cuda")
    deep_gemm.fp8_gemm_nt((a8.cuda(), sfa.cuda()), (b8.cuda(), sfb.cuda()), d, c=c.cuda(), recipe=(1, 1, 128))
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), ref)
    assert diff < 1e-3 and not d.cpu().isnan().any(), f"fp8_gemm_nt (1, 1, 128) wrong: diff={diff}"


def check_k_grouped_fp8_gemm() -> None:
    _k_grouped_fp8_case([256, 0, 128], 70, 100)  # an empty group; M, N multiples of no block size (and not of 4)
    # The pipelined promotion (forced): groups of 3, 0, 2 and 1 K blocks (both loop tails); then also on 2-CTA
    # clusters sharing B (M = 200: two M blocks, one pair; 70: one block, the pair's second tile past M); then with
    # C prefetched into L2 (only lines inside C).
    for value in ("128,128,0,0,1", "128,128,0,0,1,1", "64,128,0,0,0,1", "128,128,0,0,1,1,1"):
        with forced_config("DG_FP8_1D1D_GEMM_CONFIG", value):
            _k_grouped_fp8_case([384, 0, 256, 128], 70, 100)
            _k_grouped_fp8_case([384, 0, 256, 128], 200, 100)


def check_k_grouped_fp8_gemm_two_launches() -> None:
    # 35 groups: two launches (32 groups' tensor maps each), the second one's scales past the first's K.
    _k_grouped_fp8_case([128 * (g % 3) for g in range(35)], 40, 24)


def _k_grouped_fp8_case(ks, m, n, padded_to=None) -> None:
    """padded_to: the padded scale layout at that alignment (padding blocks NaN, never read), else compact."""
    a_parts, b_parts, sfa_parts, sfb_parts = [], [], [], []
    c = torch.randn(len(ks), m, n)
    ref = c.clone()
    for g, k in enumerate(ks):
        if k == 0:
            continue
        a8, sfa = per_token_cast_to_fp8(torch.randn(m, k, dtype=torch.bfloat16))
        b8, sfb = per_token_cast_to_fp8(torch.randn(n, k, dtype=torch.bfloat16))
        ref[g] += dequantized(a8, sfa) @ dequantized(b8, sfb).t()
        a_parts.append(a8.flatten())
        b_parts.append(b8.flatten())
        pad = (-(-k // padded_to) * padded_to + 127) // 128 - sfa.shape[1] if padded_to else 0
        sfa_parts.append(torch.cat([sfa.t(), torch.full((pad, m), float("nan"))]))
        sfb_parts.append(torch.cat([sfb.t(), torch.full((pad, n), float("nan"))]))
    a, b = torch.cat(a_parts).cuda(), torch.cat(b_parts).cuda()
    sfa, sfb = torch.cat(sfa_parts).contiguous().cuda(), torch.cat(sfb_parts).contiguous().cuda()
    d = torch.full((len(ks), m, n), float("nan"), device="cuda")
    deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, torch.tensor(ks, dtype=torch.int32).cuda(),
                                               c=c.cuda(), use_padded_sf_layout=padded_to is not None)
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), ref)
    assert diff < 1e-3 and not d.cpu().isnan().any(), f"k_grouped_fp8_gemm_nt_contiguous wrong: diff={diff}"


def check_k_grouped_fp8_gemm_compact_sf() -> None:
    # Per-group scale layouts: ragged group K's (partial last K blocks read zeros past their group, never the next
    # group's rows), compact scales, then padded ones at alignment 256 over 35 groups (two launches).
    _k_grouped_fp8_case([96, 0, 272, 16, 1040], 40, 24)
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    deep_gemm.set_mk_alignment_for_contiguous_layout(256)
    try:
        _k_grouped_fp8_case([16 * ((5 * g) % 23) for g in range(35)], 40, 24, padded_to=256)
    finally:
        deep_gemm.set_mk_alignment_for_contiguous_layout(old)


def check_tf32_hc_prenorm_gemm() -> None:
    # m = 13 without splits: units of one group reduce through the split-K workspace (racecheck of the
    # last-unit reduction); 137 x 100 with 3 splits: ragged m and k (TMA zero fill), d as a row slice.
    for m, k, splits in [(13, 4096, None), (137, 100, 3), (300, 1000, None)]:
        k_pad = (k + 7) // 8 * 8
        a_full = torch.randn(m, k_pad, dtype=torch.bfloat16)  # rows padded to 16 bytes
        a, a_dev = a_full[:, :k], a_full.cuda()[:, :k]
        b = torch.randn(24, k)
        lead = () if splits is None else (splits,)
        d = torch.full(lead + (m, 32), float("nan"), device="cuda")[..., :24]
        s = torch.full(lead + (m,), float("nan"), device="cuda")
        deep_gemm.tf32_hc_prenorm_gemm(a_dev, b.cuda(), d, s, num_splits=splits)
        torch.cuda.synchronize()
        # b rounded to nearest TF32, ties away from zero, as the kernel does (cvt.rna.tf32.f32; finite b)
        b_tf32 = ((b.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)
        ref_d, ref_s = a.double() @ b_tf32.double().T, a.double().square().sum(-1)
        got_d = d.cpu() if splits is None else d.cpu().sum(0)
        got_s = s.cpu() if splits is None else s.cpu().sum(0)
        diff = max(calc_diff(got_d, ref_d), calc_diff(got_s, ref_s))
        assert diff < 1e-9, f"tf32_hc_prenorm_gemm wrong for m={m} k={k} splits={splits}: diff={diff}"


def check_legacy_triton() -> None:
    """deep_gemm.legacy (Triton), fixed tile configs (no autotuning under the sanitizer): the TMA and the
    pointer m-grouped kernels with groups that straddle tiles and padding, the row gather with indices
    outside a, and the fused k-grouped kernels with device-side group bounds outside [0, K]."""
    from deep_gemm import legacy
    torch.manual_seed(0)
    cfg = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4, "num_stages": 3}
    m, n, g = 300, 200, 3
    idx = torch.randint(-1, g, (m,), dtype=torch.int32)
    idx[:128] = 0                                            # single-group tiles (the TMA path) too
    # (K, TMA, MN-major b): a K tail through TMA, the pointer kernel, an MN-major b through TMA.
    for k, tma, mn_major in ((200, True, False), (200, False, False), (384, True, True)):
        a = torch.randn(m, k, dtype=torch.bfloat16)
        b = torch.randn(g, n, k, dtype=torch.bfloat16)
        ref = torch.zeros(m, n)
        for gi in range(g):
            ref[idx == gi] = a[idx == gi].float() @ b[gi].float().t()
        weight = b.mT.contiguous().mT if mn_major else b
        d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a.cuda(), weight.cuda(), d, idx.cuda(), _config=dict(cfg, TMA=tma))
        torch.cuda.synchronize()
        diff = calc_diff(d.cpu(), ref)
        assert diff < 1e-5 and not d.cpu().isnan().any(), f"legacy m-grouped {(k, tma, mn_major)} wrong: diff={diff}"

    tokens = 50                                             # a_fused: source rows -1, >= tokens, valid
    rows = torch.randint(-5, tokens + 5, (m,), dtype=torch.int32)
    src = torch.randn(tokens, k, dtype=torch.bfloat16)
    ok = (idx >= 0) & (rows >= 0) & (rows < tokens)
    ref = torch.zeros(m, n)
    for gi in range(g):
        sel = ok & (idx == gi)
        ref[sel] = src[rows[sel].long()].float() @ b[gi].float().t()
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(src.cuda(), b.cuda(), d, (idx.cuda(), rows.cuda()), _config=cfg)
    torch.cuda.synchronize()
    diff = calc_diff(d.cpu(), ref)
    assert diff < 1e-5 and not d.cpu().isnan().any(), f"legacy a_fused m-grouped wrong: diff={diff}"

    positions, mm, nn = 200, 70, 100                        # fused k-grouped: bounds clamped, -1 / >= T skipped
    k_idx = torch.randint(-3, tokens + 3, (positions,), dtype=torch.int32)
    k_start = torch.tensor([-50, 60, 150, 0], dtype=torch.int32)
    k_end = torch.tensor([60, 150, 9000, 0], dtype=torch.int32)
    valid = ((k_idx >= 0) & (k_idx < tokens)).float()[:, None]
    for fused in ("a", "b"):
        gathered = torch.randn(tokens, mm if fused == "a" else nn, dtype=torch.bfloat16)
        plain = torch.randn(positions, nn if fused == "a" else mm, dtype=torch.bfloat16)
        rows_f = gathered[k_idx.clamp(0, tokens - 1).long()].float() * valid
        lhs, rhs = (rows_f, plain.float()) if fused == "a" else (plain.float(), rows_f)
        ref = torch.zeros(4, mm, nn)
        for gi in range(4):
            lo, hi = max(int(k_start[gi]), 0), min(int(k_end[gi]), positions)
            if lo < hi:
                ref[gi] = lhs[lo:hi].t() @ rhs[lo:hi]
        a_op, b_op = (gathered, plain) if fused == "a" else (plain, gathered)
        d = torch.full((4, mm, nn), float("nan"), device="cuda")
        fn = legacy.a_fused_k_grouped_bf16_gemm_tn_contiguous_tl if fused == "a" else \
            legacy.b_fused_k_grouped_bf16_gemm_tn_contiguous_tl
        fn(a_op.cuda(), b_op.cuda(), d, (k_idx.cuda(), k_start.cuda(), k_end.cuda()), False, _config=cfg)
        torch.cuda.synchronize()
        diff = calc_diff(d.cpu(), ref)
        assert diff < 1e-5 and not d.cpu().isnan().any(), f"legacy {fused}_fused k-grouped wrong: diff={diff}"



def paged_mqa_case(block_kv: int, forms) -> None:
    """Paged MQA logits over a cache of block_kv-row blocks: ragged 1-D and 2-D context lengths, a shuffled block table
    (an odd number of 32-row blocks: the last tile's second block read past the batch's blocks), schedules of 7 slots
    or fewer, and device data out of range (lengths past the table / negative, block indices outside the cache, a
    junk schedule) that the kernel clamps. forms: (next_n, heads, lens_2d, slots)."""
    _tests_dir()
    import paged_mqa_reference as ref
    torch.manual_seed(0)
    lens = torch.tensor([1, 64, 65, 200, 130], dtype=torch.int32)
    blocks = [(int(n) + block_kv - 1) // block_kv for n in lens]
    num_blocks = sum(blocks) + 2
    table = torch.randint(0, num_blocks, (5, max(blocks)), dtype=torch.int32)
    kv_cache, _ = ref.pack_kv_cache(torch.randn(num_blocks, block_kv, 1, 128))
    for next_n, heads, lens_2d, slots in forms:
        q = torch.randn(5, next_n, heads, 128).to(torch.float8_e4m3fn)
        w = torch.randn(5 * next_n, heads)
        cl = torch.stack([lens - next_n + 1 + t for t in range(next_n)], 1).contiguous() if lens_2d else lens
        want = ref.ref_paged_mqa_logits(q, kv_cache, w, cl, table, 256)
        args = [t.cuda() for t in (q, kv_cache, w, cl, table)]
        meta = deep_gemm.get_paged_mqa_logits_metadata(args[3], block_kv, slots)
        got = deep_gemm.fp8_paged_mqa_logits(*args[:5], meta, 256, True).cpu()
        inside = torch.isfinite(want)
        assert torch.equal(inside, torch.isfinite(got)), "paged mqa logits: -inf pattern wrong"
        assert calc_diff(got[inside], want[inside]) < 1e-5, "paged mqa logits wrong"
        bad_lens, bad_table = args[3].clone(), args[4].clone()
        bad_lens.view(-1)[0], bad_lens.view(-1)[-1] = 1 << 30, -9
        bad_table[0, 0], bad_table[1, 0] = -3, num_blocks + 50
        for sched in (deep_gemm.get_paged_mqa_logits_metadata(bad_lens, block_kv, 7),
                      torch.tensor([[-1, 5], [9, 9], [2, -4], [0, 0], [7, 1], [1, 1], [3, 2], [5, 0]], dtype=torch.int32).cuda()):
            deep_gemm.fp8_fp4_paged_mqa_logits((args[0], None), args[1], args[2], bad_lens, bad_table, sched, 200, True,
                                               torch.bfloat16)
        torch.cuda.synchronize()


def check_paged_mqa_logits() -> None:
    paged_mqa_case(64, ((1, 64, False, 7), (2, 32, True, 7)))


def check_paged_mqa_logits_kv32() -> None:
    """32-row blocks (two gathered per 64-row tile), next_n 1, 2 and 4 (the one-warpgroup N = 256 kernel, with a
    schedule of half the slots as vLLM builds it for next_n 4)."""
    paged_mqa_case(32, ((1, 64, False, 7), (2, 32, True, 7), (4, 64, True, 3)))


def check_mqa_logits() -> None:
    """Dense MQA logits: ragged windows (empty, past the ends, negative starts) clamped on the device, H 64 and 32,
    a compressed (max_seqlen_k) output."""
    _tests_dir()
    from mqa_logits_reference import mqa_logits_ref
    torch.manual_seed(0)
    for s, skv, heads, dim, max_k in ((37, 300, 64, 128, 0), (20, 130, 32, 64, 96)):
        q = torch.randn(s, heads, dim).to(torch.float8_e4m3fn)
        kv_f = torch.randn(skv, dim)
        kv_sf = kv_f.abs().amax(1).clamp_min(1e-4) / 448.0
        kv = (kv_f / kv_sf[:, None]).to(torch.float8_e4m3fn)
        w = torch.randn(s, heads)
        ks = torch.randint(-5, skv + 5, (s,), dtype=torch.int32)
        ke = ks + torch.randint(-3, skv // 3, (s,), dtype=torch.int32)
        ks[0], ke[0] = 0, skv
        if max_k:
            ke = torch.minimum(ke, ks + max_k)
        got = deep_gemm.fp8_fp4_mqa_logits((q.cuda(), None), (kv.cuda(), kv_sf.cuda()), w.cuda(), ks.cuda(), ke.cuda(),
                                           True, max_k, torch.float32).cpu().double()
        want, written, _ = mqa_logits_ref(q.float(), kv.float(), kv_sf, w, ks, ke, True, max_k)
        assert got.shape == want.shape, "mqa logits: shape"
        assert calc_diff(got[written], want[written]) < 1e-5, "mqa logits wrong"
        assert torch.isneginf(got[~written]).all(), "mqa logits: -inf outside the windows"


def check_fp8_einsum() -> None:
    """fp8_einsum('bhr,hdr->bhd'): the head-batched FP8 kernel with a ragged batch (77) and d (200)."""
    _tests_dir()
    import einsum_reference as ref
    torch.manual_seed(0)
    b, h, r, d = 77, 3, 256, 200
    x, y = torch.randn(b, h, r), torch.randn(h, d, r)
    qx, sx = per_token_cast_to_fp8(x.view(-1, r).cuda(), use_ue8m0=False)
    qx, sx = qx.view(b, h, r), sx.view(b, h, -1)
    qy = torch.empty(h, d, r, device="cuda", dtype=torch.float8_e4m3fn)
    sy = torch.empty(h, (d + 127) // 128, r // 128, device="cuda")
    for i in range(h):
        qy[i], sy[i] = per_block_cast_to_fp8(y[i].cuda(), use_ue8m0=False)
    z = torch.full((b, h, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.fp8_einsum("bhr,hdr->bhd", (qx, sx), (qy, sy), z)
    want = ref.bhr_hdr_bhd(ref.dequant_per_token(qx.cpu(), sx.cpu()), ref.dequant_per_block(qy.cpu(), sy.cpu()))
    got = z.cpu().double()
    assert not got.isnan().any() and calc_diff(got, want.double()) < 1e-4, "fp8_einsum wrong"


if __name__ == "__main__":
    # Optional arguments: run only the cases whose names contain one of them (e.g. "bf16").
    cases = [f for name, f in list(globals().items()) if name.startswith("check_") and callable(f)]  # in file order
    cases = [c for c in cases if len(sys.argv) < 2 or any(arg in c.__name__ for arg in sys.argv[1:])]
    failures = 0
    for case in cases:
        try:
            case()
            print(f"{case.__name__}: ok")
        except Exception as exc:  # report every case, then fail
            failures += 1
            print(f"{case.__name__}: FAILED: {type(exc).__name__}: {exc}")
    sys.exit(1 if failures else 0)
