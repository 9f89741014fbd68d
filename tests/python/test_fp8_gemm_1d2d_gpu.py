"""GPU correctness of the SM90 FP8 1D2D GEMM (`deep_gemm.fp8_gemm_nt`, BF16 out; `fp8_gemm_{nn,tn,tt}` at the
end of the file).

Fresh random inputs per shape, output poisoned with NaN before every call, reference = the dequantized
FP8 operands multiplied in float32; gemm_checks.assert_gemm_close (no NaN, calc_diff < 1e-5, every 128x128
tile within 2^-7 of max|ref|), C with the product's spread, and repeated runs bitwise identical.
Skipped without a Hopper GPU.
"""
import inspect
import math

import pytest
import torch

pytestmark = pytest.mark.gpu

_HAS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
if not _HAS_HOPPER:
    pytest.skip('needs a Hopper (sm_90) GPU', allow_module_level=True)

import deep_gemm  # noqa: E402
from gemm_checks import assert_gemm_close, scaled_like  # noqa: E402
from deep_gemm.utils import (dequantize_per_block, dequantize_per_token, per_block_cast_to_fp8,  # noqa: E402
                             per_token_cast_to_fp8)


def _call_cast(fn, x):
    """The casts take `use_ue8m0` in DeepGEMM's signature; pass False where accepted."""
    params = inspect.signature(fn).parameters
    if 'use_ue8m0' in params:
        return fn(x, use_ue8m0=False)
    return fn(x)


def _make_inputs(m, n, k, seed):
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16, generator=g)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16, generator=g)
    a_fp8, sfa = _call_cast(per_token_cast_to_fp8, a)
    b_fp8, sfb = _call_cast(per_block_cast_to_fp8, b)
    return a_fp8, sfa.float(), b_fp8, sfb.float()


def _reference(a_fp8, sfa, b_fp8, sfb):
    m, k = a_fp8.shape
    n = b_fp8.shape[0]
    kb = math.ceil(k / 128)
    sa = sfa[:, :kb].repeat_interleave(128, dim=1)[:, :k]
    sb = sfb.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    a = a_fp8.float() * sa
    b = b_fp8.float() * sb
    return a @ b.t()


def _run(a_fp8, sfa, b_fp8, sfb, **kwargs):
    m, n = a_fp8.shape[0], b_fp8.shape[0]
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d, **kwargs)
    torch.cuda.synchronize()
    return d


def _check(m, n, k, seed=0, **kwargs):
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, seed)
    ref = _reference(a_fp8, sfa, b_fp8, sfb)
    d = _run(a_fp8, sfa, b_fp8, sfb, **kwargs)
    assert_gemm_close(d, ref, f'{m}x{n}x{k} {kwargs}')
    d2 = _run(a_fp8, sfa, b_fp8, sfb, **kwargs)
    assert torch.equal(d, d2), f'{m}x{n}x{k}: repeated runs differ'


_MS = (1, 64, 100, 128, 1000, 4096)
_NS = (100, 576, 2112, 4096, 7168)

# Full M x N cross at two K values (one with a 128-K tail, one deep), plus K tails and odd K elsewhere.
_SHAPES = [(m, n, k) for m in _MS for n in _NS for k in (512, 7168)]
_SHAPES += [(m, n, 192) for m in (1, 100, 1000) for n in (100, 2112)]
_SHAPES += [(m, n, 1536) for m in (64, 128, 4096) for n in (576, 7168)]
_SHAPES += [(128, 24576, 1536), (1, 24576, 1536), (4096, 24576, 1536)]
_SHAPES += [(1, 129280, 7168), (128, 129280, 7168)]
_SHAPES += [(8192, 4096, 2048), (128, 7168, 16384), (4096, 7168, 16384), (4096, 32768, 512)]
_SHAPES += [(77, 4104, 2064), (257, 136, 400)]  # nothing aligned to any block size
_SHAPES += [(1000, 2112, 8192), (1100, 4104, 8320)]  # A multicast (K >= 8192) with an odd number of N blocks


@pytest.mark.parametrize('m,n,k', _SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _SHAPES])
def test_fp8_gemm_nt(m, n, k):
    _check(m, n, k, seed=m * 7 + n * 13 + k)


