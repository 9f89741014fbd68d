"""deep_gemm.einsum / fp8_einsum without a GPU: the float reference (einsum_reference.py) against torch.einsum,
the expression and argument rules on meta and CPU tensors (errors raised before any compile or launch), the
DeepGEMM 2.8 keywords, and tracing under torch.compile(fullgraph=True). GPU correctness: test_einsum_gpu.py."""
import pytest
import torch

import deep_gemm
from compile_check import traced_targets

import einsum_reference as ref

BF16, F32 = torch.bfloat16, torch.float32


# ---- the reference --------------------------------------------------------------------------------------

@pytest.mark.parametrize('s,m,n,k', [(1, 3, 5, 7), (4, 16, 8, 24), (9, 5, 12, 3)])
@pytest.mark.parametrize('with_c', [False, True])
def test_reference_bmk_bnk_mn(s, m, n, k, with_c):
    g = torch.Generator().manual_seed(s * 100 + m)
    a, b = torch.randn(s, m, k, generator=g), torch.randn(s, n, k, generator=g)
    c = torch.randn(m, n, generator=g) if with_c else None
    want = torch.einsum('bmk,bnk->mn', a.double(), b.double()) + (c.double() if with_c else 0)
    torch.testing.assert_close(ref.bmk_bnk_mn(a, b, c), want)


@pytest.mark.parametrize('b,h,r,d', [(1, 1, 8, 4), (5, 3, 16, 6), (7, 4, 24, 10)])
def test_reference_head_forms(b, h, r, d):
    g = torch.Generator().manual_seed(b * 10 + h)
    x = torch.randn(b, h, r, generator=g)
    fy = torch.randn(h, d, r + 128, generator=g)
    y = fy[:, :, :r]  # DeepGEMM's strided slice
    torch.testing.assert_close(ref.bhr_hdr_bhd(x, y), torch.einsum('bhr,hdr->bhd', x.double(), y.double()))
    xd = torch.randn(b, h, d, generator=g)
    torch.testing.assert_close(ref.bhd_hdr_bhr(xd, y), torch.einsum('bhd,hdr->bhr', xd.double(), y.double()))


def test_reference_dequant_matches_deep_gemm_casts():
    from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(6, 256, generator=g), torch.randn(200, 256, generator=g)
    qx, sx = per_token_cast_to_fp8(x, use_ue8m0=False)
    qy, sy = per_block_cast_to_fp8(y, use_ue8m0=False)
    assert sx.shape == (6, 2) and sy.shape == (2, 2)
    torch.testing.assert_close(ref.dequant_per_token(qx, sx), x.double(), rtol=0.07, atol=1e-2)
    torch.testing.assert_close(ref.dequant_per_block(qy, sy), y.double(), rtol=0.07, atol=5e-2)


# ---- argument rules (meta tensors: validation only; CPU tensors: validation, then "requires CUDA") -------

def bmk(device='meta', s=4, m=64, n=96, k=128, d_dtype=F32):
    return (torch.empty(s, m, k, dtype=BF16, device=device), torch.empty(s, n, k, dtype=BF16, device=device),
            torch.empty(m, n, dtype=d_dtype, device=device))


def heads(form='bhr,hdr->bhd', device='meta', b=32, h=8, r=512, d=128, pad=128):
    fy = torch.empty(h, d, r + pad, dtype=BF16, device=device)
    y = fy[:, :, :r]
    if form == 'bhr,hdr->bhd':
        return torch.empty(b, h, r, dtype=BF16, device=device), y, torch.empty(b, h, d, dtype=BF16, device=device)
    return torch.empty(b, h, d, dtype=BF16, device=device), y, torch.empty(b, h, r, dtype=BF16, device=device)


def test_valid_calls_pass_on_meta():
    a, b, d = bmk()
    deep_gemm.einsum('bmk,bnk->mn', a, b, d)
    deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=d)  # c is d
    deep_gemm.einsum('bmk,bnk->mn', a, b, d, torch.empty_like(d))
    deep_gemm.einsum('bmk, bnk -> mn', *bmk(d_dtype=BF16))  # spaces are ignored
    deep_gemm.einsum('bmk,bnk->mn', *bmk(m=3, n=6, k=8, s=1), use_cublaslt=True)
    for form in ('bhr,hdr->bhd', 'bhd,hdr->bhr'):
        deep_gemm.einsum(form, *heads(form))
        deep_gemm.einsum(form, *heads(form, b=1, h=1))
        deep_gemm.einsum(form, *heads(form), epilogue=None)


