"""Block-32 scales (recipe (1, 32, 32), sgl-deep-gemm 0.2.5's form) without a GPU: binding (recipe and
recipe_a/recipe_b), validation, meta kernels, torch.compile, the transform helper and warm-up planning.
The kernel's results: test_fp8_block32_gpu.py; its compile-only check: tests/cpp/test_kernel_fp8_block32_compile.cpp."""

import pytest
import torch

import deep_gemm
from compile_check import traced_targets
from deep_gemm import _C
from deep_gemm._warmup_calls import PlanTarget, parse_call, plan_call
from op_cases import BF16, F32, FP8, ceil_div

LAYOUTS = ['nt', 'nn', 'tn', 'tt']
RECIPE_FORMS = [dict(recipe=(1, 32, 32)), dict(recipe_a=(1, 32), recipe_b=(32, 32)),
                dict(recipe=(1, 32, 32), recipe_a=(1, 32), recipe_b=(32, 32))]
H200 = PlanTarget('sm_90a', 132, 232448, False)


def block32_args(layout='nt', device='meta', m=128, n=96, k=512, sfa_cols=None, sfb_shape=None, sf_dtype=F32, d_dtype=BF16):
    """A valid fp8_gemm_<layout> call with block-32 scales (each in the user's orientation of its operand)."""
    ta, tb = layout[0] == 't', layout[1] == 'n'
    a = torch.empty(m, k, dtype=FP8, device=device)
    b = torch.empty(n, k, dtype=FP8, device=device)
    sfa = torch.ones(m, sfa_cols if sfa_cols is not None else ceil_div(k, 32), dtype=sf_dtype, device=device)
    sfb = torch.ones(*(sfb_shape or (ceil_div(n, 32), ceil_div(k, 32))), dtype=sf_dtype, device=device)
    if ta:
        a, sfa = a.t(), sfa.t()
    if tb:
        b, sfb = b.t(), sfb.t()
    return (a, sfa), (b, sfb), torch.empty(m, n, dtype=d_dtype, device=device)


@pytest.mark.parametrize('form', RECIPE_FORMS, ids=['recipe', 'recipe_a_b', 'both'])
@pytest.mark.parametrize('layout', LAYOUTS)
def test_dense_layouts_accept_block32(layout, form):
    fn = getattr(deep_gemm, f'fp8_gemm_{layout}')
    fn(*block32_args(layout), **form)  # meta: validation only
    with pytest.raises(RuntimeError, match=rf'^fp8_gemm_{layout}: requires CUDA tensors'):
        fn(*block32_args(layout, 'cpu'), **form)  # validated first, then the device check


@pytest.mark.parametrize('k', [32, 48, 160, 7168])
def test_k_need_not_be_a_multiple_of_128(k):
    # Any K of 16-byte FP8 rows, as with (1, 128, 128): the scales cover ceil(K/32) blocks.
    deep_gemm.fp8_gemm_nt(*block32_args(k=k, n=40), recipe=(1, 32, 32))


def test_scale_shapes_name_the_block32_rule():
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfa must have shape \[M, ceil\(K/32\)\] = \[128, 16\]; got \[128, 4\]'):
        deep_gemm.fp8_gemm_nt(*block32_args(sfa_cols=4), recipe=(1, 32, 32))
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfb must have shape \[ceil\(N/32\), ceil\(K/32\)\] = \[3, 16\]; got \[1, 4\]'):
        deep_gemm.fp8_gemm_nt(*block32_args(sfb_shape=(1, 4)), recipe=(1, 32, 32))
    with pytest.raises(ValueError, match=r'^fp8_gemm_tn: sfa must have shape \[ceil\(K/32\), M\] = \[16, 128\]'):
        deep_gemm.fp8_gemm_tn(*block32_args('tn', sfa_cols=4), recipe=(1, 32, 32))
    # The 128-granular scales of the default recipe are not block-32 ones, and the other way round.
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: sfa must have shape \[M, ceil\(K/128\)\] = \[128, 4\]; got \[128, 16\]'):
        deep_gemm.fp8_gemm_nt(*block32_args())


def test_dtypes():
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: d must have dtype bfloat16 with recipe \(1, 32, 32\)'):
        deep_gemm.fp8_gemm_nt(*block32_args(d_dtype=F32), recipe=(1, 32, 32))
    # UE8M0-packed (int32) scales are SM100 input; the SM90 kernels take float32 scales, as DeepGEMM's do.
    with pytest.raises(TypeError, match=r'^fp8_gemm_nt: sfa must have dtype float32; got int32'):
        deep_gemm.fp8_gemm_nt(*block32_args(sf_dtype=torch.int32), recipe=(1, 32, 32))