@pytest.mark.parametrize('compiled_dims', ['', 'k', 'mnk'])
def test_fp8_gemm_nt_compiled_dims(compiled_dims):
    for m, n, k in ((100, 2112, 7168), (1000, 576, 512)):
        _check(m, n, k, seed=1, compiled_dims=compiled_dims)


def test_fp8_gemm_nt_strided():
    """Row strides larger than the row (a, b and d are column slices of wider tensors)."""
    m, n, k = 300, 1024, 1024
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 3)
    a_wide = torch.empty((m, k + 256), device='cuda', dtype=a_fp8.dtype)
    b_wide = torch.empty((n, k + 128), device='cuda', dtype=b_fp8.dtype)
    a_wide[:, :k] = a_fp8
    b_wide[:, :k] = b_fp8
    d_wide = torch.full((m, n + 64), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, :n]
    deep_gemm.fp8_gemm_nt((a_wide[:, :k], sfa), (b_wide[:, :k], sfb), d)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    assert_gemm_close(d, _reference(a_fp8, sfa, b_fp8, sfb), f'{m}x{n}x{k}')


def test_fp8_gemm_nt_mn_major_scales():
    """A scales passed already in the kernel's M-major, TMA-aligned layout."""
    m, n, k = 1000, 2112, 7168
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 5)
    kb = sfa.shape[1]
    m_pad = (m + 3) // 4 * 4
    storage = torch.empty((kb, m_pad), device='cuda', dtype=torch.float32)
    storage[:, :m] = sfa.t()
    sfa_mn = storage[:, :m].t()
    d = _run(a_fp8, sfa_mn, b_fp8, sfb)
    assert not torch.isnan(d).any()
    assert_gemm_close(d, _reference(a_fp8, sfa, b_fp8, sfb), f'{m}x{n}x{k}')


def test_fp8_gemm_nt_rows_do_not_leak():
    """Each output row depends only on its own A row: zeroing one A row zeroes exactly that row."""
    m, n, k = 200, 576, 1024
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 9)
    a_fp8 = a_fp8.clone()
    a_fp8[137].zero_()
    d = _run(a_fp8, sfa, b_fp8, sfb)
    assert (d[137] == 0).all()
    assert (d[136] != 0).any() and (d[138] != 0).any()


# Kernel variants the heuristics may not pick for the shapes above, forced through DG_FP8_GEMM_CONFIG
# ("block_m,block_n,stages,pipelined,multicast"): multicast of B, of A with straddling B scales and with one
# math warpgroup, no promotion overlap, explicit stages; the shapes have odd M/N block counts, K tails and a
# single K block.
# 256-row tiles (two 64-row waves per math warpgroup): A multicast, B multicast, straddling B scales (BLOCK_N 112
# and 80: the promotion picks its compile-time scale columns by n0 % 128), 64-wide. 128x144 with A multicast:
# straddling scales with a third scale block. Three with tile-order groups (6th field) that do not divide the
# N block count, with and without cluster pairs. 192-row tiles (three math warpgroups of 64 rows): A multicast
# with straddling B scales, B multicast with the pipelined promotion, a tile-order group.
_FORCED = ['128,128,0,1,1', '128,192,0,0,2', '64,96,0,1,2', '128,112,3,1,0', '128,32,0,1,2',
           '256,128,0,0,2', '256,128,3,0,1', '256,112,0,0,0', '256,80,0,0,2', '256,64,0,0,0', '128,144,0,0,2',
           '128,176,0,0,0', '64,16,16,1,0', '256,128,0,0,0,3', '128,128,0,1,2,5', '128,64,0,1,1,1',
           '192,128,0,0,0', '192,112,0,0,2', '192,80,0,1,1', '192,64,0,0,0,5']
_FORCED_SHAPES = [(1000, 2112, 1536), (4160, 4144, 384), (129, 7168, 128), (257, 576, 8320)]


@pytest.mark.parametrize('config', _FORCED)
@pytest.mark.parametrize('m,n,k', _FORCED_SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _FORCED_SHAPES])
def test_fp8_gemm_nt_forced_config(forced_config, config, m, n, k):
    forced_config(config)
    # M, N and K at run time: one kernel per config serves all the shapes (keeps the JIT time of the grid small).
    _check(m, n, k, seed=m + n + k, compiled_dims='')