@pytest.mark.parametrize('expr', ['bmk,bkn->mn', 'ij,jk->ik', 'bhr,hdr->bdh', '', 'bmk,bnk->nm'])
def test_unsupported_expressions(expr):
    with pytest.raises(ValueError, match=r"^einsum: expr must be one of 'bmk,bnk->mn', 'bhr,hdr->bhd', 'bhd,hdr->bhr'"):
        deep_gemm.einsum(expr, *bmk())


def test_epilogue_and_expr_type():
    with pytest.raises(ValueError, match=r'^einsum: epilogue must be None .*; got'):
        deep_gemm.einsum('bmk,bnk->mn', *bmk(), epilogue='relu')
    with pytest.raises(TypeError, match=r'^einsum: expr must be a str'):
        deep_gemm.einsum(None, *bmk())
    # DeepGEMM 2.8's positional form einsum(expr, a, b, d, c, epilogue): None binds, an epilogue is rejected.
    deep_gemm.einsum('bmk,bnk->mn', *bmk(), None, None)
    with pytest.raises(ValueError, match=r"^einsum: epilogue must be None .*; got 'relu'"):
        deep_gemm.einsum('bmk,bnk->mn', *bmk(), None, 'relu')


def test_bmk_dtypes_and_shapes():
    a, b, d = bmk()
    with pytest.raises(TypeError, match=r'^einsum: a must have dtype bfloat16; got float32'):
        deep_gemm.einsum('bmk,bnk->mn', a.float(), b, d)
    with pytest.raises(TypeError, match=r'^einsum: d must have dtype'):
        deep_gemm.einsum('bmk,bnk->mn', a, b, d.half())
    with pytest.raises(ValueError, match=r'^einsum: c is only supported with a float32 d'):
        deep_gemm.einsum('bmk,bnk->mn', *bmk(d_dtype=BF16), c=torch.empty(64, 96, device='meta'))
    with pytest.raises(TypeError, match=r'^einsum: c must have dtype float32; got bfloat16'):
        deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=torch.empty(64, 96, dtype=BF16, device='meta'))
    with pytest.raises(ValueError, match=r'^einsum: b\.shape\[0\] \(S\) must equal'):
        deep_gemm.einsum('bmk,bnk->mn', a, b[:3], d)
    with pytest.raises(ValueError, match=r'^einsum: b\.shape\[2\] \(K\) must equal'):
        deep_gemm.einsum('bmk,bnk->mn', a, torch.empty(4, 96, 64, dtype=BF16, device='meta'), d)
    with pytest.raises(ValueError, match=r'^einsum: d\.shape\[1\] \(N\) must equal'):
        deep_gemm.einsum('bmk,bnk->mn', a, b, d[:, :95])
    with pytest.raises(ValueError, match=r'^einsum: a must be a 3-D tensor \[S, M, K\]'):
        deep_gemm.einsum('bmk,bnk->mn', a[0], b, d)


def test_bmk_layouts():
    a, b, d = bmk()
    with pytest.raises(ValueError, match=r'^einsum: a must be K-major'):
        deep_gemm.einsum('bmk,bnk->mn', a.transpose(1, 2).contiguous().transpose(1, 2), b, d)
    with pytest.raises(ValueError, match=r'^einsum: a stride along dim 1 must be a multiple of 16 bytes'):
        deep_gemm.einsum('bmk,bnk->mn', torch.empty(4, 64, 132, dtype=BF16, device='meta')[:, :, :128], b, d)
    with pytest.raises(ValueError, match=r'^einsum: d must have unit stride along N'):
        deep_gemm.einsum('bmk,bnk->mn', a, b, torch.empty(96, 64, device='meta').t())
    with pytest.raises(ValueError, match=r'^einsum: b must start 16-byte aligned'):
        deep_gemm.einsum('bmk,bnk->mn', a, torch.empty(4, 96, 136, dtype=BF16, device='meta')[:, :, 4:132], d)


def test_strided_y_slice_rules():
    for form in ('bhr,hdr->bhd', 'bhd,hdr->bhr'):
        deep_gemm.einsum(form, *heads(form, pad=8))  # rows of r + 8 elements: 16-byte strides
        with pytest.raises(ValueError, match=r'^einsum: y stride along dim 1 must be a multiple of 16 bytes'):
            deep_gemm.einsum(form, *heads(form, pad=4))
        x, y, z = heads(form)
        fy = torch.empty(8, 128, 640, dtype=BF16, device='meta')
        with pytest.raises(ValueError, match=r'^einsum: y must start 16-byte aligned'):
            deep_gemm.einsum(form, x, fy[:, :, 4:516], z)
        with pytest.raises(ValueError, match=r'^einsum: y must have unit stride along R'):
            deep_gemm.einsum(form, x, torch.empty(8, 512, 128, dtype=BF16, device='meta').transpose(1, 2), z)