@pytest.mark.parametrize('recipe', [(1, 32, 128), (1, 128, 32), (32, 32, 32), (1, 64, 64), (1, 1, 32)])
def test_other_granularities_are_value_errors(recipe):
    with pytest.raises(ValueError, match=r'^fp8_gemm_nt: recipe must be \(1, 128, 128\) .*\(1, 32, 32\) \(1D2D kernel, block-32 scales\)'):
        deep_gemm.fp8_gemm_nt(*block32_args(), recipe=recipe)


def test_recipe_a_b_must_agree():
    with pytest.raises(ValueError, match=r'same k granularity'):
        deep_gemm.fp8_gemm_nt(*block32_args(), recipe_a=(1, 32), recipe_b=(32, 128))
    with pytest.raises(ValueError, match=r'conflicts with recipe_a/recipe_b'):
        deep_gemm.fp8_gemm_nt(*block32_args(), recipe=(1, 128, 128), recipe_a=(1, 32), recipe_b=(32, 32))


def grouped_calls(device='meta'):
    """(op name, thunk) of every FP8 op without block-32 scales, called with recipe (1, 32, 32)."""
    g, m, n, k = 2, 128, 128, 256
    a, sfa = torch.empty(m, k, dtype=FP8, device=device), torch.ones(m, k // 32, device=device)
    bg, sfbg = torch.empty(g, n, k, dtype=FP8, device=device), torch.ones(g, n // 32, k // 32, device=device)
    r = dict(recipe=(1, 32, 32))
    return [
        ('m_grouped_fp8_gemm_nt_contiguous', lambda: deep_gemm.m_grouped_fp8_gemm_nt_contiguous(
            (a, sfa), (bg, sfbg), torch.empty(m, n, dtype=BF16, device=device),
            torch.zeros(m, dtype=torch.int32, device=device), **r)),
        ('m_grouped_fp8_gemm_nt_masked', lambda: deep_gemm.m_grouped_fp8_gemm_nt_masked(
            (a.expand(g, m, k), sfa.expand(g, m, k // 32)), (bg, sfbg), torch.empty(g, m, n, dtype=BF16, device=device),
            torch.full((g,), m, dtype=torch.int32, device=device), m, **r)),
        ('fp8_gemm_nt_skip_head_mid', lambda: deep_gemm.fp8_gemm_nt_skip_head_mid(
            (a, sfa), (bg[0], sfbg[0]), torch.empty(m, 2 * n, dtype=BF16, device=device), (64, 128, 64), **r)),
        ('k_grouped_fp8_gemm_nt_contiguous', lambda: deep_gemm.k_grouped_fp8_gemm_nt_contiguous(
            (a.reshape(-1)[:m * k], torch.ones(m, k // 32, device=device)), (bg[0].reshape(-1), torch.ones(n, k // 32, device=device)),
            torch.empty(1, m, n, dtype=F32, device=device), [k], torch.tensor([k], dtype=torch.int32, device=device), **r)),
    ]


@pytest.mark.parametrize('device', ['meta', 'cpu'])
@pytest.mark.parametrize('index', range(4))
def test_ops_without_block32_say_so(index, device):
    name, call = grouped_calls(device)[index]
    with pytest.raises(NotImplementedError, match=rf'^{name}: recipe \(1, 32, 32\) \(block-32 scales\) is implemented for the dense '
                                                  r'fp8_gemm_nt / nn / tn / tt only on SM90 in deep_gemm; \S+ takes \(1, 1?2?8?, 128\)'):
        call()


@pytest.mark.parametrize('layout', ['nt', 'tn'])
def test_opcheck_and_compile_fullgraph(layout):
    (a, sfa), (b, sfb), d = block32_args(layout)
    op = getattr(torch.ops.deep_gemm, f'fp8_gemm_{layout}').default
    torch.library.opcheck(op, (a, sfa, b, sfb, d), dict(recipe=[1, 32, 32]))

    fn = getattr(deep_gemm, f'fp8_gemm_{layout}')
    args = block32_args(layout, 'cpu')

    def f(x, y, out):
        fn(x, y, out, recipe_a=(1, 32), recipe_b=(32, 32))
        return out

    targets = traced_targets(f, args, f'fp8_gemm_{layout}: requires CUDA tensors')
    assert any(f'deep_gemm.fp8_gemm_{layout}' in t for t in targets), targets


def test_transform_sf_into_required_layout():
    m, n, k = 130, 96, 224
    sfa = torch.randn(m, ceil_div(k, 32))
    out = deep_gemm.transform_sf_into_required_layout(sfa, m, k, (1, 32, 32), is_sfa=True)
    assert out.shape == sfa.shape and out.stride() == (1, 132) and torch.equal(out, sfa)  # M-major, TMA-aligned
    sfb = torch.randn(ceil_div(k, 32), ceil_div(n, 32)).t()
    out = deep_gemm.transform_sf_into_required_layout(sfb, n, k, (1, 32, 32), is_sfa=False)
    assert out.is_contiguous() and torch.equal(out, sfb)
    with pytest.raises(ValueError, match=r'sf must have shape \[ceil\(96/32\), ceil\(224/32\)\] = \[3, 7\]'):
        deep_gemm.transform_sf_into_required_layout(torch.ones(1, 2), n, k, (1, 32, 32), is_sfa=False)
    with pytest.raises(NotImplementedError, match=r'scale granularity \(128, 32\) for sf is not supported on SM90'):
        deep_gemm.transform_sf_into_required_layout(torch.ones(1, 7), n, k, (1, 128, 32), is_sfa=False)


def test_planned_kernel_is_the_block32_variant():
    (b32, layout) = plan_call(parse_call('fp8_gemm_nt:m=4096,n=7168,k=2048,recipe=1;32;32'), H200)
    (b128, _) = plan_call(parse_call('fp8_gemm_nt:m=4096,n=7168,k=2048'), H200)
    assert layout.symbol == 'deep_gemm_layout_transpose_sf'  # row-major sfa converted as for (1, 128, 128)
    assert b32.name == b128.name == 'sm90_fp8_gemm_1d2d'
    # The granularity is a template argument and a symbol suffix only where it is not the default.
    assert b32.symbol.endswith('_sfk32') and '_sfk' not in b128.symbol
    assert ', false, 32u>(' in b32.code and ', 32u>::kSmemBytes' in b32.code
    assert ', false>(' in b128.code and ', 32u>' not in b128.code
    tile = b32.code.split('sm90_fp8_gemm_1d2d_impl<')[1].split(',')
    assert int(tile[1].strip().rstrip('u')) % 32 == 0  # BLOCK_N: whole 32-column B-scale slices
    # The same through the op-call planner's keyword form.
    planned = _C._plan_gemm_call('fp8_gemm_nt', 4096, 7168, 2048, recipe=[1, 32, 32], num_sms=132)
    assert [(b32.name, b32.symbol, b32.code)] == planned
    # All four layouts plan; the ops without block-32 scales raise as the op does.
    for layout in LAYOUTS:
        assert plan_call(parse_call(f'fp8_gemm_{layout}:m=100,n=72,k=160,recipe=1;32;32'), H200)[0].symbol.endswith('_sfk32')
    with pytest.raises(NotImplementedError, match=r'^m_grouped_fp8_gemm_nt_masked: recipe \(1, 32, 32\)'):
        plan_call(parse_call('m_grouped_fp8_gemm_nt_masked:num_groups=2,max_m=128,n=128,k=256,expected_m=64,recipe=1;32;32'), H200)


@pytest.mark.parametrize('m,n,k', [(128, 2112, 7168), (1024, 24576, 1536), (4096, 7168, 2048), (4096, 4096, 7168), (1, 40, 48)])
def test_planned_tiles_fit(m, n, k):
    (kernel, _) = plan_call(parse_call(f'fp8_gemm_nt:m={m},n={n},k={k},recipe=1;32;32'), H200)
    args = kernel.code.split('sm90_fp8_gemm_1d2d_impl<')[1].split('>(')[0].split(',')
    block_m, block_n, stages = int(args[0].rstrip('u')), int(args[1].strip().rstrip('u')), int(args[2])
    assert block_n % 32 == 0 and stages >= 3
    # The generated source asserts the host's shared-memory size (four A scales per row and stage) against the
    # device layout; the plan's size is the host's.
    smem = block_m * block_n * 2 + stages * (block_m * 128 + block_n * 128 + block_m * 16 + 16)
    assert f'Sm90Fp8Gemm1d2dLayout<{block_m}, {block_n}, {stages}, 32u>::kSmemBytes == {smem}' in kernel.code
    assert smem <= H200.smem_optin
