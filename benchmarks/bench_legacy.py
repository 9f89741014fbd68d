"""Benchmark of the ``deep_gemm.legacy`` Triton kernels against torch (cuBLAS), in one run.

    python3 benchmarks/bench_legacy.py            # H200 / any sm_80+ GPU
    python3 benchmarks/bench_legacy.py --iters 30
    python3 benchmarks/bench_legacy.py --targets  # only the two m-grouped target shapes (and variants)
    TRITON_INTERPRET=1 python3 benchmarks/bench_legacy.py --smoke   # CPU dry run of the script, tiny shapes

Timing (as in every benchmark here, see docs/architecture.md): CUDA events around each call, L2 flushed (a 256 MiB buffer zeroed) before each
call, ours and the baseline in turns, median of >= 15 runs after warm-up (the first call autotunes). Host time per call is measured
separately: 100 calls queued while the GPU is kept busy by a sleep kernel. TFLOPS count 2*M*N*K over
the valid rows only (padding rows of the grouped layout are not work).

Cases: dense ``M x (N, K)`` for M in {4096, 128} and (N, K) in {(7168, 2048), (2112, 7168),
(24576, 1536), (4096, 7168)} through the m-grouped kernels with one group (nt: b [1, N, K]; nn: b
[1, K, N]) against ``torch.mm``; m-grouped MoE layouts (the two target shapes, 4 x ~1120 x 4096 x 7168
and 8 x ~576 x 7168 x 2048, then a sweep; group sizes drawn around the expected size, aligned to 128)
against a per-group ``torch.mm`` loop, the targets also with the pointer kernel, an MN-major b and the
a_fused gather; k-grouped (plain, a_fused, b_fused) against a per-group ``torch.mm`` loop (its output is
BF16, the Triton kernel's FP32). The table is printed last, then the autotuner's choice per key.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import torch

from _timing import host_time_per_call, time_interleaved

REPO = Path(__file__).resolve().parents[1]

# The two m-grouped target shapes (H200, one kernel, median us): 4 groups of ~1120 rows x N=4096 x K=7168,
# and 8 groups of ~576 rows x N=7168 x K=2048.
TARGET_US = {"target A": 451.0, "target B": 224.0}


def load_legacy():
    """``deep_gemm.legacy`` from the package if it imports, else the working tree's copy directly."""
    sys.path.insert(0, str(REPO))
    try:
        import deep_gemm.legacy as legacy
        return legacy
    except Exception as exc:  # the package (C++ extension) may not be built: load legacy on its own
        print(f"note: `import deep_gemm.legacy` failed ({type(exc).__name__}: {exc}); "
              f"loading {REPO / 'deep_gemm' / 'legacy'} directly", file=sys.stderr)
    finally:
        sys.path.pop(0)
    legacy_dir = REPO / "deep_gemm" / "legacy"
    spec = importlib.util.spec_from_file_location("_deep_gemm_legacy_bench", legacy_dir / "__init__.py",
                                                  submodule_search_locations=[str(legacy_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def calc_diff(x, y) -> float:
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denominator) if denominator != 0 else 0.0


class Timer:
    """Device times: on the GPU ours and the baseline in turns (``_timing.time_interleaved``: CUDA events, L2
    flushed before every call, so clock drift hits both alike); on CPU (``--smoke``) wall-clock medians."""

    def __init__(self, device: torch.device, iters: int, warmup: int):
        self.device, self.iters, self.warmup = device, iters, warmup
        self.cuda = device.type == "cuda"

    def pair_ms(self, fn, base_fn):
        """Median ms of ``fn`` and of ``base_fn``."""
        for _ in range(self.warmup):
            fn()
            base_fn()
        if self.cuda:
            us = time_interleaved({"ours": fn, "base": base_fn}, self.iters)
            return us["ours"] / 1e3, us["base"] / 1e3
        return self._wall_ms(fn), self._wall_ms(base_fn)

    def _wall_ms(self, fn) -> float:
        return host_time_per_call(fn, 1, self.iters) / 1e3   # median of single calls

    def host_us(self, fn, calls: int = 100) -> float:
        """Host time per call, measured while the GPU is busy (so launches never wait on the GPU)."""
        return host_time_per_call(fn, calls, busy_cycles=int(2e9) if self.cuda else 0)   # GPU: ~1 s of sleep


_tuner_keys = {}
_last_config = ["(not autotuned)"]


def last_tuned_config(legacy) -> str:
    """The autotuned config of the kernel the last case ran: the autotuner that tuned a new shape key since
    the previous case (each case's first call, in the warm-up, has a new key)."""
    kn = sys.modules.get(legacy.__name__ + "._kernels")
    for name in ("m_grouped_tma_kernel_tuned", "m_grouped_kernel_tuned", "k_grouped_kernel_tuned"):
        tuner = getattr(kn, name, None)
        cache = getattr(tuner, "cache", None)
        if cache is None:
            continue
        new_keys = [key for key in cache if key not in _tuner_keys.setdefault(name, set())]
        if new_keys:
            _tuner_keys[name].update(new_keys)
            _last_config[0] = f"{name.replace('_tuned', '')} {cache[new_keys[-1]]}"
    return _last_config[0]


def moe_indices(sizes, align, device):
    parts = []
    for g, size in enumerate(sizes):
        padded = (size + align - 1) // align * align
        parts.append(torch.full((size,), g, dtype=torch.int32))
        parts.append(torch.full((padded - size,), -1, dtype=torch.int32))
    return torch.cat(parts).to(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=20, help="timed runs per case (median; >= 15)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny shapes (CPU under TRITON_INTERPRET=1)")
    parser.add_argument("--targets", action="store_true",
                        help="only the two m-grouped target shapes and their variants (a few minutes less: the "
                             "first call of each new kernel/config compiles it)")
    args = parser.parse_args()
    if args.iters < 15 and not args.smoke:
        parser.error("--iters must be >= 15")

    if args.smoke:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        args.iters, args.warmup = 2, 1
    else:
        if not torch.cuda.is_available():
            raise SystemExit("bench_legacy.py needs a CUDA GPU (or --smoke with TRITON_INTERPRET=1 on CPU)")
        device = torch.device("cuda")
    legacy = load_legacy()
    timer = Timer(device, args.iters, args.warmup)
    torch.manual_seed(0)
    rows = []

    def record(kind, shape, flops, legacy_fn, torch_fn, check, baseline_name, target_us=None):
        ms, base_ms = timer.pair_ms(legacy_fn, torch_fn)
        host = timer.host_us(legacy_fn)
        diff = check()
        row = dict(kind=kind, shape=shape, tflops=flops / ms / 1e9, base_tflops=flops / base_ms / 1e9,
                   us=ms * 1e3, base_us=base_ms * 1e3, host_us=host, diff=diff, baseline=baseline_name,
                   target_us=target_us)
        rows.append(row)
        goal = f"  target {target_us:.0f} us: {'met' if ms * 1e3 <= target_us else 'NOT met'}" if target_us else ""
        print(f"  {kind:<22} {shape:<38} {row['us']:9.1f} us {row['tflops']:7.1f} TFLOPS | {baseline_name} "
              f"{row['base_us']:9.1f} us | speedup x{row['base_us'] / row['us']:.3f}  diff {diff:.1e}{goal}",
              flush=True)
        if device.type == "cuda":
            print(f"      config: {last_tuned_config(legacy)}", flush=True)

    if args.smoke:
        dense_m = [64]
        dense_nk = [(48, 32), (40, 64)]
    else:
        dense_m = [4096, 128]
        dense_nk = [(7168, 2048), (2112, 7168), (24576, 1536), (4096, 7168)]

    if args.targets:
        dense_m = []
    print("dense (one group):", flush=True)
    for m in dense_m:
        for n, k in dense_nk:
            a = torch.randn(m, k, dtype=torch.bfloat16, device=device)
            b = torch.randn(n, k, dtype=torch.bfloat16, device=device)
            b_kn = b.t().contiguous()
            d = torch.empty(m, n, dtype=torch.bfloat16, device=device)
            idx = torch.zeros(m, dtype=torch.int32, device=device)
            ref = a @ b.t()
            flops = 2 * m * n * k
            record("m_grouped nt (G=1)", f"M={m} N={n} K={k}", flops,
                   lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b[None], d, idx),
                   lambda: torch.mm(a, b.t()), lambda: calc_diff(d, ref), "torch.mm")
            record("m_grouped nn (G=1)", f"M={m} N={n} K={k}", flops,
                   lambda: legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b_kn[None], d, idx),
                   lambda: torch.mm(a, b_kn), lambda: calc_diff(d, ref), "torch.mm")
            del a, b, b_kn, d, ref

    print("m-grouped contiguous (MoE layout, groups aligned to 128 rows):", flush=True)
    align = 32 if args.smoke else 128
    if args.smoke:
        grouped = [("smoke", 3, 40, 48, 64, None)]
        sweep = [(2, 20, 48, 128)]
    else:
        # (label, groups, expected rows per group, N, K, target us): the two target shapes first.
        grouped = [("target A", 4, 1120, 4096, 7168, TARGET_US["target A"]),
                   ("target B", 8, 576, 7168, 2048, TARGET_US["target B"]),
                   ("", 4, 1024, 7168, 2048, None), ("", 16, 256, 2112, 7168, None)]
        sweep = [(8, m, n, k) for m in (64, 256, 1024, 2048) for n, k in ((4096, 7168), (7168, 2048))]
    grouped += [("sweep", g, m, n, k, None) for g, m, n, k in sweep]
    if args.targets:
        grouped = [case for case in grouped if case[0].startswith("target") or args.smoke]
    gen = torch.Generator().manual_seed(1)
    for label, g, expected_m, n, k, target in grouped:
        # Group sizes drawn around the expected size (0.7x to 1.3x), as routing produces them.
        sizes = [max(1, int(expected_m * (0.7 + 0.6 * torch.rand(1, generator=gen).item()))) for _ in range(g)]
        idx = moe_indices(sizes, align, device)
        m = idx.shape[0]
        a = torch.randn(m, k, dtype=torch.bfloat16, device=device)
        b = torch.randn(g, n, k, dtype=torch.bfloat16, device=device)
        d = torch.empty(m, n, dtype=torch.bfloat16, device=device)
        starts, s = [], 0
        for size in sizes:
            starts.append(s)
            s += (size + align - 1) // align * align
        ref = torch.zeros(m, n, dtype=torch.bfloat16, device=device)
        for gi, (st, size) in enumerate(zip(starts, sizes)):
            ref[st:st + size] = a[st:st + size] @ b[gi].t()
        # a_fused: the same rows gathered from a shuffled copy (tokens[perm[r]] = a[r]).
        perm = torch.randperm(m, device=device)
        tokens = torch.empty_like(a)
        tokens[perm] = a
        src_rows = torch.where(idx >= 0, perm.to(torch.int32), -1)

        def per_group_mm(a=a, b=b, sizes=sizes, starts=starts):
            for gi, (st, size) in enumerate(zip(starts, sizes)):
                if size:
                    torch.mm(a[st:st + size], b[gi].t())

        flops = 2 * sum(sizes) * n * k
        shape = f"{g}x~{expected_m} ({m} rows) N={n} K={k}"
        kind = f"m_grouped nt{' ' + label if label else ''}"
        record(kind, shape, flops, lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx),
               per_group_mm, lambda: calc_diff(d, ref), "mm/group", target)
        if label.startswith("target") or args.smoke:
            record("  pointer (no TMA)", shape, flops,
                   lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx, _config={"TMA": False}),
                   per_group_mm, lambda: calc_diff(d, ref), "mm/group", target)
            b_mn = b.mT.contiguous().mT
            record("  MN-major b", shape, flops, lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b_mn, d, idx),
                   per_group_mm, lambda: calc_diff(d, ref), "mm/group")
            record("  a_fused (gather)", shape, flops,
                   lambda: legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(tokens, b, d, (idx, src_rows)),
                   per_group_mm, lambda: calc_diff(d, ref), "mm/group")
        del a, b, d, ref, tokens

    print("k-grouped (d [G, M, N] float32):", flush=True)
    if args.smoke:
        kcases = [([16, 40, 0], 24, 40)]
    else:
        kcases = [([4096] * 4, 7168, 2048), ([4096] * 4, 2048, 7168), ([1024, 3072, 2048, 4096], 4096, 7168),
                  ([2048] * 8, 2112, 7168)]
    if args.targets:
        kcases = []
    for ks, m, n in kcases:
        total = sum(ks)
        a = torch.randn(total, m, dtype=torch.bfloat16, device=device)
        b = torch.randn(total, n, dtype=torch.bfloat16, device=device)
        d = torch.empty(len(ks), m, n, dtype=torch.float32, device=device)
        offs = [0]
        for kg in ks:
            offs.append(offs[-1] + kg)
        ref = torch.stack([a[offs[i]:offs[i + 1]].float().t() @ b[offs[i]:offs[i + 1]].float()
                           for i in range(len(ks))])

        def per_group_mm_k(a=a, b=b, offs=offs):
            for i in range(len(offs) - 1):
                if offs[i + 1] > offs[i]:
                    torch.mm(a[offs[i]:offs[i + 1]].t(), b[offs[i]:offs[i + 1]])

        flops = 2 * total * m * n
        record(f"k_grouped tn (G={len(ks)})", f"sumK={total} M={m} N={n}", flops,
               lambda: legacy.k_grouped_bf16_gemm_tn_contiguous_tl(a, b, d, ks), per_group_mm_k,
               lambda: calc_diff(d, ref), "mm/group")
        # The fused variants: the same problem with one operand's rows gathered from a shuffled copy.
        perm = torch.randperm(total, device=device)
        k_idx = perm.to(torch.int32)
        k_start = torch.tensor(offs[:-1], dtype=torch.int32, device=device)
        k_end = torch.tensor(offs[1:], dtype=torch.int32, device=device)
        for fused, fn in (("a", legacy.a_fused_k_grouped_bf16_gemm_tn_contiguous_tl),
                          ("b", legacy.b_fused_k_grouped_bf16_gemm_tn_contiguous_tl)):
            src = torch.empty_like(a if fused == "a" else b)
            src[perm] = a if fused == "a" else b
            lhs, rhs = (src, b) if fused == "a" else (a, src)
            record(f"  {fused}_fused k_grouped", f"sumK={total} M={m} N={n}", flops,
                   lambda fn=fn, lhs=lhs, rhs=rhs: fn(lhs, rhs, d, (k_idx, k_start, k_end), False),
                   per_group_mm_k, lambda: calc_diff(d, ref), "mm/group")
        del a, b, d, ref

    # ---- table (printed last) ----
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (Triton interpreter)"
    print()
    print(f"deep_gemm.legacy (Triton) vs torch on {name}; median of {args.iters} runs, L2 flushed")
    header = (f"| {'kernel':<22} | {'shape':<38} | {'TFLOPS':>8} | {'baseline':>9} | {'base TFLOPS':>11} | "
              f"{'speedup':>7} | {'time us':>9} | {'base us':>9} | {'target':>7} | {'host us':>7} | {'calc_diff':>9} |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for r in rows:
        target = f"{r['target_us']:.0f}" if r["target_us"] else "-"
        print(f"| {r['kind']:<22} | {r['shape']:<38} | {r['tflops']:8.1f} | {r['baseline']:>9} | "
              f"{r['base_tflops']:11.1f} | {r['tflops'] / r['base_tflops']:7.3f} | {r['us']:9.1f} | "
              f"{r['base_us']:9.1f} | {target:>7} | {r['host_us']:7.1f} | {r['diff']:9.1e} |")
    # What the autotuner picked per key (N, K, M bucket, layout flags, dtypes): for a hand-written table.
    kernels = sys.modules.get(legacy.__name__ + "._kernels")
    for name in ("m_grouped_tma_kernel_tuned", "m_grouped_kernel_tuned", "k_grouped_kernel_tuned"):
        tuner = getattr(kernels, name, None)
        for key, config in sorted(getattr(tuner, "cache", {}).items(), key=str):
            print(f"autotuned {name[:-6]} {key}: {config}")
    for kind in ("m_grouped nt (G=1)", "m_grouped nn (G=1)"):
        for m in dense_m:
            ratios = [r["tflops"] / r["base_tflops"] for r in rows
                      if r["kind"] == kind and r["shape"].startswith(f"M={m} ")]
            if ratios:
                gmean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
                print(f"geometric mean speedup over torch.mm, {kind}, M={m}: {gmean:.3f}")


if __name__ == "__main__":
    main()
