"""Compile-only checks of the ``deep_gemm.legacy`` Triton kernels for sm_90 (no GPU needed).

Every autotuning config is compiled ahead of time for an sm_90 target (``triton.compile`` with a
``GPUTarget``; Triton ships ``ptxas``), and the PTX must use Hopper tensor cores (``wgmma.mma_async``)
and fit in the 227 KiB of shared memory per block. Catches kernels that only work in the interpreter.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from legacy_util import PRIVATE_NAME, load_legacy

triton = pytest.importorskip("triton")

SM90_SMEM_LIMIT = 232448

if os.environ.get("TRITON_INTERPRET", "0").strip().lower() not in ("", "0", "false", "off"):
    pytest.skip("TRITON_INTERPRET is set: kernels would be interpreted, not compiled", allow_module_level=True)

try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - other Triton layouts
    pytest.skip("this Triton has no ahead-of-time compile API", allow_module_level=True)


def _kernels_module():
    load_legacy()
    return importlib.import_module(PRIVATE_NAME + "._kernels")


def _jit_fn(kernel):
    # Unwrap triton.heuristics / triton.autotune wrappers down to the JITFunction.
    while not hasattr(kernel, "src") and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


def _compile(kernel, signature, constexprs, aligned, num_warps, num_stages, arch=90, maxnreg=None):
    attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
    src = ASTSource(_jit_fn(kernel), signature, constexprs, attrs)
    options = {"num_warps": num_warps, "num_stages": num_stages}
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def _config_params(cfg):
    kw = dict(cfg.kwargs)
    return kw, cfg.num_warps, cfg.num_stages


CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def _sass_hot_loops(cubin: bytes, tmp_path: Path):
    """(start, end, local-memory instructions, HGMMA count) of every SASS loop that issues HGMMA."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([str(CUOBJDUMP), "-sass", str(path)], capture_output=True, text=True,
                          check=True).stdout
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    loops = []
    for addr, text in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr]
            hgmma = sum("HGMMA" in t for t in body)
            if hgmma:
                loops.append((int(m.group(1), 16), addr, sum(("LDL" in t or "STL" in t) for t in body), hgmma))
    return loops


def _check(compiled, tmp_path):
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx, "no wgmma in the sm_90 PTX"
    assert "cp.async" in ptx, "no asynchronous global->shared copies (pipelining)"
    assert compiled.metadata.shared <= SM90_SMEM_LIMIT, compiled.metadata.shared
    if CUOBJDUMP.exists():
        loops = _sass_hot_loops(compiled.asm["cubin"], tmp_path)
        assert loops, "no SASS loop issues HGMMA"
        # The K loops (innermost loops with HGMMA) must not touch local memory (register spills).
        innermost = [lp for lp in loops if not any(o[0] > lp[0] and o[1] < lp[1] for o in loops if o != lp)]
        assert all(lp[2] == 0 for lp in innermost), f"spills inside the K loop: {innermost}"


M_SIG = {"a_ptr": "*bf16", "b_ptr": "*bf16", "d_ptr": "*bf16", "idx_ptr": "*i32", "rows_ptr": "*i32",
         "M": "i32", "N": "i32", "K": "i32", "G": "i32", "A_ROWS": "i32", "M_BUCKET": "i32",
         "stride_am": "i32", "stride_bg": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_dm": "i32",
         "B_K_MAJOR": "constexpr", "A_GATHER": "constexpr", "UPCAST": "constexpr", "BLOCK_M": "constexpr",
         "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "EVEN_K": "constexpr"}
# Arguments given 16-divisibility (pointers, and the ints the runtime usually sees as multiples of 16).
M_ALIGNED = [0, 1, 2, 3, 4, 6, 7, 11, 12, 13, 14, 15]
K_SIG = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "d_ptr": "*fp32", "k_start_ptr": "*i32",
         "k_end_ptr": "*i32", "k_idx_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "SRC_ROWS": "i32",
         "stride_ak": "i32", "stride_bk": "i32", "stride_cg": "i32", "stride_cm": "i32",
         "stride_dg": "i32", "stride_dm": "i32", "GATHER": "constexpr", "HAS_C": "constexpr", "UPCAST": "constexpr",
         "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"}
K_ALIGNED = [0, 1, 2, 3, 4, 6, 7, 8, 11, 12, 13, 14, 15, 16]


def _m_cases():
    kn = _kernels_module()
    cases = [(i, True, True, False) for i in range(len(kn.M_GROUPED_CONFIGS))]
    # MN-major b, odd K, and the a_fused row gather.
    cases += [(0, False, True, False), (1, True, False, False), (1, False, False, False), (0, True, True, True),
              (1, False, False, True)]
    return cases


@pytest.mark.parametrize("cfg_index,b_k_major,even_k,a_gather", _m_cases())
def test_m_grouped_kernel_compiles_for_sm90(cfg_index, b_k_major, even_k, a_gather, tmp_path):
    kn = _kernels_module()
    meta, warps, stages = _config_params(kn.M_GROUPED_CONFIGS[cfg_index])
    consts = dict(meta, B_K_MAJOR=b_k_major, A_GATHER=a_gather, UPCAST=False, EVEN_K=even_k)
    compiled = _compile(kn.m_grouped_kernel, M_SIG, consts, M_ALIGNED, warps, stages)
    _check(compiled, tmp_path)


def _tma_sig(meta, b_k_major):
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    return {"a_desc": f"tensordesc<bf16[{bm}, {bk}]>",
            "b_desc": f"tensordesc<bf16[{bn}, {bk}]>" if b_k_major else f"tensordesc<bf16[{bk}, {bn}]>",
            "d_desc": f"tensordesc<bf16[{bm}, {bn}]>",
            **{k: v for k, v in M_SIG.items() if k not in ("rows_ptr", "A_ROWS", "A_GATHER")},
            "D_TMA": "constexpr"}


