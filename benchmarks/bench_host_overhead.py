"""Host time per cached call of deep_gemm ops (target: <= 3 us for fp8_gemm_nt; DeepGEMM: ~20 us).

GPU mode (default when CUDA is available): after a warm-up (JIT compile + load), the GPU is kept busy
with a long `torch.cuda._sleep` so launches only queue, then `--calls` (<= 200) back-to-back calls are
timed on the host with perf_counter; the median over `--repeats` batches is reported per op, next to
torch baselines measured the same way (torch.mm in BF16, torch._scaled_mm row-wise).

CPU mode (`--cpu`, or no GPU): times everything the fast path does before the device work: the Python
wrapper, pybind11 argument conversion and the full validation (`_C._validate_fp8_gemm_nt`), plus the
torch.ops dispatcher route for comparison. The launch itself is not included there.

Usage: python benchmarks/bench_host_overhead.py [--cpu] [--calls 200] [--repeats 15]
"""

import argparse

import torch

import deep_gemm
from deep_gemm import _C

from _timing import host_time_per_call


def fp8_operands(m: int, n: int, k: int, device: str):
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
    a_fp8, sfa = deep_gemm.per_token_cast_to_fp8(a)
    b_fp8, sfb = deep_gemm.per_block_cast_to_fp8(b)
    sfa_kernel = deep_gemm.get_mn_major_tma_aligned_tensor(sfa)
    d = torch.empty(m, n, device=device, dtype=torch.bfloat16)
    return (a_fp8, sfa), (a_fp8, sfa_kernel), (b_fp8, sfb), d, a, b


def run_cpu(args):
    m, n, k = args.m, args.n, args.k
    _, a, b, d, _, _ = fp8_operands(m, n, k, 'cpu')
    calls, repeats = 10000, args.repeats
    rows = []

    # The real public wrapper, with its C entry swapped for the validation-only one (same arguments,
    # same checks, no device work).
    real_entry = deep_gemm._wrappers._c_fp8_gemm_nt
    deep_gemm._wrappers._c_fp8_gemm_nt = _C._validate_fp8_gemm_nt
    try:
        rows.append(('deep_gemm.fp8_gemm_nt: Python wrapper + C entry + validation (no launch)',
                     host_time_per_call(lambda: deep_gemm.fp8_gemm_nt(a, b, d), calls, repeats)))
    finally:
        deep_gemm._wrappers._c_fp8_gemm_nt = real_entry
    rows.append(('_C entry (METH_FASTCALL) + validation only', host_time_per_call(lambda: _C._validate_fp8_gemm_nt(a, b, d), calls, repeats)))
    rows.append(('empty pybind11 call (_C.get_pdl), for scale', host_time_per_call(_C.get_pdl, calls, repeats)))
    meta = [t.to('meta') for t in (a[0], a[1], b[0], b[1], d)]
    rows.append(('torch.ops.deep_gemm.fp8_gemm_nt on meta (dispatcher route, validation only)',
                 host_time_per_call(lambda: torch.ops.deep_gemm.fp8_gemm_nt(*meta), calls, repeats)))
    print(f'CPU host overhead, fp8_gemm_nt M={m} N={n} K={k} (median of {repeats} x {calls} calls)')
    for name, us in rows:
        print(f'  {us:8.3f} us  {name}')


def run_gpu(args):
    m, n, k = args.m, args.n, args.k
    a_raw, a, b, d, a_bf16, b_bf16 = fp8_operands(m, n, k, 'cuda')
    calls, repeats, busy = args.calls, args.repeats, args.busy_cycles
    rows = []

    def add(name, fn):
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:  # an op whose kernel is not in this build
            rows.append((name, None, f'{type(e).__name__}: {e}'))
            return
        rows.append((name, host_time_per_call(fn, calls, repeats, busy), ''))

    add('deep_gemm.fp8_gemm_nt (sfa already M-major)', lambda: deep_gemm.fp8_gemm_nt(a, b, d))
    add('deep_gemm._C.fp8_gemm_nt (no Python wrapper)', lambda: _C.fp8_gemm_nt(a, b, d))
    add('deep_gemm.fp8_gemm_nt (sfa row-major: converted per call)', lambda: deep_gemm.fp8_gemm_nt(a_raw, b, d))
    add('torch.ops.deep_gemm.fp8_gemm_nt (dispatcher route)',
        lambda: torch.ops.deep_gemm.fp8_gemm_nt(a[0], a[1], b[0], b[1], d))
    add('deep_gemm.get_mn_major_tma_aligned_tensor (JIT layout kernel)',
        lambda: deep_gemm.get_mn_major_tma_aligned_tensor(a_raw[1]))
    add('_C._validate_fp8_gemm_nt (validation only, no launch)', lambda: _C._validate_fp8_gemm_nt(a, b, d))
    out = torch.empty(m, n, device='cuda', dtype=torch.bfloat16)
    add('baseline: torch.mm BF16 (out=)', lambda: torch.mm(a_bf16, b_bf16.t(), out=out))
    add('deep_gemm.cublaslt_gemm_nt (the same BF16 GEMM through cuBLASLt)', lambda: deep_gemm.cublaslt_gemm_nt(a_bf16, b_bf16, out))
    scale_a = torch.ones(m, 1, device='cuda')
    scale_b = torch.ones(1, n, device='cuda')
    add('baseline: torch._scaled_mm row-wise FP8',
        lambda: torch._scaled_mm(a[0], b[0].t(), scale_a, scale_b, out_dtype=torch.bfloat16))

    # The floor of any launch from Python on this host: a one-argument torch kernel (no deep_gemm code).
    add('floor: torch.cuda._sleep(1) (Python -> one CUDA launch)', lambda: torch.cuda._sleep(1))
    print(f'GPU host time per cached call, M={m} N={n} K={k} on {torch.cuda.get_device_name()} '
          f'(median of {repeats} batches of {calls} calls, GPU kept busy)')
    for name, us, note in rows:
        print(f'  {us:8.3f} us  {name}' if us is not None else f'       n/a  {name}  ({note})')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--cpu', action='store_true', help='validation-path microbenchmark without a GPU')
    parser.add_argument('--m', type=int, default=128)
    parser.add_argument('--n', type=int, default=7168)
    parser.add_argument('--k', type=int, default=2048)
    parser.add_argument('--calls', type=int, default=200, help='calls per timed batch (<= 200 keeps the launch queue shallow)')
    parser.add_argument('--repeats', type=int, default=15)
    parser.add_argument('--busy-cycles', type=int, default=200_000_000, help='torch.cuda._sleep cycles before each batch')
    args = parser.parse_args()
    if args.calls > 200:
        parser.error('--calls must be <= 200')
    if args.cpu or not torch.cuda.is_available():
        run_cpu(args)
    else:
        run_gpu(args)


if __name__ == '__main__':
    main()
