"""Validation gaps found by probing the ops with hostile arguments (no GPU needed): int overflow of ks_cpu, ints too
large for C++, truncating casts, non-strided (sparse) tensors, overlapping outputs of the legacy Triton ops, the
"nn" wrappers' error names and per_custom_dims_cast_to_fp8's dims. Each must raise a clear error naming the op and
the argument before anything is compiled or launched."""
import pytest
import torch

import deep_gemm
from deep_gemm import _C
from legacy_util import load_legacy
from op_cases import BF16, CASES, CASES_BY_NAME, F32, FP8, I32

# ---- ks_cpu whose sum overflows int64 ------------------------------------------------------------------------

# Four multiples of 128 whose int64 sum wraps around to 1280 = 128 + 256 + 384 + 512, the K the G = 4 case's
# tensors hold: before the fix this passed validation and would have launched with a truncated K.
WRAPPING_KS = [2**62, 2**62, 2**62, 2**62 + 1280]


@pytest.mark.parametrize('name', ['k_grouped_fp8_gemm_nt_contiguous', 'k_grouped_bf16_gemm_tn_contiguous'])
@pytest.mark.parametrize('device', ['meta', 'cpu'])
def test_ks_sum_overflow_is_value_error(name, device):
    case = CASES_BY_NAME[name]
    assert sum(WRAPPING_KS) % 2**64 == 1280
    case.call('meta', dims=dict(G=4))  # the tensors are valid for the real ks [128, 256, 384, 512]
    with pytest.raises(ValueError, match=rf'^{name}: sum\(ks_cpu\) must be at most 2147483647 \(the kernels take K as a 32-bit '
                                         rf'int\); got ks_cpu\[0\] = 4611686018427387904 after a sum of 0'):
        case.call(device, dims=dict(G=4), ks=WRAPPING_KS)
    with pytest.raises(ValueError, match=rf'^{name}: sum\(ks_cpu\) must be at most 2147483647'):
        case.call(device, dims=dict(G=4), ks=[2**31, 0, 0, 0])  # one K beyond int32


def test_gemm_dims_beyond_int32_are_value_errors():
    case = CASES_BY_NAME['bf16_gemm_nt']
    big = 2**31 + 128  # meta tensors: no memory
    with pytest.raises(ValueError, match=r'^bf16_gemm_nt: M must be at most 2147483647 \(the kernels take it as a 32-bit int\); '
                                         r'got 2147483776'):
        case.call('meta', dims=dict(M=big))
    with pytest.raises(ValueError, match=r'^bf16_gemm_nt: K must be at most 2147483647'):
        case.call('meta', dims=dict(K=big))


# ---- ints too large for C++ ----------------------------------------------------------------------------------

def _quant_x():
    return torch.empty(128, 256, dtype=BF16)


