"""Runs a benchmark script with the JIT reading kernel headers from another include directory.

    python3 benchmarks/with_include_dir.py INCLUDE_DIR SCRIPT [ARGS...]    (INCLUDE_DIR '-': the package's own)

For same-run A/B timing of kernel changes (benchmarks/ab_headers.sh): INCLUDE_DIR holds the `deep_gemm/include`
tree of another commit. Give each side its own DG_JIT_CACHE_DIR.
"""
import runpy
import sys

if __name__ == '__main__':
    include_dir, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    import deep_gemm
    if include_dir != '-':
        deep_gemm._C.set_include_dir(include_dir)
    sys.argv = [script] + args
    runpy.run_path(script, run_name='__main__')
