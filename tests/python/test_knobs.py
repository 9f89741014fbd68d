"""Runtime knobs (DeepGEMM's set_num_sms & co.)."""

import pytest
import torch

import deep_gemm


@pytest.fixture(autouse=True)
def restore_knobs():
    pdl, ignore, alignment = deep_gemm.get_pdl(), deep_gemm.get_ignore_compile_dims(), deep_gemm.get_mk_alignment_for_contiguous_layout()
    tc_util, multiples = deep_gemm.get_tc_util(), deep_gemm.get_block_size_multiple_of()
    yield
    deep_gemm.set_pdl(pdl)
    deep_gemm.set_ignore_compile_dims(ignore)
    deep_gemm._C._set_mk_alignment_value(alignment)
    deep_gemm.set_tc_util(tc_util)
    deep_gemm.set_block_size_multiple_of(multiples)


def test_pdl():
    assert deep_gemm.get_pdl() is False
    deep_gemm.set_pdl(True)
    assert deep_gemm.get_pdl() is True
    deep_gemm.set_pdl(False)
    assert deep_gemm.get_pdl() is False


def test_ignore_compile_dims():
    deep_gemm.set_ignore_compile_dims(True)
    assert deep_gemm.get_ignore_compile_dims() is True


def test_mk_alignment():
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 128
    base = deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout()
    assert base > 0 and 128 % base == 0
    # DeepGEMM's setter stores its value (more in test_compat28.py); _set_mk_alignment_value is the same entry.
    deep_gemm._C._set_mk_alignment_value(256)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
    for bad in (0, -128):
        with pytest.raises(ValueError, match='must be positive'):
            deep_gemm._C._set_mk_alignment_value(bad)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256


def test_theoretical_mk_alignment():
    # SM90: the grouped kernels' BLOCK_M does not depend on the expected M, so neither does the alignment.
    base = deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout()
    for expected_m in (None, 1, 100, 4096):
        assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(expected_m) == base
    deep_gemm.set_mk_alignment_for_contiguous_layout(deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(512))
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == base
    for bad in (0, -4):
        with pytest.raises(ValueError, match='expected_m must be positive'):
            deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(bad)
    assert deep_gemm.utils.get_m_alignment_for_contiguous_layout is deep_gemm.get_mk_alignment_for_contiguous_layout
    assert deep_gemm.get_k_alignment_for_contiguous_layout() == base


def test_num_sms_rejects_negative_and_zero_means_all():
    with pytest.raises(ValueError, match='must be positive, or 0 for all SMs'):
        deep_gemm.set_num_sms(-1)
    deep_gemm.set_num_sms(0)  # DeepGEMM: no cap (needs no device)


def test_tc_util_is_stored():
    assert deep_gemm.get_tc_util() == 100
    deep_gemm.set_tc_util(60)
    assert deep_gemm.get_tc_util() == 60
    for bad in (0, 101, -5):
        with pytest.raises(ValueError, match='percentage'):
            deep_gemm.set_tc_util(bad)
    assert deep_gemm.get_tc_util() == 60


def test_block_size_multiple_of():
    assert deep_gemm.get_block_size_multiple_of() == (1, 1)
    deep_gemm.set_block_size_multiple_of(64)
    assert deep_gemm.get_block_size_multiple_of() == (64, 64)
    deep_gemm.set_block_size_multiple_of((128, 32))
    assert deep_gemm.get_block_size_multiple_of() == (128, 32)
    with pytest.raises(ValueError, match='must be positive'):
        deep_gemm.set_block_size_multiple_of(0)
    for bad in ('64', (1, 2, 3), 1.5):
        with pytest.raises(TypeError, match='an int or a pair of ints'):
            deep_gemm.set_block_size_multiple_of(bad)
    assert deep_gemm.get_block_size_multiple_of() == (128, 32)


@pytest.mark.skipif(torch.cuda.is_available(), reason='checks the behaviour without a GPU')
def test_num_sms_without_gpu_is_runtime_error():
    with pytest.raises(RuntimeError, match='set_num_sms'):
        deep_gemm.set_num_sms(8)
    with pytest.raises(RuntimeError, match='get_num_sms'):
        deep_gemm.get_num_sms()


@pytest.mark.gpu
def test_num_sms_bounded_by_device():
    total = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    assert deep_gemm.get_num_sms() == total
    try:
        deep_gemm.set_num_sms(total // 2)
        assert deep_gemm.get_num_sms() == total // 2
        with pytest.raises(ValueError, match=f'has {total} SMs'):
            deep_gemm.set_num_sms(total + 1)
        assert deep_gemm.get_num_sms() == total // 2
    finally:
        deep_gemm.set_num_sms(total)