@pytest.mark.parametrize('call,message', [
    (lambda: CASES_BY_NAME['m_grouped_fp8_gemm_nt_masked'].call('meta', expected_m=2**70),
     r'^m_grouped_fp8_gemm_nt_masked: expected_m must fit in a signed 64-bit integer; got 1180591620717411303424'),
    (lambda: CASES_BY_NAME['k_grouped_bf16_gemm_tn_contiguous'].call('meta', ks=[2**64, 128]),
     r'^k_grouped_bf16_gemm_tn_contiguous: ks_cpu must fit in a signed 64-bit integer; got 18446744073709551616'),
    (lambda: CASES_BY_NAME['fp8_gemm_nt'].call('meta', recipe=(2**70, 128, 128)),
     r'^fp8_gemm_nt: recipe must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.swiglu_apply_weight_to_fp8(_quant_x(), None, None, 2**70, True, False, False),
     r'^swiglu_apply_weight_to_fp8: num_per_channels must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.swiglu_apply_weight_to_fp8(_quant_x(), None, None, 128, True, False, False, num_sms=2**70),
     r'^swiglu_apply_weight_to_fp8: num_sms must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.apply_weight_to_fp8(_quant_x(), torch.empty(128, 256, dtype=FP8), num_per_channels=-2**65),
     r'^apply_weight_to_fp8: num_per_channels must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.set_num_sms(2**40), r'^set_num_sms: new_num_sms must be in \[-2147483648, 2147483647\]; got 1099511627776'),
    (lambda: deep_gemm.set_tc_util(2**70), r'^set_tc_util: new_tc_util must be in \[-2147483648, 2147483647\]'),
    (lambda: deep_gemm.set_block_size_multiple_of(2**40), r'^set_block_size_multiple_of: new_value must be in'),
    (lambda: deep_gemm.set_block_size_multiple_of((1, 2**40)), r'^set_block_size_multiple_of: new_value\[1\] must be in'),
    (lambda: deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(2**40),
     r'^get_theoretical_mk_alignment_for_contiguous_layout: expected_m must be in'),
    (lambda: _C.get_tma_aligned_size(2**70, 4), r'^get_tma_aligned_size: x must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.transform_sf_into_required_layout(torch.ones(128, 4), 2**70, 512, (1, 128, 128)),
     r'^transform_sf_into_required_layout: mn must fit in a signed 64-bit integer'),
    (lambda: deep_gemm.transform_sf_into_required_layout(torch.ones(1, 128, 4), 128, 512, (1, 128, 128), num_groups=2**70),
     r'^transform_sf_into_required_layout: num_groups must fit in a signed 64-bit integer'),
])
def test_ints_too_large_for_cpp_name_the_op_and_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_int_arguments_keep_their_type_errors():
    with pytest.raises(TypeError, match=r'^set_num_sms: new_num_sms must be an int; got float'):
        deep_gemm.set_num_sms(1.5)
    with pytest.raises(TypeError, match=r'^swiglu_apply_weight_to_fp8: num_sms must be an int; got str'):
        deep_gemm.swiglu_apply_weight_to_fp8(_quant_x(), None, None, 128, True, False, False, num_sms='8')
    assert _C.get_tma_aligned_size(5, 4) == 8
    np = pytest.importorskip('numpy')  # objects with __index__ are ints here, as pybind11 took them
    assert _C.get_tma_aligned_size(np.int64(5), np.int32(4)) == 8
    with pytest.raises(ValueError, match=r'^get_tma_aligned_size: x must fit in a signed 64-bit integer'):
        _C.get_tma_aligned_size(np.uint64(2**64 - 1), 4)
    with pytest.raises(TypeError, match=r'^set_tc_util: new_tc_util must be an int; got bool'):
        deep_gemm.set_tc_util(True)


def test_warmup_call_ints_beyond_int32_are_value_errors():
    from deep_gemm._warmup_calls import PlanTarget, parse_call, plan_call
    target = PlanTarget('sm_90a', 132, 232448, False)
    for text, field in (('fp8_gemm_nt:m=1099511627776,n=256,k=512', "'m'"), ('bf16_gemm_nt:m=128,n=256,k=512,mk_alignment=4294967296', "'mk_alignment'"),
                        ('m_grouped_fp8_gemm_nt_masked:max_m=128,n=256,k=512,num_groups=2,expected_m=-1', "'expected_m'"),
                        ('bf16_gemm_nt:m=128,n=256,k=512,block_size_multiple_of=1;4294967296', "'block_size_multiple_of'")):
        with pytest.raises(ValueError, match=rf'^field {field} must be in \[0, 2147483647\]; got'):
            plan_call(parse_call(text), target)
    with pytest.raises(ValueError, match=r"^field 'ks' must hold ints in \[0, 2147483647\]"):
        plan_call(parse_call('k_grouped_fp8_gemm_nt_contiguous:m=128,n=256,ks=2147483648;128'), target)


# ---- truncating casts ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('num_sms', [2**40, 2**31])
def test_quant_num_sms_beyond_int32_is_value_error(num_sms):
    # 2**40 was cast to int (0) at launch; now a value past INT32_MAX is refused before any launch
    for fn, args in ((deep_gemm.swiglu_apply_weight_to_fp8, (_quant_x(), None, None, 128, True, False, False)),
                     (deep_gemm.apply_weight_to_fp8, (_quant_x(), torch.empty(128, 256, dtype=FP8)))):
        with pytest.raises(ValueError, match=rf'^{fn.__name__}: num_sms must be at most 2147483647 \(the kernels take it as a '
                                             rf'32-bit int\); got {num_sms}'):
            fn(*args, num_sms=num_sms)
        with pytest.raises(RuntimeError, match=rf'^{fn.__name__}: requires CUDA tensors'):
            fn(*args, num_sms=2**31 - 1)  # the largest accepted value passes validation


# ---- non-strided tensors -------------------------------------------------------------------------------------

def _sparse_like(t: torch.Tensor, layout) -> torch.Tensor:
    dense = torch.zeros(t.shape)  # float32: the layout check comes before the dtype check
    return dense.to_sparse_csr() if layout == 'csr' else dense.to_sparse()


@pytest.mark.parametrize('layout', ['coo', 'csr'])
@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_sparse_tensors_are_value_errors(case, layout):
    _, _, tensors = case.build('cpu')
    names = [n for n, t in tensors.items() if isinstance(t, torch.Tensor)]
    if 'c' in tensors:
        names.append('c')
    checked = 0
    for name in names:
        like = tensors[name] if tensors.get(name) is not None else tensors['d']
        if layout == 'csr' and like.dim() != 2:
            continue  # CSR tensors are 2-D
        with pytest.raises(ValueError, match=rf'^{case.name}: {name} must be a strided \(dense\) tensor; got layout torch.sparse_'):
            case.call('cpu', **{name: _sparse_like(like, layout)})
        checked += 1
    if checked == 0:
        pytest.skip(f'{case.name} takes no 2-D tensor, so no CSR one')


def test_sparse_tensors_of_the_other_ops_are_value_errors():
    x = _quant_x()
    sparse = x.float().to_sparse()
    with pytest.raises(ValueError, match=r'^swiglu_apply_weight_to_fp8: x must be a strided \(dense\) tensor; got layout torch.sparse_coo'):
        deep_gemm.swiglu_apply_weight_to_fp8(sparse, None, None, 128, True, False, False)
    with pytest.raises(ValueError, match=r'^swiglu_apply_weight_to_fp8: topk_weights must be a strided'):
        deep_gemm.swiglu_apply_weight_to_fp8(x, torch.ones(128).to_sparse(), None, 128, True, False, False)
    with pytest.raises(ValueError, match=r'^apply_weight_to_fp8: out must be a strided'):
        deep_gemm.apply_weight_to_fp8(x, torch.zeros(128, 256).to_sparse())
    with pytest.raises(ValueError, match=r'^get_mn_major_tma_aligned_tensor: sf must be a strided \(dense\) tensor; got layout torch.sparse_csr'):
        deep_gemm.get_mn_major_tma_aligned_tensor(torch.ones(128, 4).to_sparse_csr())
    with pytest.raises(ValueError, match=r'^transform_sf_into_required_layout: sf must be a strided'):
        deep_gemm.transform_sf_into_required_layout(torch.ones(128, 4).to_sparse(), 128, 512, (1, 128, 128))


# ---- legacy Triton ops: overlapping outputs and sparse tensors ---------------------------------------------------

def test_legacy_outputs_with_overlapping_rows_are_value_errors():
    legacy = load_legacy()
    a, b, idx = torch.randn(64, 32).to(BF16), torch.randn(2, 48, 32).to(BF16), torch.zeros(64, dtype=I32)
    rows = torch.empty(64 * 48, dtype=BF16).as_strided((64, 48), (24, 1))  # row r and r + 1 share 24 elements
    with pytest.raises(ValueError, match=r'^m_grouped_bf16_gemm_nt_contiguous_tl: d must not have elements that overlap in memory; '
                                         r'got shape \(64, 48\) with strides \(24, 1\)'):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, rows, idx)
    groups = torch.empty(2 * 24 * 40).as_strided((2, 24, 40), (480, 40, 1))  # group 1 starts inside group 0
    with pytest.raises(ValueError, match=r'^k_grouped_bf16_gemm_tn_contiguous_tl: d must not have elements that overlap'):
        legacy.k_grouped_bf16_gemm_tn_contiguous_tl(torch.randn(48, 24).to(BF16), torch.randn(48, 40).to(BF16), groups, [16, 32])
    with pytest.raises(ValueError, match=r'^m_grouped_bf16_gemm_nt_contiguous_tl: d must not have zero strides'):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, torch.empty(1, 48, dtype=BF16).expand(64, 48), idx)
    with pytest.raises(ValueError, match=r'^m_grouped_bf16_gemm_nt_contiguous_tl: b must be a strided \(dense\) tensor'):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b.to_sparse(), torch.empty(64, 48, dtype=BF16), idx)
    # non-overlapping strided outputs still pass the layout checks (then stop at the device check)
    with pytest.raises((RuntimeError, ImportError)):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, torch.empty(64, 64, dtype=BF16)[:, :48], idx)