@pytest.mark.parametrize("cfg_index,b_k_major,d_tma", [(0, True, True), (1, False, True), (7, True, False),
                                                       (12, True, True)])
def test_m_grouped_tma_kernel_compiles_for_sm90(cfg_index, b_k_major, d_tma, tmp_path):
    """The TMA variant: its K loop loads through UTMALDG (hardware tensor copies), not LDG/cp.async; with
    D_TMA the tile is stored with UTMASTG."""
    kn = _kernels_module()
    meta, warps, stages = _config_params(kn.M_GROUPED_TMA_CONFIGS[cfg_index])
    consts = dict(meta, B_K_MAJOR=b_k_major, D_TMA=d_tma, UPCAST=False, EVEN_K=True)
    sig = _tma_sig(meta, b_k_major)
    aligned = [i for i, name in enumerate(sig) if name in ("a_ptr", "b_ptr", "d_ptr", "idx_ptr", "N", "K",
                                                             "stride_am", "stride_bg", "stride_bk", "stride_bn",
                                                             "stride_dm")]
    maxnreg = kn.M_GROUPED_TMA_CONFIGS[cfg_index].maxnreg
    compiled = _compile(kn.m_grouped_tma_kernel, sig, consts, aligned, warps, stages, maxnreg=maxnreg)
    assert "wgmma.mma_async" in compiled.asm["ptx"] and "cp.async.bulk.tensor" in compiled.asm["ptx"]
    assert compiled.metadata.shared <= SM90_SMEM_LIMIT, compiled.metadata.shared
    if CUOBJDUMP.exists():
        path = tmp_path / "kernel.cubin"
        path.write_bytes(compiled.asm["cubin"])
        sass = subprocess.run([str(CUOBJDUMP), "-sass", str(path)], capture_output=True, text=True, check=True).stdout
        assert "UTMALDG" in sass and ("UTMASTG" in sass) == d_tma
        loops = _sass_hot_loops(compiled.asm["cubin"], tmp_path)
        innermost = [lp for lp in loops if not any(o[0] > lp[0] and o[1] < lp[1] for o in loops if o != lp)]
        assert innermost and all(lp[2] == 0 for lp in innermost), f"spills inside a K loop: {innermost}"
        if maxnreg is not None:   # the cap holds (two blocks per SM need it)
            res = subprocess.run([str(CUOBJDUMP), "-res-usage", str(path)], capture_output=True, text=True,
                                 check=True).stdout
            regs = [int(r) for r in re.findall(r"REG:(\d+)", res)]
            assert regs and max(regs) <= maxnreg, res


def _k_cases():
    kn = _kernels_module()
    cases = [(i, False, 0) for i in range(len(kn.K_GROUPED_CONFIGS))]
    return cases + [(0, True, 0), (2, True, 0), (0, True, 1), (2, False, 2)]   # with c; a_fused; b_fused


@pytest.mark.parametrize("cfg_index,has_c,gather", _k_cases())
def test_k_grouped_kernel_compiles_for_sm90(cfg_index, has_c, gather, tmp_path):
    kn = _kernels_module()
    meta, warps, stages = _config_params(kn.K_GROUPED_CONFIGS[cfg_index])
    consts = dict(meta, HAS_C=has_c, GATHER=gather, UPCAST=False)
    compiled = _compile(kn.k_grouped_kernel, K_SIG, consts, K_ALIGNED, warps, stages)
    _check(compiled, tmp_path)


def test_kernels_compile_for_sm80():
    """The legacy kernels are also for GPUs without the Hopper kernels: Ampere gets mma.sync."""
    kn = _kernels_module()
    meta, warps, stages = _config_params(kn.M_GROUPED_CONFIGS[1])
    compiled = _compile(kn.m_grouped_kernel, M_SIG,
                        dict(meta, B_K_MAJOR=True, A_GATHER=False, UPCAST=False, EVEN_K=False),
                        M_ALIGNED, warps, stages, arch=80)
    assert "mma.sync" in compiled.asm["ptx"]
    meta, warps, stages = _config_params(kn.K_GROUPED_CONFIGS[3])
    compiled = _compile(kn.k_grouped_kernel, K_SIG, dict(meta, HAS_C=True, GATHER=0, UPCAST=False), K_ALIGNED,
                        warps, stages, arch=80)
    assert "mma.sync" in compiled.asm["ptx"]


def test_autotuners_and_config_pruning():
    """The GPU-side autotuners exist with their keys, and large problems skip the 64-row tiles."""
    kn = _kernels_module()
    for tuner in (kn.m_grouped_kernel_tuned, kn.m_grouped_tma_kernel_tuned):
        assert "M_BUCKET" in tuner.keys and tuner.early_config_prune is kn.prune_m_grouped_configs
    small = kn.prune_m_grouped_configs(kn.M_GROUPED_TMA_CONFIGS, {"M_BUCKET": 2})
    large = kn.prune_m_grouped_configs(kn.M_GROUPED_TMA_CONFIGS, {"M_BUCKET": 6})
    assert small == kn.M_GROUPED_TMA_CONFIGS
    assert large and all(c.kwargs["BLOCK_M"] == 128 for c in large) and len(large) < len(small)
    # Every TMA candidate carries the pre-hook that sizes the descriptors' blocks.
    assert all(c.pre_hook is kn.set_tma_blocks for c in kn.m_grouped_tma_kernel_tuned.configs)
