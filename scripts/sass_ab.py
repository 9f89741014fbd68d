"""Checks that kernel header changes leave existing kernels' machine code alone: plans a few shipped GEMM kernels
(as the ops plan them for an H200, no GPU needed; the multicast ones under a forced config) and takes a few MQA-logits, paged MQA-logits, HC-prenorm and
SwiGLU-quant kernels from their compile hooks, builds each for sm_90a with the package's headers and with an OLD
include tree, and compares the SASS text. Exit status 1 when any differs.

    mkdir -p /tmp/old && git archive <commit> deep_gemm/include | tar -x -C /tmp/old
    PYTHONPATH=$PWD DG_JIT_CACHE_DIR=/tmp/sass_ab python3 scripts/sass_ab.py /tmp/old/deep_gemm/include [--ops ...]

(docs/einsum.md: the einsum variants were checked this way against the kernels they extend.)

When the host's generated sources change too (e.g. an entry point's parameter list), plan the GEMM calls with the
old build first and build the old side from those sources:

    PYTHONPATH=<old package> python3 scripts/sass_ab.py --dump-sources old.json
    PYTHONPATH=$PWD DG_JIT_CACHE_DIR=/tmp/sass_ab python3 scripts/sass_ab.py OLD_INCLUDE --old-sources old.json
"""
import argparse
import contextlib
import json
import os
import re
import sys

# (op, m, n, k, num_groups, expected_m, d_fp32, with_c): dense, grouped and K-grouped instances of both kernels.
CALLS = [
    ('bf16_gemm_nt', 4096, 7168, 2048, 1, 0, False, False),
    ('bf16_gemm_nn', 4096, 7168, 2048, 1, 0, False, False),
    ('bf16_gemm_nt', 128, 2112, 7168, 1, 0, True, True),
    ('m_grouped_bf16_gemm_nt_masked', 256, 4096, 7168, 4, 128, False, False),
    ('m_grouped_bf16_gemm_nt_contiguous', 8192, 4096, 7168, 8, 0, False, False),
    ('k_grouped_bf16_gemm_tn_contiguous', 7168, 2048, 4 * 4096, 4, 0, True, True),
    ('fp8_gemm_nt', 4096, 7168, 2048, 1, 0, False, False),
    ('fp8_gemm_nt', 128, 512, 7168, 1, 0, False, False),
    ('m_grouped_fp8_gemm_nt_masked', 256, 4096, 7168, 4, 128, False, False),
    ('m_grouped_fp8_gemm_nt_contiguous', 8192, 4096, 7168, 8, 0, False, False),
    ('fp8_gemm_nt_1d1d', 4096, 7168, 2048, 1, 0, True, False),
    ('fp8_gemm_nt_1d1d', 4096, 7168, 2048, 1, 0, True, True),
    ('k_grouped_fp8_gemm_nt_contiguous', 4096, 7168, 4 * 2048, 4, 0, False, False),
]

# Kernels the heuristics build only under a forced config (op, m, n, k, variable, value): the 2-CTA multicast
# variants (BF16: B shared, K-major and MN-major B; FP8 1D2D: B shared, A shared).
FORCED = [
    ('bf16_gemm_nt', 4096, 7168, 2048, 'DG_BF16_GEMM_CONFIG', '128,256,3,1'),
    ('bf16_gemm_nn', 4096, 7168, 2048, 'DG_BF16_GEMM_CONFIG', '128,256,3,1'),
    ('fp8_gemm_nt', 4096, 7168, 2048, 'DG_FP8_GEMM_CONFIG', '128,128,5,0,1'),
    ('fp8_gemm_nt', 4096, 7168, 2048, 'DG_FP8_GEMM_CONFIG', '128,128,5,0,2'),
]

# The other kernels that share the PTX / common headers, built through their compile hooks (which return the
# cache entry): (label, hook name, keyword arguments).
HOOKS = [
    ('mqa_logits', '_compile_mqa_logits_kernel',
     dict(num_heads=64, head_dim=128, bf16_logits=False, compressed=False, clean=True)),
    ('mqa_logits', '_compile_mqa_logits_kernel',
     dict(num_heads=32, head_dim=128, bf16_logits=True, compressed=True, clean=False)),
    ('paged_mqa_logits', '_compile_paged_mqa_kernel',
     dict(num_heads=64, next_n=2, lens_2d=False, clean=True, bf16_logits=False)),
    ('paged_mqa_logits', '_compile_paged_mqa_kernel',
     dict(num_heads=32, next_n=1, lens_2d=True, clean=False, bf16_logits=True)),
    ('paged_mqa_logits', '_compile_paged_mqa_kernel',  # N = 256: one math warpgroup
     dict(num_heads=64, next_n=4, lens_2d=True, clean=True, bf16_logits=False)),
    ('tf32_hc_prenorm_gemm', '_compile_hc_prenorm_kernel', dict(m=13, n=24, k=28672)),
    ('swiglu_fp8_quant', '_compile_quant_kernel',
     dict(input='bf16', swiglu=True, group=128, sf_layout='ue8m0', round_scale=True, weights=True, clamp=True,
          output_bf16=True, fast_math=True)),
]