# ---- the nn wrappers: errors name the nn op ---------------------------------------------------------------------

NN_FP8, NN_BF16 = 'm_grouped_fp8_gemm_nn_contiguous', 'm_grouped_bf16_gemm_nn_contiguous'


def _nn_args(device='meta'):
    G, M, N, K = 2, 256, 192, 512
    a8 = (torch.empty(M, K, dtype=FP8, device=device), torch.empty(M, K // 128, dtype=F32, device=device))
    b8 = (torch.empty(G, N, K, dtype=FP8, device=device).transpose(1, 2), torch.empty(G, 2, K // 128, dtype=F32, device=device).transpose(1, 2))
    a16, b16 = torch.empty(M, K, dtype=BF16, device=device), torch.empty(G, K, N, dtype=BF16, device=device)
    d, layout = torch.empty(M, N, dtype=BF16, device=device), torch.empty(M, dtype=I32, device=device)
    return a8, b8, a16, b16, d, layout


def test_nn_wrappers_check_before_transposing():
    a8, b8, a16, b16, d, layout = _nn_args()
    with pytest.raises(ValueError, match=rf'^{NN_BF16}: b must be a 3-D tensor \[G, K, N\]; got 1-D'):
        deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a16, torch.empty(4, dtype=BF16, device='meta'), d, layout)
    with pytest.raises(ValueError, match=rf'^{NN_FP8}: sfb must be a 3-D tensor \[G, ceil\(K/128\), ceil\(N/128\)\]; got 1-D'):
        deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, (b8[0], torch.empty(2, device='meta')), d, layout)
    with pytest.raises(TypeError, match=rf'^{NN_FP8}: b must be a torch.Tensor; got int'):
        deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, (1, b8[1]), d, layout)


def test_nn_wrapper_errors_name_the_nn_op():
    a8, b8, a16, b16, d, layout = _nn_args()
    with pytest.raises(TypeError, match=rf'^{NN_BF16}: d must have dtype bfloat16; got float32$'):
        deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a16, b16, d.float(), layout)
    with pytest.raises(TypeError, match=rf'^{NN_FP8}: d must have dtype bfloat16 with recipe \(1, 128, 128\)'):
        deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, b8, d.float(), layout)
    with pytest.raises(ValueError, match=rf'^{NN_BF16}: b\.shape\[2\] \(K\) must equal a\.shape\[1\].*\(b and sfb as the nt op sees them'):
        deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a16, torch.empty(2, 640, 192, dtype=BF16, device='meta'), d, layout)
    with pytest.raises(RuntimeError, match=rf'^{NN_BF16}: requires CUDA tensors'):
        _, _, *cpu = _nn_args('cpu')
        deep_gemm.m_grouped_bf16_gemm_nn_contiguous(*cpu)
    deep_gemm.m_grouped_bf16_gemm_nn_contiguous(a16, b16, d, layout)  # valid: no error
    deep_gemm.m_grouped_fp8_gemm_nn_contiguous(a8, b8, d, layout)


# ---- per_custom_dims_cast_to_fp8 ---------------------------------------------------------------------------------

def test_per_custom_dims_rejects_out_of_range_dims():
    x = torch.randn(4, 8, 16)
    for bad in ((3,), (-4,), (0, 5), (1.0,), (True,)):
        with pytest.raises(ValueError, match=r'^per_custom_dims_cast_to_fp8: dims must be dimensions of x, ints in \[-3, 3\) '
                                             r'\(x has shape \[4, 8, 16\]\); got '):
            deep_gemm.per_custom_dims_cast_to_fp8(x, bad)
    q, sf = deep_gemm.per_custom_dims_cast_to_fp8(x, (-1,))
    assert q.shape == x.shape and sf.shape == (16,)
