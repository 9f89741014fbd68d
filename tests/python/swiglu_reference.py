"""Float32 reference of the fused FP8 quantisation ops (deep_gemm.swiglu_apply_weight_to_fp8 and
deep_gemm.apply_weight_to_fp8), written to reproduce the kernel's arithmetic bit for bit on any device:

- v: SwiGLU ``gate / (1 + exp(-gate)) * up`` (after the optional clamp), then ``* w``, all in float32;
- scale = amax / 448 rounded once (IEEE division). Computed as a float64 quotient rounded to float32,
  which is the correctly rounded float32 quotient. Not ``amax / 448`` on a CUDA tensor: PyTorch's CUDA
  division by a Python scalar multiplies by the rounded reciprocal 1/448, which is one ulp off for about
  half of all inputs (and then flips FP8 codes that lie near a rounding midpoint);
- round_scale: the smallest power of two >= scale, exactly (no log2/exp2 rounding);
- codes: float8_e4m3fn(v * (1 / scale)), the reciprocal correctly rounded, round to nearest even,
  saturating at +-448.

Shared by the GPU tests (test_swiglu_fp8_quant_gpu.py) and the CPU tests of the reference itself
(test_swiglu_fp8_quant.py).
"""
import math

import torch

from deep_gemm.utils import unpack_ue8m0_from_int

FP8_MAX = 448.0
AMAX_FLOOR = 1e-4


def ceil_pow2(s: torch.Tensor) -> torch.Tensor:
    """Smallest power of two >= s for positive normal float32 s, exactly (frexp mantissa 0.5 means s is one)."""
    m, e = torch.frexp(s)
    return torch.where(m == 0.5, s, torch.ldexp(torch.ones_like(s), e))


def quant_input(x: torch.Tensor, weights, clamp, swiglu: bool) -> torch.Tensor:
    """v [T, H] in float32, before quantisation."""
    x = x.float()
    if swiglu:
        h = x.shape[1] // 2
        gate, up = x[:, :h], x[:, h:]
        if clamp is not None:
            up = up.clamp(-clamp, clamp)
            gate = gate.clamp(max=clamp)
        v = gate / (1 + torch.exp(-gate)) * up
    else:
        v = x if clamp is None else x.clamp(-clamp, clamp)
    if weights is not None:
        v = v * weights[:, None].float()
    return v


def unrounded_scales(v: torch.Tensor, npc: int) -> torch.Tensor:
    """amax / 448 per token and group of npc columns (a trailing partial group too), float32 [T, S]."""
    t, h = v.shape
    s = math.ceil(h / npc)
    padded = torch.zeros(t, s * npc, device=v.device)
    padded[:, :h] = v
    amax = padded.view(t, s, npc).abs().amax(-1).clamp(min=AMAX_FLOOR)
    return (amax.double() / FP8_MAX).float()


def scales(v: torch.Tensor, npc: int, round_scale: bool) -> torch.Tensor:
    s = unrounded_scales(v, npc)
    return ceil_pow2(s) if round_scale else s


def fp8_codes(v: torch.Tensor, scale: torch.Tensor, npc: int) -> torch.Tensor:
    """float8_e4m3fn [T, H]: v times the correctly rounded reciprocal of its group's scale."""
    inv = (1.0 / scale.double()).float().repeat_interleave(npc, dim=1)[:, :v.shape[1]]
    return (v * inv).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def unpack_scales(sf: torch.Tensor, num_groups: int, ue8m0: bool) -> torch.Tensor:
    """The op's scales as float32 [T, S]. UE8M0: int32 [T, ceil(S/4)] in any layout (the op returns it
    M-major); shifts and masks on the words, since an int32 -> uint8 view needs a unit last stride."""
    if not ue8m0:
        return sf.float()
    return unpack_ue8m0_from_int(sf)[:, :num_groups]


def ue8m0_padding(sf: torch.Tensor, num_groups: int) -> torch.Tensor:
    """The unused exponent bytes of the last word of each row (unpacked; zero bytes read as 0.0)."""
    return unpack_ue8m0_from_int(sf)[:, num_groups:]
