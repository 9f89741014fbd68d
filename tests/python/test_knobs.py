"""Runtime knobs (DeepGEMM's set_num_sms & co.)."""

import pytest
import torch

import deep_gemm


@pytest.fixture(autouse=True)
def restore_knobs():
    pdl, ignore, alignment = deep_gemm.get_pdl(), deep_gemm.get_ignore_compile_dims(), deep_gemm.get_mk_alignment_for_contiguous_layout()
    yield
    deep_gemm.set_pdl(pdl)
    deep_gemm.set_ignore_compile_dims(ignore)
    deep_gemm.set_mk_alignment_for_contiguous_layout(alignment)


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
    deep_gemm.set_mk_alignment_for_contiguous_layout(256)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
    for bad in (0, -128, base + 1):
        with pytest.raises(ValueError, match='positive multiple'):
            deep_gemm.set_mk_alignment_for_contiguous_layout(bad)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256


def test_num_sms_rejects_non_positive():
    for bad in (0, -1):
        with pytest.raises(ValueError, match='must be positive'):
            deep_gemm.set_num_sms(bad)


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
