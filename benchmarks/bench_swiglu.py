"""Benchmark of the fused SwiGLU -> FP8 quantisation (deep_gemm.swiglu_apply_weight_to_fp8).

    python3 benchmarks/bench_swiglu.py                 # H200
    python3 benchmarks/bench_swiglu.py --no-compile    # skip the torch.compile baseline

For T in {128, 4096, 32768} and H in {2048, 7168} (bf16 x [T, 2H], per-token weights, 128-column
groups, column-major FP32 scales; also output_bf16 at T = 4096): bytes moved = read x (4*T*H) + write y
(T*H) + scales (4*T*H/128) (+ 2*T*H for the bf16 copy). Each figure is bytes / median time (CUDA
events, L2 flushed before every call, calls of all variants interleaved). Baselines in the same run: a
device copy (torch copy_) moving the same number of bytes (half read, half written), the eager PyTorch
composition a user would write, and its torch.compile version. Ratios: ours / copy bandwidth, ours /
eager and ours / compiled speed.
"""
import argparse
import time

import torch

import deep_gemm
from _timing import time_interleaved


def eager(x, w):
    t, h2 = x.shape
    h = h2 // 2
    v = torch.nn.functional.silu(x[:, :h].float()) * x[:, h:].float() * w[:, None]
    groups = v.view(t, h // 128, 128)
    scale = groups.abs().amax(-1).clamp(min=1e-4) / 448
    y = (groups / scale[..., None]).to(torch.float8_e4m3fn).view(t, h)
    return y, scale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--no-compile', action='store_true')
    args = parser.parse_args()

    compiled = None
    if not args.no_compile:
        try:
            compiled = torch.compile(eager, dynamic=True)  # one compile for every shape
        except Exception as e:  # noqa: BLE001 - a baseline only
            print(f'torch.compile unavailable: {e}')

    rows = []
    cases = [(t, h, False) for t in (128, 4096, 32768) for h in (2048, 7168)] + [(4096, 7168, True)]
    for t, h, bf16 in cases:
        x = torch.randn(t, 2 * h, device='cuda', dtype=torch.bfloat16)
        w = torch.rand(t, device='cuda')
        moved = 4 * t * h + t * h + 4 * t * (h // 128) + (2 * t * h if bf16 else 0)
        src = torch.empty(moved // 2, dtype=torch.uint8, device='cuda')
        dst = torch.empty_like(src)
        fns = {
            'ours': lambda: deep_gemm.swiglu_apply_weight_to_fp8(x, w, None, 128, True, False, False, output_bf16=bf16),
            'copy': lambda: dst.copy_(src),
        }
        if not bf16:
            fns['eager'] = lambda: eager(x, w)
            if compiled is not None:
                fns['compiled'] = lambda: compiled(x, w)
        start = time.time()
        us = time_interleaved(fns, args.runs, label=f'T={t} H={h}: ')
        gbs = {k: (moved / (v * 1e-6) / 1e9 if v else None) for k, v in us.items()}
        rows.append((t, h, bf16, us, gbs, time.time() - start))
        if compiled is not None and us.get('compiled') is None:
            compiled = None  # it failed once: do not retry on every shape

    print(f'{"T":>6} {"H":>5} {"bf16":>4} | {"ours us":>8} {"GB/s":>6} | {"copy GB/s":>9} {"%copy":>6} | '
          f'{"eager us":>8} {"x eager":>7} | {"compiled us":>11} {"x comp":>6}')
    for t, h, bf16, us, gbs, _ in rows:
        def fmt(v, spec):
            return format(v, spec) if v is not None else 'n/a'.rjust(len(format(0, spec)))
        ratio_copy = gbs['ours'] / gbs['copy'] * 100 if gbs.get('copy') else None
        x_eager = us['eager'] / us['ours'] if us.get('eager') else None
        x_comp = us['compiled'] / us['ours'] if us.get('compiled') else None
        print(f'{t:>6} {h:>5} {str(bf16):>4} | {fmt(us["ours"], "8.1f")} {fmt(gbs["ours"], "6.0f")} | '
              f'{fmt(gbs.get("copy"), "9.0f")} {fmt(ratio_copy, "5.1f")}% | {fmt(us.get("eager"), "8.1f")} '
              f'{fmt(x_eager, "7.2f")} | {fmt(us.get("compiled"), "11.1f")} {fmt(x_comp, "6.2f")}')


if __name__ == '__main__':
    main()