# The deferred store (plain K loop with the TMA-store epilogue, K of 32+ blocks: each tile's D is staged and
# stored during the next tile's first K block): six SMs, so every CTA runs several tiles and stores each one
# behind the next; M, N and K not multiples of the tile; K at run time (both paths in one kernel) and compiled.
# 256-row tiles (two waves: one staged before the wgmmas, one behind them) with and without A multicast,
# 192- and 128-row tiles (one wave), straddling B scales.
@pytest.mark.parametrize('config', ['', '256,128,0,0,0', '256,112,0,0,2', '192,128,0,0,1', '128,144,0,0,0'])
def test_fp8_gemm_nt_deferred_store_many_tiles(forced_config, config):
    forced_config(config)
    old = deep_gemm.get_num_sms()
    try:
        deep_gemm.set_num_sms(6)
        for compiled_dims in ('', 'k'):
            _check(1000, 1100, 4112, seed=11, compiled_dims=compiled_dims)
    finally:
        deep_gemm.set_num_sms(old)


# Split-K (7th field): the units of a tile share its K blocks and the tile's last unit adds up their FP32
# partials in split order, so _check's bitwise repeat also checks that the sum does not depend on which unit
# comes last. 128x64 / 64x32 as the M=128 shapes would use it; pipelined and not; a group_n that does not
# divide the N blocks. Shapes: the M=128 targets, nothing aligned (K tail, K blocks not a multiple of the
# splits), one K block per split, one row, many tiles per CTA (several units per CTA, counters reused).
_SPLIT_K = ['128,64,0,0,0,8,4', '64,32,0,1,0,8,3', '128,128,0,1,0,8,8', '64,64,0,0,0,3,2']
_SPLIT_K_SHAPES = [(128, 2112, 7168), (128, 4096, 7168), (100, 1000, 7056), (257, 576, 1024), (1, 4104, 2064),
                   (1024, 2048, 1024)]


@pytest.mark.parametrize('config', _SPLIT_K)
@pytest.mark.parametrize('m,n,k', _SPLIT_K_SHAPES, ids=[f'{m}x{n}x{k}' for m, n, k in _SPLIT_K_SHAPES])
def test_fp8_gemm_nt_split_k(forced_config, config, m, n, k):
    forced_config(config)
    _check(m, n, k, seed=m + n + k + 1, compiled_dims='')
    _check(m, n, k, seed=m + n + k + 2, compiled_dims='')  # the counters were left at zero by the first


def test_fp8_gemm_nt_split_k_direct_store_and_streams(forced_config):
    """Split-K into a D the TMA store cannot address (direct-store epilogue; nothing written outside the
    view), then the same problem on two streams at once (each stream has its own counters)."""
    forced_config('128,64,0,0,0,8,4')
    m, n, k = 128, 1000, 4096
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 21)
    ref = _reference(a_fp8, sfa, b_fp8, sfb)
    d_wide = torch.full((m, n + 3), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d_wide[:, :n], compiled_dims='')
    torch.cuda.synchronize()
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    assert_gemm_close(d_wide[:, :n], ref, 'split-K direct store')
    outs = [torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16) for _ in range(2)]
    streams = [torch.cuda.Stream() for _ in range(2)]
    torch.cuda.synchronize()
    for _ in range(20):
        for out, stream in zip(outs, streams):
            with torch.cuda.stream(stream):
                deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), out, compiled_dims='')
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1])
    assert_gemm_close(outs[0], ref, 'split-K on two streams')


