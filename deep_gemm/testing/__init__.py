"""Test and benchmark helpers: accuracy (:func:`calc_diff`), traffic (:func:`count_bytes`), timing
(:func:`bench` with CUDA events and L2 flushes, :func:`bench_kineto` with the torch profiler) and test
utilities (:func:`get_arch_major`, :func:`test_filter`, :func:`ignore_env`, :func:`assert_bitwise_equal`).
Submodules as in DeepGEMM: ``bench``, ``numeric``, ``utils``."""

from .bench import bench, bench_kineto, empty_suppress, flush_l2, suppress_stdout_stderr
from .numeric import assert_bitwise_equal, calc_diff, count_bytes
from .utils import get_arch_major, ignore_env, test_filter

__all__ = ['bench', 'bench_kineto', 'calc_diff', 'count_bytes', 'flush_l2', 'empty_suppress', 'suppress_stdout_stderr', 'assert_bitwise_equal', 'get_arch_major',
           'ignore_env', 'test_filter']
