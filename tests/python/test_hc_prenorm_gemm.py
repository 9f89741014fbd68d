"""CPU checks of deep_gemm.tf32_hc_prenorm_gemm: the float reference (hc_prenorm_reference.py) against an
independent formulation, argument validation (raised before any compile or launch), the meta/fake
implementation under opcheck, FakeTensorMode and torch.compile(fullgraph=True), and a compile-only build of
the kernel with its SASS read back. The GPU comparison is test_hc_prenorm_gemm_gpu.py."""
import os
import subprocess

import pytest
import torch

import deep_gemm
from compile_check import traced_targets
from hc_prenorm_reference import BLOCK_K, hc_prenorm_reference, split_ranges, tf32_round, tf32_truncate

op = deep_gemm.tf32_hc_prenorm_gemm
OP = 'tf32_hc_prenorm_gemm'


# ---- the reference ------------------------------------------------------------------------------------

def _tf32_rna_bits(x):
    """Round to nearest TF32, ties away from zero, on the bit pattern (what cvt.rna.tf32.f32 computes for
    finite values): add half a TF32 unit (bit 12) to the magnitude bits, then clear the low 13 bits. A carry
    runs into the exponent (and up to infinity) by itself. Infinities and NaN are left as they are."""
    bits = x.view(torch.int32).long() & 0xFFFFFFFF
    rounded = ((bits + 0x1000) & 0xFFFFE000) & 0xFFFFFFFF
    rounded = torch.where(rounded >= 2 ** 31, rounded - 2 ** 32, rounded).to(torch.int32)
    return torch.where(torch.isfinite(x), rounded.view(torch.float32), x)


def _same_bits(x, y):
    return torch.equal(x.view(torch.int32), y.view(torch.int32))


def test_tf32_round_is_nearest_with_ties_away_from_zero():
    one, tiny = 1.0, 2.0 ** -136  # tiny: the TF32 spacing of float32 subnormals
    cases = {one + 2 ** -11: one + 2 ** -10,                     # a tie goes away from zero (ties-to-even: 1)
             -(one + 2 ** -11): -(one + 2 ** -10),
             one + 2 ** -11 - 2 ** -23: one,                     # just below the tie: down
             one + 2 ** -10 + 2 ** -11: one + 2 ** -9,           # a tie from an odd last bit: up as well
             2.0 - 2 ** -12: 2.0,                                # the carry runs into the exponent
             3.0: 3.0, 0.0: 0.0,
             2.0 ** -149: 0.0,                                   # the smallest subnormal rounds to zero
             tiny / 2: tiny,                                     # a subnormal tie: away from zero
             2.0 ** -126 - 2.0 ** -149: 2.0 ** -126,             # the largest subnormal up to the smallest normal
             float(torch.finfo(torch.float32).max): float('inf'),  # past the largest TF32 value by > half a unit
             float('inf'): float('inf'), float('-inf'): float('-inf')}
    x = torch.tensor(list(cases), dtype=torch.float32)
    assert tf32_round(x).tolist() == list(cases.values())
    neg_zero = tf32_round(torch.tensor([-0.0]))
    assert neg_zero.item() == 0.0 and torch.signbit(neg_zero).item()
    assert tf32_round(torch.tensor([float('nan')])).isnan().all()


def test_tf32_round_matches_the_bit_formula():
    """Every float32 bit pattern class: random 32-bit words (all exponents, subnormals, infinities, NaN) and
    values around the ties, against the integer formulation of cvt.rna.tf32.f32."""
    g = torch.Generator().manual_seed(0)
    words = torch.randint(-2 ** 31, 2 ** 31, (1 << 18,), generator=g, dtype=torch.int64).to(torch.int32)
    ties = (torch.randint(0, 2 ** 31, (1 << 14,), generator=g, dtype=torch.int64) & ~0x1FFF | 0x1000).to(torch.int32)
    near = torch.cat([ties, ties + 1, ties - 1, -ties])  # the tie, just above, just below, negatives
    normal = torch.randn(1 << 16, generator=g) * torch.exp2(torch.randint(-30, 30, (1 << 16,), generator=g).float())
    for x in (words.view(torch.float32), near.view(torch.float32), normal):
        finite = torch.isfinite(x)
        assert _same_bits(tf32_round(x)[finite], _tf32_rna_bits(x)[finite])
        assert tf32_round(x)[~finite].isnan().eq(x[~finite].isnan()).all()
    assert not torch.equal(tf32_round(normal), normal)
    assert not torch.equal(tf32_round(normal), tf32_truncate(normal))


