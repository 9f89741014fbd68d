"""Benchmark results as one table and a roofline plot (used by benchmarks/bench_all.py). Needs neither torch
nor a GPU, so it can be tested anywhere; the plot needs matplotlib (an optional dependency: without it,
plot() raises ImportError with the pip command)."""
import json
from dataclasses import asdict, dataclass
from typing import Iterable, List, Optional

# H200 SXM limits, from NVIDIA's H200 product page and datasheet (nvidia.com/en-us/data-center/h200): FP8
# Tensor Core 3,958 TFLOPS and BF16 Tensor Core 1,979 TFLOPS, both quoted "with sparsity", so half of each
# for dense GEMMs; GPU memory bandwidth 4.8 TB/s (HBM3e). Sustained figures are lower (clocks under load,
# power), so no op reaches these lines; they show which limit a shape runs into.
H200_PEAK_TFLOPS = {'fp8': 3958.0 / 2, 'bf16': 1979.0 / 2}
H200_HBM_TBS = 4.8
# The H100 SXM (nvidia.com/en-us/data-center/h100) quotes the same tensor-core peaks and 3.35 TB/s (HBM3).
HBM_TBS = {'H200': H200_HBM_TBS, 'H100': 3.35}


@dataclass
class Result:
    op: str                # e.g. 'fp8_gemm_nt'
    shape: str             # e.g. '4096x7168x2048'
    impl: str              # 'ours' or the baseline's name
    us: Optional[float]    # median time; None when the implementation could not run
    flops: float           # useful work (2*M*N*K for a GEMM)
    bytes: float           # least memory traffic: inputs read once, outputs written once
    dtype: str = 'fp8'     # tensor-core input type: 'fp8' or 'bf16' (picks the compute roof)

    @property
    def tflops(self) -> Optional[float]:
        return self.flops / (self.us * 1e-6) / 1e12 if self.us else None

    @property
    def tbs(self) -> Optional[float]:
        return self.bytes / (self.us * 1e-6) / 1e12 if self.us else None

    @property
    def intensity(self) -> float:
        """FLOP per byte of the least traffic."""
        return self.flops / self.bytes


def roof_tflops(intensity: float, dtype: str, gpu: str = 'H200') -> float:
    """The GPU's attainable TFLOPS at `intensity` FLOP/byte: bandwidth-bound below the ridge point."""
    return min(H200_PEAK_TFLOPS[dtype], HBM_TBS[gpu] * intensity)


def fraction_of_roof(r: Result) -> Optional[float]:
    return r.tflops / roof_tflops(r.intensity, r.dtype) if r.tflops else None


def _fmt(x: Optional[float], spec: str) -> str:
    return format(x, spec) if x is not None else 'n/a'


def table(results: Iterable[Result]) -> str:
    """One row per (op, shape, implementation): time, TFLOPS, TB/s, share of the H200 roofline at that
    arithmetic intensity, and the implementation's time over ours (> 1: ours is faster)."""
    results = list(results)
    ours = {(r.op, r.shape): r.us for r in results if r.impl == 'ours'}
    header = (f'{"op":<28} {"shape":<22} {"impl":<20} | {"us":>9} {"TFLOPS":>7} {"TB/s":>6} {"% roof":>6} | '
              f'{"t/ours":>6}')
    lines = [header, '-' * len(header)]
    for r in results:
        base = ours.get((r.op, r.shape))
        ratio = r.us / base if (r.us and base) else None
        roof = fraction_of_roof(r)
        lines.append(f'{r.op:<28} {r.shape:<22} {r.impl:<20} | {_fmt(r.us, "9.1f")} {_fmt(r.tflops, "7.0f")} '
                     f'{_fmt(r.tbs, "6.2f")} {_fmt(roof * 100 if roof else None, "6.1f")} | {_fmt(ratio, "6.2f")}')
    lines.append(f'% roof: achieved TFLOPS over the H200 roofline at the shape\'s FLOP/byte (dense FP8 '
                 f'{H200_PEAK_TFLOPS["fp8"]:.0f} / BF16 {H200_PEAK_TFLOPS["bf16"]:.0f} TFLOPS, {H200_HBM_TBS} TB/s); '
                 't/ours: its time over ours')
    return '\n'.join(lines)


def plot(results: Iterable[Result], path: str, title: str = 'deep_gemm on H200', gpu: str = 'H200') -> None:
    """Writes a log-log roofline PNG: achieved TFLOPS against FLOP/byte, one marker per implementation and
    one colour per op, with the FP8 and BF16 roofs of `gpu` (a key of HBM_TBS)."""
    try:
        import matplotlib
        matplotlib.use('Agg')  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError('--plot needs matplotlib: pip install matplotlib') from e
    results = [r for r in results if r.tflops]
    fig, ax = plt.subplots(figsize=(10, 6.5))
    if results:
        lo = min(r.intensity for r in results) / 2
        hi = max(max(r.intensity for r in results) * 2, H200_PEAK_TFLOPS['fp8'] / HBM_TBS[gpu] * 4)
    else:
        lo, hi = 1.0, 4000.0
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for dtype, style in (('fp8', '-'), ('bf16', '--')):
        ax.plot(xs, [roof_tflops(x, dtype, gpu) for x in xs], style, color='black', linewidth=1,
                label=f'{gpu} {dtype.upper()} roof ({H200_PEAK_TFLOPS[dtype]:.0f} TFLOPS, {HBM_TBS[gpu]} TB/s)')
    ops = sorted({r.op for r in results})
    impls = sorted({r.impl for r in results}, key=lambda name: (name != 'ours', name))
    colors = plt.get_cmap('tab10')
    markers = 'o^sDvP*Xh<>'
    for i, op in enumerate(ops):
        for j, impl in enumerate(impls):
            pts = [r for r in results if r.op == op and r.impl == impl]
            if pts:
                ax.scatter([r.intensity for r in pts], [r.tflops for r in pts], color=colors(i % 10),
                           marker=markers[j % len(markers)], s=60 if impl == 'ours' else 30,
                           edgecolors='black' if impl == 'ours' else 'none', label=f'{op}: {impl}', zorder=3)
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('arithmetic intensity (FLOP per byte of least memory traffic)')
    ax.set_ylabel('achieved TFLOPS')
    ax.set_title(title)
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7, loc='lower right')
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_json(results: Iterable[Result], path: str) -> None:
    with open(path, 'w') as f:
        json.dump([asdict(r) for r in results], f, indent=1)


def load_json(path: str) -> List[Result]:
    with open(path) as f:
        return [Result(**entry) for entry in json.load(f)]


def gemm_result(op: str, m: int, n: int, k: int, impl: str, us: Optional[float], in_bytes: int, out_bytes: int,
                dtype: str, extra_bytes: float = 0) -> Result:
    """A GEMM's result: 2*M*N*K FLOP; A and B read once at `in_bytes` per element, D written once at
    `out_bytes`, plus `extra_bytes` (scales)."""
    traffic = in_bytes * (m * k + n * k) + out_bytes * m * n + extra_bytes
    return Result(op, f'{m}x{n}x{k}', impl, us, 2.0 * m * n * k, float(traffic), dtype)