def test_sparse_tensors_are_value_errors():
    form = 'bhr,hdr->bhd'
    x, y, z = heads(form, device='cpu')
    with pytest.raises(ValueError, match=r'^einsum: x must be a strided'):
        deep_gemm.einsum(form, x.to_sparse(), y, z)


def test_head_rules():
    form = 'bhr,hdr->bhd'
    x, y, z = heads(form)
    with pytest.raises(TypeError, match=r'^einsum: z must have dtype bfloat16; got float32'):
        deep_gemm.einsum(form, x, y, z.float())
    with pytest.raises(TypeError, match=r'^einsum: x must have dtype bfloat16'):
        deep_gemm.einsum(form, x.float(), y, z)
    with pytest.raises(ValueError, match=r"^einsum: c is only supported by 'bmk,bnk->mn'"):
        deep_gemm.einsum(form, x, y, z, c=z)
    with pytest.raises(ValueError, match=r'^einsum: y\.shape\[0\] \(H\) must equal'):
        deep_gemm.einsum(form, x, y[:4], z)
    with pytest.raises(ValueError, match=r'^einsum: y\.shape\[2\] \(R\) must equal'):
        deep_gemm.einsum(form, x, y[:, :, :256], z)
    with pytest.raises(ValueError, match=r'^einsum: z\.shape\[2\] \(D\) must equal'):
        deep_gemm.einsum(form, x, y, z[:, :, :64])
    with pytest.raises(ValueError, match=r'^einsum: z must have strides \(\*, N, 1\)'):
        deep_gemm.einsum(form, x, y, torch.empty(32, 8, 256, dtype=BF16, device='meta')[:, :, :128])
    with pytest.raises(ValueError, match=r'^einsum: x must have unit stride'):
        deep_gemm.einsum(form, torch.empty(32, 512, 8, dtype=BF16, device='meta').transpose(1, 2), y, z)
    with pytest.raises(ValueError, match=r'^einsum: D \(the output.s last dim\) must be even'):
        deep_gemm.einsum(form, *heads(form, d=7, pad=0, r=512))
    with pytest.raises(ValueError, match=r'^einsum: x stride along dim 1 must be a multiple of 16 bytes'):
        deep_gemm.einsum(form, torch.empty(32, 8, 516, dtype=BF16, device='meta')[:, :, :512], y, z)


def test_cpu_tensors_need_cuda_and_overlap():
    a, b, d = bmk('cpu')
    for use_cublaslt in (False, True):
        with pytest.raises(RuntimeError, match=r'^einsum: requires CUDA tensors'):
            deep_gemm.einsum('bmk,bnk->mn', a, b, d, c=d, use_cublaslt=use_cublaslt)
    x, y, z = heads(device='cpu')
    with pytest.raises(RuntimeError, match=r'^einsum: requires CUDA tensors'):
        deep_gemm.einsum('bhr,hdr->bhd', x, y, z)
    # The output may not overlap an input (checked on real tensors).
    buf = torch.empty(4 * 64 * 128 + 64 * 96, dtype=BF16)
    a2 = buf[:4 * 64 * 128].view(4, 64, 128)
    with pytest.raises(ValueError, match=r'^einsum: the output d overlaps the input a'):
        deep_gemm.einsum('bmk,bnk->mn', a2, b, buf[:64 * 96].view(64, 96))