def test_tf32_truncate_drops_the_low_13_bits_toward_zero():
    one = 1.0
    cases = {one + 2 ** -10: one + 2 ** -10,           # the last TF32 mantissa bit survives
             one + 2 ** -11: one,                      # the first dropped bit goes (no rounding up)
             one + 2 ** -10 + 2 ** -11 + 2 ** -23: one + 2 ** -10,
             -(one + 2 ** -11 + 2 ** -12): -one,       # toward zero for negatives too
             3.0: 3.0, 0.0: 0.0}
    x = torch.tensor(list(cases), dtype=torch.float32)
    assert tf32_truncate(x).tolist() == list(cases.values())


def test_tf32_truncate_matches_frexp_formulation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, generator=g) * torch.exp2(torch.randint(-20, 20, (4096,), generator=g).float())
    mant, exp = torch.frexp(x.double())  # |mant| in [0.5, 1): 11 significant bits are 1 + 10 mantissa bits
    expected = torch.trunc(mant * 2 ** 11) / 2 ** 11 * torch.exp2(exp.double())
    assert torch.equal(tf32_truncate(x).double(), expected)
    assert not torch.equal(tf32_truncate(x), x)


@pytest.mark.parametrize('k,splits', [(64, 1), (100, 3), (640, 16), (7168, 16), (28672, 16), (130, 5), (1, 4)])
def test_split_ranges_follow_the_block_layout(k, splits):
    ranges = split_ranges(k, splits)
    assert len(ranges) == splits
    assert ranges[0][0] == 0 and ranges[-1][1] == k
    nkb = (k + BLOCK_K - 1) // BLOCK_K
    blocks = []
    for (lo, hi), (next_lo, _) in zip(ranges, ranges[1:] + [(k, k)]):
        assert hi == next_lo  # contiguous, in order
        assert lo % BLOCK_K == 0 or lo == hi == k  # an empty split sits at the end
        blocks.append((hi - lo + BLOCK_K - 1) // BLOCK_K)
    assert sum(blocks) == nkb
    # The first nkb % S splits get one block more, the rest nkb // S (zero when S > nkb).
    q, r = divmod(nkb, splits)
    assert blocks == [q + 1] * r + [q] * (splits - r)


def _independent(a, b, num_splits):
    """The same sums through a per-column split index and one einsum (no slicing by ranges)."""
    k = a.shape[1]
    nkb = (k + BLOCK_K - 1) // BLOCK_K
    splits = 1 if num_splits is None else num_splits
    owner = []  # the split of each K block, dealt out one by one
    sizes = [nkb // splits + (1 if s < nkb % splits else 0) for s in range(splits)]
    for s, size in enumerate(sizes):
        owner += [s] * size
    col_split = torch.tensor(owner, dtype=torch.long).repeat_interleave(BLOCK_K)[:k]
    mask = torch.nn.functional.one_hot(col_split, splits).double().T  # [S, k]
    a64 = a.double()
    b64 = _tf32_rna_bits(b).double()  # the bit formula, not the reference's own rounding
    d = torch.einsum('sk,mk,nk->smn', mask, a64, b64)
    s = torch.einsum('sk,mk,mk->sm', mask, a64, a64)
    return (d[0], s[0]) if num_splits is None else (d, s)


@pytest.mark.parametrize('m,n,k', [(1, 1, 8), (13, 24, 200), (37, 8, 640), (5, 24, 100), (3, 64, 1000)])
@pytest.mark.parametrize('num_splits', [None, 1, 3, 16])
def test_reference_matches_einsum(m, n, k, num_splits):
    g = torch.Generator().manual_seed(m * 1000 + k)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(n, k, generator=g)
    d, s = hc_prenorm_reference(a, b, num_splits)
    d2, s2 = _independent(a, b, num_splits)
    assert d.shape == d2.shape and s.shape == s2.shape
    torch.testing.assert_close(d, d2, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(s, s2, rtol=1e-12, atol=1e-12)
    if num_splits is not None:  # the partials add up to the full result
        full_d, full_s = hc_prenorm_reference(a, b)
        torch.testing.assert_close(d.sum(0), full_d, rtol=1e-12, atol=1e-10)
        torch.testing.assert_close(s.sum(0), full_s, rtol=1e-12, atol=1e-10)


def test_reference_uses_tf32_b_and_exact_a():
    a = torch.tensor([[1.0 + 2 ** -7]], dtype=torch.bfloat16)  # exact in bfloat16
    b = torch.tensor([[1.0 + 2 ** -11]])                         # a tie between two TF32 values
    d, s = hc_prenorm_reference(a, b)
    assert d.item() == (1.0 + 2 ** -7) * (1.0 + 2 ** -10)         # b rounded away from zero
    assert s.item() == (1.0 + 2 ** -7) ** 2


def test_truncation_and_rounding_of_b_are_far_apart():
    """Why the GPU test's bar (calc_diff < 1e-9 against this reference) pins the rounding of b: b truncated
    (the kernel's old arithmetic: ~1.3e-7, what an H100 run measured against torch's TF32 matmul) or not
    rounded at all moves d by calc_diff > 1e-8, DeepGEMM's bar. Ties to even instead of away from zero
    differ only on exact ties (one value in 2^13): far below both bars, so either rounding of torch's passes."""
    from deep_gemm.testing import calc_diff

    def round_half_even(x):
        bits = x.view(torch.int32)
        return ((bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF).view(torch.float32)

    g = torch.Generator().manual_seed(1)
    a = torch.randn(64, 7168, generator=g).bfloat16()
    b = torch.randn(24, 7168, generator=g)
    d, _ = hc_prenorm_reference(a, b)
    assert float(calc_diff(d, hc_prenorm_reference(a, b, b_rounding=tf32_truncate)[0])) > 5e-8
    assert float(calc_diff(d, hc_prenorm_reference(a, b, b_rounding=lambda x: x)[0])) > 1e-8
    assert float(calc_diff(d, hc_prenorm_reference(a, b, b_rounding=round_half_even)[0])) < 1e-10


# ---- validation (before any compile or launch) ---------------------------------------------------------

def _args(m=13, n=24, k=256, splits=None, device='cpu'):
    a = torch.zeros(m, k, dtype=torch.bfloat16, device=device)
    b = torch.zeros(n, k, device=device)
    d = torch.zeros((m, n) if splits is None else (splits, m, n), device=device)
    s = torch.zeros((m,) if splits is None else (splits, m), device=device)
    return a, b, d, s


def _raises(exc, pattern, *args, **kwargs):
    with pytest.raises(exc, match=pattern) as info:
        op(*args, **kwargs)
    assert str(info.value).startswith(f'{OP}: '), str(info.value)


def test_dtypes_are_type_errors():
    a, b, d, s = _args()
    _raises(TypeError, 'a must have dtype bfloat16; got float32', a.float(), b, d, s)
    _raises(TypeError, 'b must have dtype float32; got bfloat16', a, b.bfloat16(), d, s)
    _raises(TypeError, 'd must have dtype float32; got bfloat16', a, b, d.bfloat16(), s)
    _raises(TypeError, 'sqr_sum must have dtype float32; got float16', a, b, d, s.half())


def test_sparse_tensors_are_value_errors():
    a, b, d, s = _args()
    _raises(ValueError, 'a must be a strided', a.to_sparse(), b, d, s)
    _raises(ValueError, 'sqr_sum must be a strided', a, b, d, s.to_sparse())


def test_shapes():
    a, b, d, s = _args()
    _raises(ValueError, r'a must be a 2-D tensor \[m, k\]', a[None], b, d, s)
    _raises(ValueError, 'K', a, b[:, :128], d, s)
    _raises(ValueError, r'n must be in \[1, 64\]', *_args(n=65))
    _raises(ValueError, r'n must be in \[1, 64\]', a, b[:0], d[:, :0], s)
    _raises(ValueError, 'K = a.shape\\[1\\] must be positive', *_args(k=0))
    _raises(ValueError, r'd must be a 2-D tensor \[m, n\]', a, b, d[None], s)
    _raises(ValueError, 'M', a, b, d[:12], s)
    _raises(ValueError, 'N', a, b, d[:, :23], s)
    _raises(ValueError, r'sqr_sum must be a 1-D tensor \[m\]', a, b, d, s[None])
    _raises(ValueError, 'M', a, b, d, s[:12])


def test_split_form_shapes_and_range():
    a, b, d, s = _args(splits=4)
    _raises(ValueError, r'num_splits must be None or in \[1, 1024\]; got 0', a, b, d, s, num_splits=0)
    _raises(ValueError, r'num_splits must be None or in \[1, 1024\]; got 1025', a, b, d, s, num_splits=1025)
    _raises(ValueError, r'd must be a 3-D tensor \[num_splits, m, n\]', a, b, d[0], s, num_splits=4)
    _raises(ValueError, r'sqr_sum must be a 2-D tensor \[num_splits, m\]', a, b, d, s[0], num_splits=4)
    _raises(ValueError, 'num_splits', a, b, d[:3], s, num_splits=4)
    _raises(ValueError, 'num_splits', a, b, d, s[:3], num_splits=4)
    _raises(ValueError, 'M', a, b, d[:, :12], s, num_splits=4)
    # The unsplit outputs with num_splits given, and the reverse.
    _raises(ValueError, r'd must be a 3-D tensor', *_args(), num_splits=1)
    _raises(ValueError, r'd must be a 2-D tensor', *_args(splits=1))


def test_layouts():
    a, b, d, s = _args()
    _raises(ValueError, 'a .* must be K-major', torch.zeros(256, 13, dtype=torch.bfloat16).T, b, d, s)
    _raises(ValueError, 'b .* must be K-major', a, torch.zeros(256, 24).T, d, s)
    # k = 100: a contiguous bf16 row is 200 bytes, not a multiple of 16 (TMA).
    a100, b100, d100, s100 = _args(k=100)
    _raises(ValueError, 'a stride along dim 0 must be a multiple of 16 bytes', a100, b100, d100, s100)
    # The same rows padded to 104 columns are fine for a; b rows of 100 floats are 400 bytes (fine).
    padded = torch.zeros(13, 104, dtype=torch.bfloat16)[:, :100]
    _raises(RuntimeError, 'requires CUDA tensors', padded, b100, d100, s100)
    _raises(ValueError, 'a data pointer must be 16-byte aligned', torch.zeros(13, 264, dtype=torch.bfloat16)[:, 1:257], b, d, s)
    _raises(ValueError, 'd must have unit stride along n', a, b, torch.zeros(24, 13).T, s)
    _raises(ValueError, 'sqr_sum must have unit stride along m', a, b, d, torch.zeros(13, 2)[:, 0])
    _raises(ValueError, 'd rows must not overlap', a, b, torch.zeros(13 * 8 + 16).as_strided((13, 24), (8, 1)), s)
    a4, b4, d4, s4 = _args(splits=4)
    _raises(ValueError, 'd splits must not overlap', a4, b4, torch.zeros(13 * 24 + 8).as_strided((4, 13, 24), (2, 24, 1)), s4,
            num_splits=4)
    _raises(ValueError, 'sqr_sum splits must not overlap', a4, b4, d4, torch.zeros(16).as_strided((4, 13), (1, 1)), num_splits=4)


def test_outputs_must_not_overlap():
    a, b, d, _ = _args()
    _raises(ValueError, 'the output d overlaps the input sqr_sum', a, b, d, d.view(-1)[:13])
    buf = torch.zeros(13 * 256)
    _raises(ValueError, 'the output d overlaps the input a', buf.view(torch.bfloat16).view(26, 256)[:13], b, buf[:13 * 24].view(13, 24),
            torch.zeros(13))


def test_cpu_and_mixed_devices_are_runtime_errors():
    _raises(RuntimeError, 'requires CUDA tensors; a is on cpu', *_args())
    a, b, d, s = _args()
    _raises(RuntimeError, 'requires CUDA tensors', a, b, d, s, num_splits=None)


def test_meta_tensors_validate_only():
    op(*_args(device='meta'))
    op(*_args(splits=16, device='meta'), num_splits=16)
    op(*_args(m=0, device='meta'))
    with pytest.raises(ValueError, match='num_splits'):
        op(*_args(splits=16, device='meta'), num_splits=8)


def test_torch_ops_form_validates_the_same_way():
    a, b, d, s = _args()
    with pytest.raises(ValueError) as fast:
        op(a, b, d[:12], s)
    with pytest.raises(ValueError) as slow:
        torch.ops.deep_gemm.tf32_hc_prenorm_gemm(a, b, d[:12], s)
    assert str(fast.value) == str(slow.value)


# ---- torch.library ------------------------------------------------------------------------------------

def test_schema_mutates_d_and_sqr_sum():
    schema = torch.ops.deep_gemm.tf32_hc_prenorm_gemm.default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ['d', 'sqr_sum']
    assert len(schema.returns) == 0
    assert [a.name for a in schema.arguments] == ['a', 'b', 'd', 'sqr_sum', 'num_splits']


@pytest.mark.parametrize('splits', [None, 16])
def test_opcheck_meta(splits):
    torch.library.opcheck(torch.ops.deep_gemm.tf32_hc_prenorm_gemm.default, _args(m=137, splits=splits, device='meta'),
                          {'num_splits': splits})


def test_fake_tensor_mode_runs_validation():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a, b, d, s = _args(m=137, splits=16, device='cuda')
        op(a, b, d, s, num_splits=16)
        with pytest.raises(ValueError, match='num_splits'):
            op(a, b, d, s, num_splits=4)


@pytest.mark.parametrize('dynamic', [False, True])
@pytest.mark.parametrize('splits', [None, 16])
def test_compile_fullgraph_traces(dynamic, splits):
    """torch.compile(fullgraph=True) records the op (no graph break); on CPU tensors it then reaches the
    op's CPU kernel, which says it needs CUDA."""
    def f(a, b, d, s):
        op(a, b, d, s, num_splits=splits)
        return d.sum() + s.sum()

    targets = traced_targets(f, _args(m=37, splits=splits), f'{OP}: requires CUDA tensors', dynamic)
    assert any(f'deep_gemm.{OP}' in t for t in targets), targets


# ---- compile-only kernel check (no GPU) ---------------------------------------------------------------

def test_kernel_compiles_with_tf32_wgmma_and_tma(tmp_path):
    """Builds the kernel DeepGEMM's m=13, k=28672 shape uses through the JIT without a GPU, with spills as
    compile errors, and reads its SASS (tests/cpp/test_kernel_hc_prenorm_compile.cpp checks more)."""
    from pyrun import run_python
    from test_jit import find_cuobjdump, nvcc_available
    cuobjdump = find_cuobjdump()
    if not nvcc_available() or cuobjdump is None:
        pytest.skip('needs nvcc and cuobjdump')
    code = '''
        import json, deep_gemm
        print(json.dumps(deep_gemm._C._compile_hc_prenorm_kernel(13, 24, 28672)))
    '''
    r = run_python(code, DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_PTXAS_CHECK='1')
    assert r.returncode == 0, r.stderr
    import json
    entry = json.loads(r.stdout.strip().splitlines()[-1])
    assert entry['block_n'] == 24 and entry['reduce'] > 1 and entry['num_units'] >= 64
    sass = subprocess.run([cuobjdump, '-sass', os.path.join(entry['dir'], 'kernel.cubin')], capture_output=True, text=True,
                          check=True).stdout
    assert entry['symbol'] in sass
    ops = [line.split('*/')[1].split()[0] for line in sass.splitlines()
           if '/*' in line and '*/' in line and len(line.split('*/')) > 1 and line.split('*/')[1].split()]
    assert not [o for o in ops if o.startswith(('LDL', 'STL'))], 'local memory'
    assert ops.count('HGMMA.64x24x8.F32.TF32') == 8, 'eight TF32 wgmmas (A from registers) per 64-wide K block'
    assert any(o.startswith('UTMALDG') for o in ops), 'TMA loads'
    assert sass.count('0xffffe000') >= 4, 'B rounded to nearest TF32 (cvt.rna.tf32.f32: add 0x1000, this mask)'