@contextlib.contextmanager
def forced_setting(_C, var, value):
    """The environment variable `var` set to `value` (none when var is None) and the settings reloaded, both
    undone on the way out, also on an error."""
    previous = os.environ.get(var) if var else None
    try:
        if var:
            os.environ[var] = value
            _C.reload_settings()
        yield
    finally:
        if var:
            if previous is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = previous
            _C.reload_settings()


def sass_in(entry):
    with open(os.path.join(entry['dir'], 'kernel.sass')) as f:
        return f.read()


def hook_source(entry):
    """[name, symbol, code] of a compile hook's cache entry (kernel.<name>.<key>/kernel.cu)."""
    with open(os.path.join(entry['dir'], 'kernel.cu')) as f:
        code = f.read()
    name = os.path.basename(entry['dir']).split('.')[1]
    symbol = re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*(\w+)\(', code).group(1)
    return [name, symbol, code]


def sass_of(_C, name, symbol, code):
    return sass_in(_C.build_source(name, symbol, code, 'sm_90a'))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('old_include', nargs='?', help='deep_gemm/include of the commit to compare against')
    parser.add_argument('--ops', help='comma-separated subset of the ops / hook labels above')
    parser.add_argument('--dump-sources', metavar='FILE',
                        help='only write the sources: planned GEMMs {symbol: code}, hooks {label: [name, symbol, code]}')
    parser.add_argument('--old-sources', metavar='FILE', help='build the old kernels from these sources')
    args = parser.parse_args()
    if args.old_include is None and args.dump_sources is None:
        parser.error('give OLD_INCLUDE (or --dump-sources FILE)')
    os.environ['DG_JIT_DUMP_SASS'] = '1'
    from deep_gemm import _C
    _C.reload_settings()
    new_include = os.path.join(os.path.dirname(os.path.abspath(_C.__file__)), 'include')
    wanted = set(args.ops.split(',')) if args.ops else None
    old_sources = json.load(open(args.old_sources)) if args.old_sources else None
    dumped = {}
    differing = 0
    calls = [(call, None) for call in CALLS]
    calls += [((op, m, n, k, 1, 0, False, False), (var, value)) for op, m, n, k, var, value in FORCED]
    for (op, m, n, k, groups, expected_m, d_fp32, with_c), forced in calls:
        if wanted is not None and op not in wanted:
            continue
        kwargs = dict(num_groups=groups, expected_m=expected_m, d_fp32=d_fp32, with_c=with_c)
        if op.endswith('_1d1d'):  # FP32 out with per-128-row B scales: the 1D1D kernel
            op, kwargs['recipe'] = op[:-len('_1d1d')], [1, 1, 128]
        if op.startswith('k_grouped'):
            kwargs['ks'] = [k // groups] * groups
        with forced_setting(_C, *(forced or (None, None))):
            planned = _C._plan_gemm_call(op, m, n, k, **kwargs)
        for name, symbol, code in planned:
            if args.dump_sources:
                dumped[symbol] = code
                continue
            texts = []
            for include, source in ((args.old_include, old_sources[symbol] if old_sources else code),
                                    (new_include, code)):
                _C.set_include_dir(include)
                texts.append(sass_of(_C, name, symbol, source))
            same = texts[0] == texts[1]
            differing += not same
            print(f'{"same" if same else "DIFFERS"}  {op} {m}x{n}x{k}: {symbol}', flush=True)
    for label, hook, kwargs in HOOKS:
        if wanted is not None and label not in wanted:
            continue
        hook_key = f'{label} {sorted(kwargs.items())}'
        if args.dump_sources:
            dumped[hook_key] = hook_source(getattr(_C, hook)(**kwargs))
            continue
        texts = []
        for include in (args.old_include, new_include):
            _C.set_include_dir(include)
            if include == args.old_include and old_sources and hook_key in old_sources:
                texts.append(sass_of(_C, *old_sources[hook_key]))
                continue
            entry = getattr(_C, hook)(**kwargs)
            texts.append(sass_in(entry))
        same = texts[0] == texts[1]
        differing += not same
        print(f'{"same" if same else "DIFFERS"}  {label} {kwargs}: {os.path.basename(entry["dir"])}', flush=True)
    if args.dump_sources:
        with open(args.dump_sources, 'w') as f:
            json.dump(dumped, f, indent=1, sort_keys=True)
        return 0
    _C.set_include_dir(new_include)
    return 1 if differing else 0


if __name__ == '__main__':
    sys.exit(main())