def fp8_heads(device='meta', b=32, h=8, r=512, d=256, pad=128):
    e4m3 = torch.float8_e4m3fn
    x = torch.empty(b, h, r, dtype=e4m3, device=device)
    sx = torch.empty(b, h, (r + 127) // 128, dtype=F32, device=device)
    y = torch.empty(h, d, r + pad, dtype=e4m3, device=device)[:, :, :r]
    sy = torch.empty(h, (d + 127) // 128, (r + 127) // 128, dtype=F32, device=device)
    return (x, sx), (y, sy), torch.empty(b, h, d, dtype=BF16, device=device)


def test_fp8_einsum_valid_on_meta():
    deep_gemm.fp8_einsum('bhr,hdr->bhd', *fp8_heads())
    deep_gemm.fp8_einsum('bhr,hdr->bhd', *fp8_heads(b=5, r=48, d=100, pad=16), recipe=(1, 128, 128), epilogue=None,
                         use_128x4_sfd_layout=False)


def test_fp8_einsum_rules():
    a, b, z = fp8_heads()
    with pytest.raises(ValueError, match=r'^fp8_einsum: epilogue must be None or Identity; other epilogues are SM100-only'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, z, epilogue='x')
    with pytest.raises(ValueError, match=r'^fp8_einsum: d given as a \(d, sfd\) pair .* is SM100-only'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, (z, a[1]))
    with pytest.raises(ValueError, match=r"^fp8_einsum: on SM90 expr must be 'bhr,hdr->bhd'"):
        deep_gemm.fp8_einsum('bhd,hdr->bhr', a, b, z)
    with pytest.raises(ValueError, match=r"^fp8_einsum: expr must be one of"):
        deep_gemm.fp8_einsum('bhr,hrd->bhd', a, b, z)
    with pytest.raises(ValueError, match=r'^fp8_einsum: recipe must be \(1, 128, 128\).*; got \(1, 1, 128\)'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, z, recipe=(1, 1, 128))
    with pytest.raises(ValueError, match=r'^fp8_einsum: c is not supported'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, z, c=z)
    with pytest.raises(TypeError, match=r'^fp8_einsum: a must be a \(tensor, scales\) pair'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a[0], b, z)
    with pytest.raises(TypeError, match=r'^fp8_einsum: a must have dtype float8_e4m3fn; got bfloat16'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', (a[0].to(BF16), a[1]), b, z)
    with pytest.raises(TypeError, match=r'^fp8_einsum: sfb must have dtype float32'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, (b[0], b[1].to(BF16)), z)
    with pytest.raises(ValueError, match=r'^fp8_einsum: sfa\.shape\[2\] \(ceil\(R / 128\)\) must equal'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', (a[0], a[1][:, :, :3]), b, z)
    with pytest.raises(ValueError, match=r'^fp8_einsum: sfb\.shape\[1\] \(ceil\(D / 128\)\) must equal'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, (b[0], b[1][:, :1]), z)
    with pytest.raises(ValueError, match=r'^fp8_einsum: R must be a multiple of 16'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', *fp8_heads(r=40, pad=0))
    with pytest.raises(ValueError, match=r'^fp8_einsum: b stride along dim 1 must be a multiple of 16 bytes'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', *fp8_heads(pad=8))
    with pytest.raises(ValueError, match=r'^fp8_einsum: sfb must be contiguous'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, (b[0], torch.empty(8, 4, 2, device='meta').transpose(1, 2)), z)
    with pytest.raises(ValueError, match=r'^fp8_einsum: d must have strides \(\*, D, 1\)'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a, b, torch.empty(32, 8, 512, dtype=BF16, device='meta')[:, :, :256])
    a_cpu, b_cpu, z_cpu = fp8_heads('cpu')
    with pytest.raises(RuntimeError, match=r'^fp8_einsum: requires CUDA tensors'):
        deep_gemm.fp8_einsum('bhr,hdr->bhd', a_cpu, b_cpu, z_cpu)


# ---- torch.library ------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['einsum', 'fp8_einsum'])
def test_schema_mutates_only_d(name):
    schema = getattr(torch.ops.deep_gemm, name).default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ['d']


def test_opcheck_meta():
    a, b, d = bmk()
    torch.library.opcheck(torch.ops.deep_gemm.einsum.default, ('bmk,bnk->mn', a, b, d, None, False))
    x, y, z = heads()
    torch.library.opcheck(torch.ops.deep_gemm.einsum.default, ('bhr,hdr->bhd', x, y, z, None, False))
    (x8, sx), (y8, sy), z8 = fp8_heads()
    torch.library.opcheck(torch.ops.deep_gemm.fp8_einsum.default, ('bhr,hdr->bhd', x8, sx, y8, sy, z8, None, [1, 128, 128]))


def test_dispatcher_errors_match_fast_path():
    x, y, z = heads()
    with pytest.raises(ValueError, match=r'^einsum: y\.shape\[0\] \(H\) must equal'):
        torch.ops.deep_gemm.einsum('bhr,hdr->bhd', x, y[:4], z)


@pytest.mark.parametrize('dynamic', [False, True])
@pytest.mark.parametrize('form', ['bmk,bnk->mn', 'bhd,hdr->bhr', 'fp8'])
def test_compile_fullgraph_traces(form, dynamic):
    """torch.compile(fullgraph=True) records the op (no graph break); on CPU tensors it then reaches the op's
    CPU kernel, which says it needs CUDA."""
    if form == 'fp8':
        (x, sx), (y, sy), z = fp8_heads('cpu')
        args, name = (x, sx, y, sy, z), 'fp8_einsum'

        def f(x, sx, y, sy, z):
            deep_gemm.fp8_einsum('bhr,hdr->bhd', (x, sx), (y, sy), z)
            return z
    else:
        args, name = (bmk('cpu') if form == 'bmk,bnk->mn' else heads(form, device='cpu')), 'einsum'

        def f(a, b, d):
            deep_gemm.einsum(form, a, b, d)
            return d

    targets = traced_targets(f, args, f'{name}: requires CUDA tensors', dynamic)
    assert any(f'deep_gemm.{name}' in t for t in targets), targets