def test_fp8_gemm_nt_model_split_k_graph_and_c():
    """The config model splits K at 128x512x7168 (64x32 tiles, one wave of units). The split call is captured
    in a CUDA graph (its workspace is allocated and its counters zeroed while capturing) and replayed on
    another stream while eager calls on the capturing stream run beside it (graph and eager calls use
    different workspaces); every result matches. With a C operand the same shape runs unsplit."""
    m, n, k = 128, 512, 7168
    planned = deep_gemm._C._plan_gemm_call('fp8_gemm_nt', m, n, k, num_sms=torch.cuda.get_device_properties(0).multi_processor_count)
    assert '_sk' in planned[0][1], planned[0][1]
    with_c = deep_gemm._C._plan_gemm_call('fp8_gemm_nt', m, n, k, with_c=True,
                                          num_sms=torch.cuda.get_device_properties(0).multi_processor_count)
    assert '_sk' not in with_c[0][1], with_c[0][1]
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 41)
    ref = _reference(a_fp8, sfa, b_fp8, sfb)
    eager = _run(a_fp8, sfa, b_fp8, sfb)  # compiles and loads outside the capture
    assert_gemm_close(eager, ref, 'model split-K, eager')
    capture, replay = torch.cuda.Stream(), torch.cuda.Stream()
    d_graph = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph, stream=capture):
        deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d_graph)
    d_eager = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    for _ in range(20):
        with torch.cuda.stream(replay):
            graph.replay()
        with torch.cuda.stream(capture):
            deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d_eager)
    torch.cuda.synchronize()
    assert torch.equal(d_graph, eager) and torch.equal(d_eager, eager)
    c = scaled_like(ref)  # as large as the product: a dropped or doubled c fails
    d_c = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d_c, c=c)
    torch.cuda.synchronize()
    assert_gemm_close(d_c, ref + c, 'model shape with c')


@pytest.mark.parametrize('config,message', [('128,64,0,0,0,8,8', 'is more than the 7 K blocks'),
                                            ('256,128,0,0,0,8,2', 'split_k needs block_m 64 or 128'),
                                            ('128,64,0,0,2,8,2', 'split_k needs block_m 64 or 128 and multicast 0')])
def test_fp8_gemm_nt_split_k_rejected(forced_config, config, message):
    """Split-K configs that cannot run raise before any launch and leave D alone."""
    forced_config(config)
    a_fp8, sfa, b_fp8, sfb = _make_inputs(128, 256, 896, 5)
    d = torch.full((128, 256), float('nan'), device='cuda', dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=message):
        deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d)
    torch.cuda.synchronize()
    assert torch.isnan(d).all()


@pytest.mark.parametrize('config', ['256,128,0,0,2', '256,112,0,0,0', '128,144,0,0,0'])
def test_fp8_gemm_nt_forced_direct_store(forced_config, config):
    """D rows not 16-byte aligned (the direct-store epilogue) with the forced tile; nothing written past N."""
    forced_config(config)
    m, n, k = 600, 1000, 640
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 11)
    d_wide = torch.full((m, n + 3), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, :n]
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d, compiled_dims='')
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    assert_gemm_close(d, _reference(a_fp8, sfa, b_fp8, sfb), f'{m}x{n}x{k}')


def test_fp8_gemm_nt_direct_store_odd_column_base():
    """D starting one column into a wider tensor: an even row stride but a base 2 bytes past a 4-byte
    boundary (direct-store epilogue), so column pairs must not be written as one 4-byte word."""
    m, n, k = 300, 1000, 512
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 12)
    d_wide = torch.full((m, n + 2), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, 1:n + 1]
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert torch.isnan(d_wide[:, 0]).all() and torch.isnan(d_wide[:, n + 1]).all(), 'wrote outside the output view'
    assert_gemm_close(d, _reference(a_fp8, sfa, b_fp8, sfb), f'{m}x{n}x{k}')


@pytest.mark.parametrize('config', ['', '256,128,0,0,2', '128,112,0,1,0', '64,96,0,0,0'])
@pytest.mark.parametrize('c_kind', ['bf16', 'f32', 'is_d', 'f32_transposed', 'bf16_broadcast'])
def test_fp8_gemm_nt_c_in_epilogue(forced_config, config, c_kind):
    """d = c + a @ b.T with c added in the kernel's epilogue: bfloat16 and float32 c, c aliasing d, a
    column-major c and a row-broadcast c (copied once); unaligned M/N/K; nothing written past N."""
    if config:
        forced_config(config)
    m, n, k = 700, 1000, 1152
    a_fp8, sfa, b_fp8, sfb = _make_inputs(m, n, k, 21)
    ref = _reference(a_fp8, sfa, b_fp8, sfb)
    g = torch.Generator(device='cuda').manual_seed(22)
    c32 = scaled_like(ref, g)  # as large as the product: a dropped or doubled c fails
    d_wide = torch.full((m, n + 8), float('nan'), device='cuda', dtype=torch.bfloat16)
    d = d_wide[:, :n]
    if c_kind == 'bf16':
        c = c32.to(torch.bfloat16)
    elif c_kind == 'f32':
        c = c32
    elif c_kind == 'is_d':
        d.copy_(c32)
        c = d
    elif c_kind == 'f32_transposed':
        c = c32.t().contiguous().t()
    else:
        c = c32[:1].expand(m, n).to(torch.bfloat16)
    c_value = c.float().clone()
    deep_gemm.fp8_gemm_nt((a_fp8, sfa), (b_fp8, sfb), d, c=c)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert torch.isnan(d_wide[:, n:]).all(), 'wrote outside the output view'
    assert_gemm_close(d, c_value + ref, f'c {c_kind} config {config!r}')


