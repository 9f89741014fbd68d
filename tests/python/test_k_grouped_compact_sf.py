"""CPU checks of the K-grouped FP8 GEMM's per-group scale layouts (sgl-deep-gemm 0.2.5's
``use_padded_sf_layout``; docs/compat_2_8.md, "k_grouped_fp8_gemm_nt_contiguous scale shapes"): the binding,
validation on meta / CPU tensors, the kernel the planner picks, torch.compile, and the packed-UE8M0 layout helper
against a plain PyTorch reference. GPU results: test_k_grouped_compact_sf_gpu.py."""
import inspect
import math

import pytest
import torch

import deep_gemm
from deep_gemm import _C
from deep_gemm.utils import get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor as pack

OP = 'k_grouped_fp8_gemm_nt_contiguous'
FP8, F32, I32 = torch.float8_e4m3fn, torch.float32, torch.int32


def _blocks(ks, align):
    """Each group's scale blocks: ceil(align(K_g, align) / 128) (align 128: the compact layout)."""
    return [math.ceil(math.ceil(k / align) * align / 128) for k in ks]


def _args(device, m, n, ks, s, transposed=False):
    a = (torch.empty(sum(ks) * m, dtype=FP8, device=device), torch.ones((s, m) if transposed else (m, s), device=device))
    b = (torch.empty(sum(ks) * n, dtype=FP8, device=device), torch.ones((s, n) if transposed else (n, s), device=device))
    d = torch.empty(len(ks), m, n, dtype=F32, device=device)
    return a, b, d, ks, torch.tensor(ks, dtype=I32).to(device)


@pytest.fixture
def alignment():
    """Sets get_mk_alignment_for_contiguous_layout() for a test and restores it."""
    old = deep_gemm.get_mk_alignment_for_contiguous_layout()
    yield deep_gemm.set_mk_alignment_for_contiguous_layout
    deep_gemm.set_mk_alignment_for_contiguous_layout(old)


def test_signature_and_schema():
    params = inspect.signature(getattr(deep_gemm, OP)).parameters
    names = list(params)
    assert names[-3:] == ['use_psum_layout', 'use_padded_sf_layout', 'epilogue']
    assert params['use_padded_sf_layout'].default is False and params['epilogue'].default is None
    schema = str(getattr(torch.ops.deep_gemm, OP).default._schema)
    assert 'bool use_psum_layout=False, bool use_padded_sf_layout=False)' in schema


# ks multiples of 16, ragged: compact S = 1 + 0 + 3 + 1 = 5; padded to 256: 2 + 0 + 4 + 2 = 8.
KS = [96, 0, 272, 128]


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_validation_compact_and_padded(device, alignment):
    m, n = 64, 96
    assert _blocks(KS, 128) == [1, 0, 3, 1] and _blocks(KS, 256) == [2, 0, 4, 2]

    def call(s, *extra, transposed=False, **kwargs):
        args = _args(device, m, n, KS, s, transposed)
        if device == 'meta':
            getattr(deep_gemm, OP)(*args, *extra, **kwargs)
        else:  # validation passed: the launch wants CUDA tensors
            with pytest.raises(RuntimeError, match='requires CUDA tensors'):
                getattr(deep_gemm, OP)(*args, *extra, **kwargs)

    alignment(256)
    call(5)  # compact, the default
    call(5, transposed=True)
    call(8, use_padded_sf_layout=True)
    call(8, None, (1, 1, 128), 'mn', False, True)  # positional, 0.2.5's order
    call(5, use_padded_sf_layout=False, epilogue=None)
    with pytest.raises(ValueError, match=rf"^{OP}: sfa must have shape \[M, S\] = \[64, 5\] \(DeepGEMM's form; "
                                         r"S = sum\(ceil\(ks / 128\)\), the compact layout\) or its transpose \[5, 64\]; got \[64, 8\]"):
        getattr(deep_gemm, OP)(*_args(device, m, n, KS, 8))
    with pytest.raises(ValueError, match=r"sfa must have shape \[M, S\] = \[64, 8\] \(DeepGEMM's form; "
                                         r"S = sum\(ceil\(align\(ks, 256\) / 128\)\), the padded layout\)"):
        getattr(deep_gemm, OP)(*_args(device, m, n, KS, 5), use_padded_sf_layout=True)
    alignment(128)  # padding to 128 adds no block: both layouts are [M, 5]
    call(5, use_padded_sf_layout=True)
    alignment(64)
    call(5, use_padded_sf_layout=True)


@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_validation_errors(device):
    with pytest.raises(ValueError, match=rf'^{OP}: ks_cpu\[1\] must be a non-negative multiple of 16; got 40'):
        getattr(deep_gemm, OP)(*_args(device, 64, 96, [128, 40], 2))
    class NoTruth:  # bool parameters take Python truth values, as the op's other flags do
        def __bool__(self):
            raise ValueError('no truth value')

    with pytest.raises(TypeError, match=rf'^{OP}: use_padded_sf_layout must be a bool; got NoTruth'):
        getattr(deep_gemm, OP)(*_args(device, 64, 96, [128], 1), use_padded_sf_layout=NoTruth())
    with pytest.raises(NotImplementedError, match='epilogue'):
        getattr(deep_gemm, OP)(*_args(device, 64, 96, [128], 1), epilogue='relu')
    # The BF16 K-grouped op keeps whole 128-K groups.
    with pytest.raises(ValueError, match=r'ks_cpu\[0\] must be a non-negative multiple of 128; got 96'):
        a, b = torch.empty(96, 64, dtype=torch.bfloat16, device=device), torch.empty(96, 32, dtype=torch.bfloat16, device=device)
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, torch.empty(1, 64, 32, device=device), [96],
                                                    torch.tensor([96], dtype=I32).to(device))


