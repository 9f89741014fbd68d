"""Test and benchmark helpers: accuracy (:func:`calc_diff`), traffic (:func:`count_bytes`) and timing
(:func:`bench` with CUDA events and L2 flushes, :func:`bench_kineto` with the torch profiler)."""

from .bench import bench, bench_kineto, flush_l2
from .numeric import calc_diff, count_bytes

__all__ = ['bench', 'bench_kineto', 'calc_diff', 'count_bytes', 'flush_l2']
