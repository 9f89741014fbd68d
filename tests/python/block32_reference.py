"""Operands with block-32 scales (recipe (1, 32, 32)) and their float64 reference, shared by
test_fp8_block32_gpu.py, scripts/sanitize_cases.py and benchmarks/bench_fp8_block32.py.

A is quantized per row per 32 K (sfa [M, ceil(K/32)]), B per 32x32 block (sfb [ceil(N/32), ceil(K/32)]), both
float32 and row-major as a checkpoint stores them. The values get a magnitude of their own per 32-K block of A's
rows and per 32x32 block of B (powers of two over a range of 2^12), so that a kernel applying a scale to the wrong
32-K step or 32-column slice is far off the reference, not within rounding."""
import torch

FP8_MAX = 448.0


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def cast_blocks(x: torch.Tensor, rows: int):
    """FP8 E4M3 of x [R, K] with one float32 scale per `rows` x 32 block: (x_fp8 [R, K], sf [ceil(R/rows), ceil(K/32)])."""
    r, k = x.shape
    pr, pk = _align(r, rows), _align(k, 32)
    padded = x.new_zeros((pr, pk), dtype=torch.float32)
    padded[:r, :k] = x
    blocks = padded.view(pr // rows, rows, pk // 32, 32)
    sf = blocks.abs().amax(dim=(1, 3), keepdim=True).clamp(min=1e-4) / FP8_MAX
    x_fp8 = (blocks / sf).to(torch.float8_e4m3fn).view(pr, pk)[:r, :k].contiguous()
    return x_fp8, sf.view(pr // rows, pk // 32).contiguous()


def _spread(rows: int, cols: int, row_block: int, generator, device) -> torch.Tensor:
    """Per (row_block x 32) block a power of two in [2^-6, 2^6], expanded to [rows, cols]."""
    exps = torch.randint(-6, 7, (-(-rows // row_block), -(-cols // 32)), generator=generator, device=device)
    return torch.pow(2.0, exps.float()).repeat_interleave(row_block, 0)[:rows].repeat_interleave(32, 1)[:, :cols]


def make_inputs(m: int, n: int, k: int, seed: int = 0, device='cuda'):
    """(a_fp8 [M, K], sfa [M, ceil(K/32)], b_fp8 [N, K], sfb [ceil(N/32), ceil(K/32)]), all contiguous."""
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((m, k), device=device, generator=g) * _spread(m, k, 1, g, device)
    b = torch.randn((n, k), device=device, generator=g) * _spread(n, k, 32, g, device)
    a_fp8, sfa = cast_blocks(a, 1)
    b_fp8, sfb = cast_blocks(b, 32)
    return a_fp8, sfa, b_fp8, sfb


def dequantize(x_fp8: torch.Tensor, sf: torch.Tensor, rows: int) -> torch.Tensor:
    r, k = x_fp8.shape
    return x_fp8.double() * sf.double().repeat_interleave(rows, 0)[:r].repeat_interleave(32, 1)[:, :k]


def reference(a_fp8, sfa, b_fp8, sfb) -> torch.Tensor:
    """The float64 product of the dequantized operands, [M, N]."""
    return dequantize(a_fp8, sfa, 1) @ dequantize(b_fp8, sfb, 32).t()
