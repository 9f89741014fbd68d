"""CPU checks of the MQA-logits ops (deep_gemm.fp8_mqa_logits, deep_gemm.fp8_fp4_mqa_logits,
deep_gemm.get_mqa_logits_metadata): the float reference (mqa_logits_reference.py) against an independent
torch.einsum formulation, argument validation on CPU and meta tensors (raised before any device work), the
v2.6.1 / v2.8.1 call forms, the meta implementation's shapes, torch.compile(fullgraph=True) and the
schedule metadata. GPU correctness is in test_mqa_logits_gpu.py; the kernel's SASS in
tests/cpp/test_kernel_mqa_logits_compile.cpp."""
import pytest
import torch

import deep_gemm
import deep_gemm._mqa_logits as mqa_module
from mqa_logits_reference import mqa_logits_ref

FP8 = torch.float8_e4m3fn
INF = float('inf')


def _fp8_values(*shape, gen):
    return torch.randn(*shape, generator=gen).to(FP8).float()


def _ranges(seq_len, seq_len_kv, gen):
    """Ragged: empty (ke <= ks), out-of-range (negative, past S_kv), touching either end, ordinary."""
    ks = torch.randint(-3, seq_len_kv + 3, (seq_len,), generator=gen, dtype=torch.int32)
    ke = ks + torch.randint(-2, seq_len_kv // 2 + 2, (seq_len,), generator=gen, dtype=torch.int32)
    ks[0], ke[0] = 0, seq_len_kv
    if seq_len > 2:
        ks[1], ke[1] = seq_len_kv - 1, seq_len_kv + 5
        ks[2], ke[2] = 4, 4
    return ks, ke


def _einsum_logits(q, kv, s, w, ks, ke, clean, max_seqlen_k):
    """Independent formulation: all [S, S_kv] scores at once, then masks (and a gather for compressed)."""
    seq_len_kv = kv.shape[0]
    score = torch.einsum('shd,nd->shn', q.double(), kv.double())
    full = torch.einsum('shn,sh->sn', score.relu(), w.double()) * s.double()[None, :]
    pos = torch.arange(seq_len_kv)[None, :]
    lo = ks.long().clamp(0, seq_len_kv)[:, None]
    hi = torch.maximum(ke.long().clamp(0, seq_len_kv)[:, None], lo)
    fill = -INF if clean else float('nan')
    if max_seqlen_k == 0:
        inside = (pos >= lo) & (pos < hi)
        return torch.where(inside, full, torch.full_like(full, fill)), inside
    col = torch.arange(max_seqlen_k)[None, :]
    src = (lo + col).clamp(max=seq_len_kv - 1)
    inside = col < (hi - lo)
    return torch.where(inside, full.gather(1, src), torch.full(inside.shape, fill, dtype=torch.float64)), inside


@pytest.mark.parametrize('seq_len,seq_len_kv,heads,dim', [(5, 9, 2, 8), (17, 40, 4, 16), (1, 1, 3, 4)])
@pytest.mark.parametrize('clean', [True, False])
@pytest.mark.parametrize('compressed', ['no', 'max', 'short'])
def test_reference_matches_einsum(seq_len, seq_len_kv, heads, dim, clean, compressed):
    gen = torch.Generator().manual_seed(seq_len * 131 + seq_len_kv)
    q, kv = _fp8_values(seq_len, heads, dim, gen=gen), _fp8_values(seq_len_kv, dim, gen=gen)
    s, w = torch.rand(seq_len_kv, generator=gen) + 0.5, torch.randn(seq_len, heads, generator=gen)
    ks, ke = _ranges(seq_len, seq_len_kv, gen)
    b = ks.long().clamp(0, seq_len_kv)
    longest = int((torch.maximum(ke.long().clamp(0, seq_len_kv), b) - b).max())
    max_k = {'no': 0, 'max': max(longest, 1), 'short': max(longest // 2, 1)}[compressed]
    got, written, bound = mqa_logits_ref(q, kv, s, w, ks, ke, clean, max_k)
    want, inside = _einsum_logits(q, kv, s, w, ks, ke, clean, max_k)
    assert torch.equal(written, inside)
    assert written.any()
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert (bound[written] >= got[written].abs() - 1e-9).all()


# ---- validation (CPU and meta tensors: the same errors before any device work) ---------------------------

def _args(seq_len=4, seq_len_kv=10, heads=32, dim=128, device='cpu'):
    return dict(q=(torch.zeros(seq_len, heads, dim, dtype=FP8, device=device), None),
                kv=(torch.zeros(seq_len_kv, dim, dtype=FP8, device=device), torch.ones(seq_len_kv, device=device)),
                weights=torch.zeros(seq_len, heads, device=device),
                cu_seq_len_k_start=torch.zeros(seq_len, dtype=torch.int32, device=device),
                cu_seq_len_k_end=torch.full((seq_len,), seq_len_kv, dtype=torch.int32, device=device))


def _with(device, **changes):
    a = _args(device=device)
    for k, v in changes.items():
        a[k] = v(a) if callable(v) else v
    return a


BAD = [
    ('q dtype', TypeError, r'q must have dtype float8_e4m3fn', dict(q=lambda a: (a['q'][0].to(torch.bfloat16), None))),
    ('q rank', ValueError, r'q must be 3-D \[S, H, D\]; got shape \[4, 4096\]', dict(q=lambda a: (a['q'][0].view(4, -1), None))),
    ('heads', ValueError, r'H = q.shape\[1\] must be 32 or 64 on SM90; got shape \[4, 16, 128\]',
     dict(q=lambda a: (a['q'][0][:, :16].contiguous(), None), weights=lambda a: a['weights'][:, :16])),
    ('dim', ValueError, r'D = q.shape\[2\] must be 32, 64 or 128; got shape \[4, 32, 96\]',
     dict(q=lambda a: (a['q'][0][:, :, :96].contiguous(), None))),
    ('q strided', ValueError, r'q must be contiguous', dict(q=lambda a: (a['q'][0].transpose(0, 1).contiguous().transpose(0, 1), None))),
    ('kv dtype', TypeError, r'kv\[0\] must have dtype float8_e4m3fn', dict(kv=lambda a: (a['kv'][0].float(), a['kv'][1]))),
    ('kv dim', ValueError, r'kv\[0\]', dict(kv=lambda a: (a['kv'][0][:, :64].contiguous(), a['kv'][1]))),
    ('kv sf dtype', TypeError, r'kv\[1\] must have dtype float32', dict(kv=lambda a: (a['kv'][0], a['kv'][1].half()))),
    ('kv sf shape', ValueError, r'kv\[1\]', dict(kv=lambda a: (a['kv'][0], a['kv'][1][:9]))),
    ('weights dtype', TypeError, r'weights must have dtype float32', dict(weights=lambda a: a['weights'].bfloat16())),
    ('weights shape', ValueError, r'weights', dict(weights=lambda a: a['weights'][:3])),
    ('weights stride', ValueError, r'weights must have unit stride along H',
     dict(weights=lambda a: a['weights'].t().contiguous().t())),
    ('ks dtype', TypeError, r'cu_seq_len_k_start must have dtype int32',
     dict(cu_seq_len_k_start=lambda a: a['cu_seq_len_k_start'].long())),
    ('ke shape', ValueError, r'cu_seq_len_k_end', dict(cu_seq_len_k_end=lambda a: a['cu_seq_len_k_end'][:2])),
    ('ke strided', ValueError, r'cu_seq_len_k_end must be contiguous',
     dict(cu_seq_len_k_end=lambda a: a['cu_seq_len_k_end'].repeat_interleave(2)[::2])),
    ('fp4 q', NotImplementedError, r'needs SM100', dict(q=lambda a: (a['q'][0], torch.zeros(4, 32, dtype=torch.int32)))),
    ('q not a pair', TypeError, r'q must be a pair', dict(q=lambda a: a['q'][0])),
]


@pytest.mark.parametrize('device', ['cpu', 'meta'])
@pytest.mark.parametrize('name,exc,match,changes', BAD, ids=[b[0] for b in BAD])
def test_bad_arguments(device, name, exc, match, changes):
    a = _with(device, **changes)
    if device == 'meta' and name == 'fp4 q':
        a['q'] = (a['q'][0], a['q'][1].to('meta'))
    with pytest.raises(exc, match=r'^fp8_(fp4_)?mqa_logits: .*' + match):
        deep_gemm.fp8_fp4_mqa_logits(**a)


def test_sparse_tensors_are_value_errors():  # (CPU: meta tensors cannot be made sparse)
    a = _with('cpu', cu_seq_len_k_start=lambda a: a['cu_seq_len_k_start'].to_sparse())
    with pytest.raises(ValueError, match=r'^fp8_mqa_logits: cu_seq_len_k_start must be a strided'):
        deep_gemm.fp8_fp4_mqa_logits(**a)


def test_bad_logits_dtype_and_max_seqlen_k():
    with pytest.raises(TypeError, match=r'^fp8_mqa_logits: logits_dtype must be torch.float32 or torch.bfloat16; got float16'):
        deep_gemm.fp8_fp4_mqa_logits(**_args(), logits_dtype=torch.float16)
    with pytest.raises(ValueError, match=r'^fp8_mqa_logits: max_seqlen_k must be >= 0'):
        deep_gemm.fp8_fp4_mqa_logits(**_args(), clean_logits=False, max_seqlen_k=-1)
    with pytest.raises(TypeError, match=r'max_seqlen_k must be an int'):
        deep_gemm.fp8_fp4_mqa_logits(**_args(), max_seqlen_k=2.5)


def test_valid_cpu_call_needs_cuda():
    with pytest.raises(RuntimeError, match=r'^fp8_mqa_logits: requires CUDA tensors'):
        deep_gemm.fp8_fp4_mqa_logits(**_args())


# ---- meta shapes and the two call forms ---------------------------------------------------------------

def _meta():
    a = _args(seq_len=6, seq_len_kv=50, heads=64, dim=64, device='meta')
    return (a['q'], a['kv'], a['weights'], a['cu_seq_len_k_start'], a['cu_seq_len_k_end'])


def test_meta_shapes():
    q, kv, w, ks, ke = _meta()
    out = deep_gemm.fp8_fp4_mqa_logits(q, kv, w, ks, ke)
    assert out.shape == (6, 50) and out.dtype == torch.float32 and out.device.type == 'meta'
    out = deep_gemm.fp8_fp4_mqa_logits(q, kv, w, ks, ke, False, 33, torch.bfloat16)
    assert out.shape == (6, 33) and out.dtype == torch.bfloat16
    out = deep_gemm.fp8_mqa_logits(q[0], kv, w, ks, ke, clean_logits=False, max_seqlen_k=7)
    assert out.shape == (6, 7) and out.dtype == torch.float32


@pytest.fixture
def captured(monkeypatch):
    calls = []
    monkeypatch.setattr(mqa_module, '_run', lambda *args: calls.append(args[7:]))
    return calls


def _form(args, kwargs):
    q, kv, w, ks, ke = _meta()
    return deep_gemm.fp8_fp4_mqa_logits(q, kv, w, ks, ke, *args, **kwargs)


SM = object()  # stands for a schedule_meta tensor
CALL_FORMS = [
    # v2.6.1: (clean_logits, max_seqlen_k, logits_dtype)
    ((), {}, (True, 0, torch.float32, None)),
    ((False,), {}, (False, 0, torch.float32, None)),
    ((False, 128, torch.bfloat16), {}, (False, 128, torch.bfloat16, None)),
    ((), dict(clean_logits=False, max_seqlen_k=64), (False, 64, torch.float32, None)),
    # v2.8.1: (max_seqlen_k, logits_dtype, schedule_meta); clean_logits is True
    ((0,), {}, (True, 0, torch.float32, None)),
    ((512,), {}, (True, 512, torch.float32, None)),
    ((512, torch.bfloat16), {}, (True, 512, torch.bfloat16, None)),
    ((512, torch.bfloat16, SM), {}, (True, 512, torch.bfloat16, SM)),
    ((512, torch.bfloat16, None), {}, (True, 512, torch.bfloat16, None)),
    ((512,), dict(logits_dtype=torch.bfloat16, schedule_meta=SM), (True, 512, torch.bfloat16, SM)),
    ((), dict(max_seqlen_k=512, logits_dtype=torch.bfloat16, schedule_meta=SM), (True, 512, torch.bfloat16, SM)),
    # sgl-deep-gemm 0.2.5: (max_seqlen_k, schedule_meta); no logits_dtype (float32), clean_logits True
    ((512, SM), {}, (True, 512, torch.float32, SM)),
    ((512, None), {}, (True, 512, torch.float32, None)),
    ((0, SM), {}, (True, 0, torch.float32, SM)),
    ((512,), dict(schedule_meta=SM), (True, 512, torch.float32, SM)),
    ((), dict(max_seqlen_k=512, schedule_meta=SM), (True, 512, torch.float32, SM)),
    ((512, SM), dict(logits_dtype=torch.bfloat16), (True, 512, torch.bfloat16, SM)),  # a 2.8.1 keyword on the 0.2.5 form
]


@pytest.mark.parametrize('args,kwargs,want', CALL_FORMS)
def test_call_forms(captured, args, kwargs, want):
    sm = torch.zeros(3, 2, dtype=torch.int32)
    sub = lambda v: sm if v is SM else v  # noqa: E731
    _form(tuple(sub(a) for a in args), {k: sub(v) for k, v in kwargs.items()})
    assert len(captured) == 1
    got = captured[0]
    assert got[:3] == want[:3]
    assert (got[3] is sm) if want[3] is SM else (got[3] is None)


def test_call_form_conflicts(captured):
    sm = torch.zeros(3, 2, dtype=torch.int32)
    with pytest.raises(TypeError, match='max_seqlen_k given twice'):
        _form((512,), dict(max_seqlen_k=64))
    with pytest.raises(TypeError, match='clean_logits must be a bool'):
        _form(('yes',), {})
    with pytest.raises(TypeError, match=r'7th argument must be a torch.dtype \(v2.8.1 logits_dtype\) or a tensor or None'):
        _form((512, 'bf16'), {})
    with pytest.raises(TypeError, match='schedule_meta must be a tensor or None; got str'):
        _form((512, torch.bfloat16, 'meta'), {})
    with pytest.raises(TypeError, match='schedule_meta given twice'):
        _form((512, sm), dict(schedule_meta=sm))
    with pytest.raises(TypeError, match='logits_dtype given twice'):
        _form((512, torch.bfloat16), dict(logits_dtype=torch.float16))
    assert not captured


# Each dialect's positional form run through the real binding on meta tensors: the result's shape says where
# max_seqlen_k went, its dtype where logits_dtype went.
@pytest.mark.parametrize('args,shape,dtype', [
    ((False, 7), (6, 7), torch.float32),                   # v2.6.1 (clean_logits, max_seqlen_k)
    ((True, 0, torch.bfloat16), (6, 50), torch.bfloat16),  # v2.6.1 with logits_dtype
    ((7, torch.bfloat16), (6, 7), torch.bfloat16),         # v2.8.1 (max_seqlen_k, logits_dtype)
    ((7, torch.bfloat16, 'sm'), (6, 7), torch.bfloat16),   # v2.8.1 with schedule_meta
    ((7, 'sm'), (6, 7), torch.float32),                    # 0.2.5 (max_seqlen_k, schedule_meta)
    ((7, None), (6, 7), torch.float32),                    # 0.2.5, schedule_meta None
])
def test_dialect_forms_bind_on_meta_tensors(args, shape, dtype):
    q, kv, w, ks, ke = _meta()
    sm = torch.zeros(2, 2, dtype=torch.int32, device='meta')
    out = deep_gemm.fp8_fp4_mqa_logits(q, kv, w, ks, ke, *[sm if a == 'sm' else a for a in args])
    assert out.shape == shape and out.dtype == dtype and out.device.type == 'meta'


def test_wrong_schedule_meta_type_reaches_the_entry():
    q, kv, w, ks, ke = _meta()
    with pytest.raises(TypeError, match='schedule_meta must be a torch.Tensor; got int'):
        deep_gemm.fp8_fp4_mqa_logits(q, kv, w, ks, ke, 7, schedule_meta=3)


def test_fp8_mqa_logits_form(captured):
    q, kv, w, ks, ke = _meta()
    deep_gemm.fp8_mqa_logits(q[0], kv, w, ks, ke, False, 9)
    assert captured[0][:3] == (False, 9, torch.float32)


# ---- torch.library: opcheck on meta tensors, torch.compile traces the op ------------------------------

def test_opcheck_meta():
    q, kv, w, ks, ke = _meta()
    for clean, max_k, dtype in [(True, 0, torch.float32), (False, 20, torch.bfloat16)]:
        torch.library.opcheck(torch.ops.deep_gemm.fp8_mqa_logits.default,
                              (q[0], None, kv[0], kv[1], w, ks, ke, clean, max_k, dtype, None))
    torch.library.opcheck(torch.ops.deep_gemm.get_mqa_logits_metadata.default, (ks, ke, 50, 64))


@pytest.mark.parametrize('dynamic', [False, True])
def test_compile_fullgraph_traces(dynamic):
    """torch.compile(fullgraph=True) records the op (no graph break); on CPU tensors it then reaches the
    op's CPU kernel, which says it needs CUDA."""
    torch._dynamo.reset()
    a = _args()

    def f(q, kv, kv_sf, w, ks, ke, max_k):  # the v2.8.1 form, max_seqlen_k an argument (symbolic when dynamic)
        return deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), w, ks, ke, max_k, torch.bfloat16) * 2

    compiled = torch.compile(f, backend='aot_eager', fullgraph=True, dynamic=dynamic)
    for max_k in (256, 300):
        with pytest.raises(RuntimeError, match='fp8_mqa_logits: requires CUDA tensors'):
            compiled(a['q'][0], *a['kv'], a['weights'], a['cu_seq_len_k_start'], a['cu_seq_len_k_end'], max_k)


def test_compile_fullgraph_025_form():
    """The sgl-deep-gemm 0.2.5 form (max_seqlen_k, schedule_meta) under torch.compile(fullgraph=True)."""
    torch._dynamo.reset()
    a = _args()

    def f(q, kv, kv_sf, w, ks, ke, sm):
        return deep_gemm.fp8_fp4_mqa_logits((q, None), (kv, kv_sf), w, ks, ke, 256, sm) * 2

    compiled = torch.compile(f, backend='aot_eager', fullgraph=True)
    with pytest.raises(RuntimeError, match='fp8_mqa_logits: requires CUDA tensors'):
        compiled(a['q'][0], *a['kv'], a['weights'], a['cu_seq_len_k_start'], a['cu_seq_len_k_end'], torch.zeros(2, 2, dtype=torch.int32))


def test_fake_tensor_mode_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = _args(seq_len=9, seq_len_kv=70)
        out = deep_gemm.fp8_fp4_mqa_logits(**a, logits_dtype=torch.bfloat16)
        meta = deep_gemm.get_mqa_logits_metadata(a['cu_seq_len_k_start'], a['cu_seq_len_k_end'], 70, 32)
    assert out.shape == (9, 70) and out.dtype == torch.bfloat16
    assert meta.shape == (2, 2) and meta.dtype == torch.int32


# ---- get_mqa_logits_metadata ----------------------------------------------------------------------------

@pytest.mark.parametrize('heads', [32, 64])
def test_metadata_is_the_union_per_cta(heads):
    gen = torch.Generator().manual_seed(heads)
    seq_len, seq_len_kv = 37, 90
    ks, ke = _ranges(seq_len, seq_len_kv, gen)
    ks[8:16], ke[8:16] = 5, 5  # one CTA of H = 32 (8 queries) with only empty ranges
    got = deep_gemm.get_mqa_logits_metadata(ks, ke, seq_len_kv, heads)
    per = 256 // heads
    assert got.dtype == torch.int32 and got.shape == ((seq_len + per - 1) // per, 2)
    for blk in range(got.shape[0]):
        spans = [(max(0, min(int(ks[i]), seq_len_kv)), max(0, min(int(ke[i]), seq_len_kv)))
                 for i in range(blk * per, min(seq_len, (blk + 1) * per))]
        spans = [(b, e) for b, e in spans if e > b]
        want = (min(b for b, _ in spans), max(e for _, e in spans)) if spans else (0, 0)
        assert tuple(got[blk].tolist()) == want, blk
    if heads == 32:
        assert got[1].tolist() == [0, 0]


def test_metadata_validation():
    ks = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(ValueError, match=r'^get_mqa_logits_metadata: num_heads must be 32 or 64 on SM90; got 48'):
        deep_gemm.get_mqa_logits_metadata(ks, ks, 10, 48)
    with pytest.raises(TypeError, match=r'^get_mqa_logits_metadata: cu_seq_len_k_end must have dtype int32'):
        deep_gemm.get_mqa_logits_metadata(ks, ks.long(), 10, 64)
    with pytest.raises(ValueError, match=r'^get_mqa_logits_metadata: num_kv_tokens must be in'):
        deep_gemm.get_mqa_logits_metadata(ks, ks, -1, 64)