def test_torch_compile_fullgraph(alignment):
    alignment(256)

    @torch.compile(fullgraph=True, backend='eager')
    def f(a, sfa, b, sfb, d, ks_tensor):
        deep_gemm.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, KS, ks_tensor, use_padded_sf_layout=True)

    (a, sfa), (b, sfb), d, _, ks_tensor = _args('meta', 64, 96, KS, 8)
    f(a, sfa, b, sfb, d, ks_tensor)
    with pytest.raises(Exception, match='the padded layout'):
        (a, sfa), (b, sfb), d, _, ks_tensor = _args('meta', 64, 96, KS, 5)
        f(a, sfa, b, sfb, d, ks_tensor)


def _symbols(ks, **kwargs):
    return [k[1] for k in _C._plan_gemm_call(OP, 256, 512, sum(ks), num_groups=len(ks), ks=ks, **kwargs)]


def test_planned_kernel_variant():
    default = _symbols([256, 128, 0])
    assert len(default) == 1 and '_sfk' not in default[0]
    # The same kernel (and source) when the padded layout pads nothing, or pads by less than a scale block.
    assert _symbols([256, 128, 0], use_padded_sf_layout=True, mk_alignment=128) == default
    assert _symbols([256, 128, 0], use_padded_sf_layout=True, mk_alignment=64) == default
    # A partial K block, or padding that adds blocks: the per-group scale offsets are summed in the kernel.
    assert _symbols([256, 96, 0])[0].endswith('_sfk128')
    assert _symbols([256, 128, 0], use_padded_sf_layout=True, mk_alignment=256)[0].endswith('_sfk256')
    code = _C._plan_gemm_call(OP, 256, 512, 352, num_groups=3, ks=[256, 96, 0])[0][2]
    assert ', 128u>(' in code


def test_compile_mode_forwards_the_layout():
    from deep_gemm import _compat025
    args = _args('meta', 64, 96, KS, 8)
    fields = _compat025.plan_fields(OP, (*args[:5], None, (1, 1, 128), 'mn', False, True))
    assert fields['use_padded_sf_layout'] is True and fields['ks'] == KS


# ---- the packed UE8M0 layout helper -----------------------------------------------------------------------------

def _reference_pack(sf, ks, gran_k, k_alignment, padded):
    """Plain PyTorch: each group's exponent bytes, zero bytes for its padding blocks and to a multiple of 4, four per
    int32 (block 4j + i in byte i of int j), groups stacked, as [rows, MN]."""
    rows, start = [], 0
    for k in ks:
        own = math.ceil(k / gran_k)
        stored = math.ceil(math.ceil(k / k_alignment) * k_alignment / gran_k) if padded else own
        exps = torch.zeros((math.ceil(stored / 4) * 4, sf.shape[1]), dtype=torch.int64)
        exps[:own] = (sf[start:start + own].view(torch.int32).to(torch.int64) >> 23) & 0xFF
        start += own
        for j in range(exps.shape[0] // 4):
            word = sum(exps[4 * j + i] << (8 * i) for i in range(4))
            rows.append(torch.where(word >= 2**31, word - 2**32, word).to(torch.int32))
    return torch.stack(rows) if rows else torch.zeros((0, sf.shape[1]), dtype=torch.int32)


@pytest.mark.parametrize('gran_k', [32, 128])
@pytest.mark.parametrize('ks,k_alignment', [([96, 0, 272, 128], 256), ([200, 512, 33], 128), ([1000, 40], 512),
                                            ([256, 0, 384], 128)])
def test_layout_helper_both_layouts(gran_k, ks, k_alignment):
    mn = 10
    gen = torch.Generator().manual_seed(len(ks) + gran_k)
    sf = torch.exp2(torch.randint(-20, 20, (sum(math.ceil(k / gran_k) for k in ks), mn), generator=gen).float())
    layout = torch.tensor(ks, dtype=I32)
    for padded in (False, True):
        got = pack(sf, layout, ks, gran_k, k_alignment, use_padded_sf_layout=padded)
        want = _reference_pack(sf, ks, gran_k, k_alignment, padded)
        assert torch.equal(got, want), (padded, got.shape, want.shape)
        assert got.stride() == (12, 1)  # [rows, MN] with MN contiguous, row stride align(MN, 4)
        assert torch.equal(pack(sf, layout, None, gran_k, k_alignment, use_padded_sf_layout=padded), got)
    compact = pack(sf, layout, ks, gran_k, k_alignment)
    padded = pack(sf, layout, ks, gran_k, k_alignment, use_padded_sf_layout=True)
    if all(k % k_alignment == 0 for k in ks):
        assert torch.equal(compact, padded)


def test_layout_helper_padded_rows():
    # K 96 at alignment 256, gran_k 32: 3 own blocks (one int32 row), 8 padded blocks (two rows, the second zero).
    sf = torch.full((3, 4), 2.0)
    compact = pack(sf, None, [96], 32, 256)
    padded = pack(sf, None, [96], 32, 256, use_padded_sf_layout=True)
    assert compact.shape == (1, 4) and padded.shape == (2, 4)
    assert torch.equal(padded[0], compact[0]) and bool((padded[1] == 0).all())
    assert int(compact[0, 0]) == 128 | 128 << 8 | 128 << 16  # 2.0 has exponent byte 128; the 4th block is padding