# ---- fp8_gemm_{nn,tn,tt} -----------------------------------------------------------------------------------
# GPU correctness of `fp8_gemm_{nn,tn,tt}` (and nt beside them) with the default recipe (1, 128, 128): the
# 1D2D kernel, BF16 output. The t/n forms take transposed views of K-major storage (A [M, K] with per-token
# scales, B [N, K] with 128x128 block scales), so the reference is the same for all four: the dequantized
# operands multiplied in float32, plus C with the product's spread. Outputs poisoned with NaN first; ragged
# M/N/K; gemm_checks.assert_gemm_close (calc_diff < 1e-5, every 128x128 tile). Skipped without a Hopper GPU.


def _operands(layout, m, n, k, seed):
    """((a, sfa), (b, sfb)) in the form fp8_gemm_<layout> takes, and the float32 product."""
    g = torch.Generator(device='cuda').manual_seed(seed)
    a = torch.randn((m, k), device='cuda', dtype=torch.bfloat16, generator=g)
    b = torch.randn((n, k), device='cuda', dtype=torch.bfloat16, generator=g)
    a8, sfa = per_token_cast_to_fp8(a, use_ue8m0=False)
    b8, sfb = per_block_cast_to_fp8(b, use_ue8m0=False)
    product = dequantize_per_token(a8, sfa) @ dequantize_per_block(b8, sfb).t()
    if layout[0] == 't':
        a8, sfa = a8.t(), sfa.t()  # A [K, M], sfa [ceil(K/128), M]: still K-major in memory
    if layout[1] == 'n':
        b8, sfb = b8.t(), sfb.t()  # B [K, N], sfb [ceil(K/128), ceil(N/128)]
    return (a8, sfa), (b8, sfb), product


@pytest.mark.parametrize('recipe', [None, (1, 128, 128)], ids=['default', 'explicit'])
@pytest.mark.parametrize('with_c', [False, True], ids=['no_c', 'c'])
@pytest.mark.parametrize('layout', ['nt', 'nn', 'tn', 'tt'])
@pytest.mark.parametrize('m,n,k', [(1, 576, 512), (130, 1000, 1152), (1000, 2112, 7168), (77, 4104, 2064)])
def test_fp8_gemm_layouts(layout, with_c, recipe, m, n, k):
    a, b, ref = _operands(layout, m, n, k, seed=m + 3 * n + 7 * k)
    c = None
    if with_c:
        c = scaled_like(ref)  # as large as the product: a dropped or doubled c fails
        ref = ref + c
    d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    getattr(deep_gemm, f'fp8_gemm_{layout}')(a, b, d, c=c, recipe=recipe)
    torch.cuda.synchronize()
    assert_gemm_close(d, ref, f'fp8_gemm_{layout} {m}x{n}x{k} c={with_c} recipe={recipe}')


@pytest.mark.parametrize('layout', ['nn', 'tn', 'tt'])
def test_fp8_gemm_layouts_match_nt_bitwise(layout):
    """The same storage through each form gives the result of fp8_gemm_nt, bit for bit (one kernel)."""
    m, n, k = 300, 1000, 1536
    a, b, _ = _operands('nt', m, n, k, seed=4)
    a_l, b_l, _ = _operands(layout, m, n, k, seed=4)
    d_nt = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    d_l = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt(a, b, d_nt)
    getattr(deep_gemm, f'fp8_gemm_{layout}')(a_l, b_l, d_l)
    torch.cuda.synchronize()
    assert not torch.isnan(d_nt).any()
    assert torch.equal(d_nt, d_l)
