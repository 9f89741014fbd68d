"""The one list of DeepGEMM names that raise NotImplementedError in deep_gemm on SM90, each with the reason its
message gives. Every other op runs (the GPU tests have no xfail or skip for an unavailable kernel). When an op
of this list is implemented, this test fails until the name is taken out of the list."""
import inspect

import pytest

import deep_gemm
from deep_gemm import _compat

SM100 = 'needs SM100 (Blackwell); it does not run on SM90 (Hopper)'

NOT_IMPLEMENTED = {
    'k_grouped_fp8_gemm_tn_contiguous': SM100,
}


@pytest.mark.parametrize('name', sorted(NOT_IMPLEMENTED))
def test_listed_op_raises_saying_why(name):
    fn = getattr(deep_gemm, name)
    required = [p for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty]
    with pytest.raises(NotImplementedError) as info:
        fn(*[None] * len(required))  # the stub raises before it looks at an argument
    message = str(info.value)
    assert message.startswith(f'{name}: ') and NOT_IMPLEMENTED[name] in message, message


def test_the_list_is_every_stub():
    """Every public function of deep_gemm._compat that raises (a stub) is listed, and nothing else."""
    stubs = {name for name, fn in vars(_compat).items()
             if inspect.isfunction(fn) and not name.startswith('_') and '_unavailable(' in inspect.getsource(fn)}
    assert stubs == set(NOT_IMPLEMENTED)
    assert all(getattr(deep_gemm, name) is getattr(_compat, name) for name in stubs)
