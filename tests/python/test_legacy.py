"""``deep_gemm.legacy``: argument checks (CPU, no GPU, no launch), import without Triton, and GPU tests.

The numerical CPU tests run under Triton's interpreter in ``test_legacy_interpreter.py``; the sm_90
compile checks are in ``test_legacy_compile.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from legacy_util import LEGACY_DIR, PRIVATE_NAME, REPO, calc_diff, load_legacy

NT = "m_grouped_bf16_gemm_nt_contiguous_tl"
NN = "m_grouped_bf16_gemm_nn_contiguous_tl"
KG = "k_grouped_bf16_gemm_tn_contiguous_tl"

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def legacy():
    return load_legacy()


@pytest.fixture
def no_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def _mg_args(m=64, n=48, k=32, g=2, layout="nt"):
    a = torch.randn(m, k).to(torch.bfloat16)
    b = torch.randn(g, n, k).to(torch.bfloat16) if layout == "nt" else torch.randn(g, k, n).to(torch.bfloat16)
    d = torch.empty(m, n, dtype=torch.bfloat16)
    idx = torch.zeros(m, dtype=torch.int32)
    return a, b, d, idx


def _kg_args(ks=(16, 32), m=24, n=40):
    total = sum(ks)
    return (torch.randn(total, m).to(torch.bfloat16), torch.randn(total, n).to(torch.bfloat16),
            torch.empty(len(ks), m, n), list(ks))


def _device_error():
    """What a CPU call with valid arguments raises outside the interpreter."""
    return RuntimeError if load_legacy().triton_available() else ImportError


# ---------------------------------------------------------------------------------------------------
# Import behaviour
# ---------------------------------------------------------------------------------------------------

def test_import_does_not_load_triton_or_extension():
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("{PRIVATE_NAME}", r"{LEGACY_DIR / '__init__.py'}",
                                                      submodule_search_locations=[r"{LEGACY_DIR}"])
        mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
        assert callable(mod.m_grouped_bf16_gemm_nt_contiguous_tl)
        assert callable(mod.m_grouped_gemm.m_grouped_bf16_gemm_nn_contiguous_tl)
        assert callable(mod.k_grouped_gemm.k_grouped_bf16_gemm_tn_contiguous_tl)
        loaded = [m for m in sys.modules if m == "triton" or (m.startswith("deep_gemm") and m.endswith("_C"))]
        assert not loaded, loaded
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_import_as_deep_gemm_legacy():
    """``import deep_gemm.legacy`` from the working tree (skipped if the package itself cannot import)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    probe = subprocess.run([sys.executable, "-c", "import deep_gemm"], capture_output=True, text=True,
                           env=env, cwd=str(REPO), timeout=300)
    if probe.returncode != 0:
        pytest.skip("deep_gemm/__init__.py does not import in this environment: "
                    + (probe.stderr.strip().splitlines() or ["?"])[-1])
    code = ("import deep_gemm.legacy as L, deep_gemm.legacy.m_grouped_gemm as M; "
            "assert L.m_grouped_bf16_gemm_nt_contiguous_tl is M.m_grouped_bf16_gemm_nt_contiguous_tl; "
            "import deep_gemm.legacy.k_grouped_gemm; print(L.__file__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_without_triton_import_works_and_call_raises():
    code = textwrap.dedent(f"""
        import importlib.abc, importlib.util, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "triton" or name.startswith("triton."):
                    raise ImportError("No module named 'triton' (blocked by test)")
                return None
        sys.meta_path.insert(0, Block())
        import torch
        spec = importlib.util.spec_from_file_location("{PRIVATE_NAME}", r"{LEGACY_DIR / '__init__.py'}",
                                                      submodule_search_locations=[r"{LEGACY_DIR}"])
        mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)
        assert not mod.triton_available()
        a = torch.zeros(8, 16, dtype=torch.bfloat16); b = torch.zeros(1, 4, 16, dtype=torch.bfloat16)
        d = torch.zeros(8, 4, dtype=torch.bfloat16); idx = torch.zeros(8, dtype=torch.int32)
        for call in (lambda: mod.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx),
                     lambda: mod.k_grouped_bf16_gemm_tn_contiguous_tl(
                         torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(4, 2, dtype=torch.bfloat16),
                         torch.zeros(1, 8, 2), [4])):
            try:
                call()
            except ImportError as e:
                assert "needs Triton" in str(e) and "pip install triton" in str(e), str(e)
            else:
                raise AssertionError("no ImportError")
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


# ---------------------------------------------------------------------------------------------------
# Argument checks: m-grouped
# ---------------------------------------------------------------------------------------------------

def test_dtype_message_form(legacy):
    a, b, d, idx = _mg_args()
    with pytest.raises(TypeError) as info:
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b.float(), d, idx)
    assert str(info.value) == f"{NT}: b must have dtype bfloat16; got float32"


@pytest.mark.parametrize("what", ["a", "b", "d", "m_indices", "not_tensor"])
def test_m_grouped_dtype_errors(legacy, what):
    a, b, d, idx = _mg_args()
    if what == "a":
        a = a.half()
    elif what == "b":
        b = b.half()
    elif what == "d":
        d = d.to(torch.float16)
    elif what == "m_indices":
        idx = idx.long()
    else:
        idx = [0] * a.shape[0]
    for fn, name, bb in ((legacy.m_grouped_bf16_gemm_nt_contiguous_tl, NT, b),
                         (legacy.m_grouped_bf16_gemm_nn_contiguous_tl, NN,
                          b.transpose(1, 2).contiguous() if what != "b" else b)):
        with pytest.raises(TypeError, match=f"^{name}: "):
            fn(a, bb, d, idx)


def test_m_grouped_shape_errors(legacy):
    f = legacy.m_grouped_bf16_gemm_nt_contiguous_tl
    a, b, d, idx = _mg_args(m=64, n=48, k=32)
    with pytest.raises(ValueError, match=f"^{NT}: a must be 2-D"):
        f(a[None], b, d, idx)
    with pytest.raises(ValueError, match=f"^{NT}: b must be 3-D"):
        f(a, b[0], d, idx)
    with pytest.raises(ValueError, match=f"^{NT}: d must have 64 rows"):
        f(a, b, d[:63], idx)
    with pytest.raises(ValueError, match=f"^{NT}: m_indices must have 64 entries"):
        f(a, b, d, idx[:10])
    with pytest.raises(ValueError, match=f"^{NT}: m_indices must be 1-D"):
        f(a, b, d, idx.view(8, 8))
    with pytest.raises(ValueError, match=rf"^{NT}: b must have shape \[G, N, K\] = \[G, 48, 32\]"):
        f(a, b[:, :40], d, idx)
    # nn does not infer: a [G, N, K] weight with N != K is rejected.
    with pytest.raises(ValueError, match=rf"^{NN}: b must have shape \[G, K, N\] = \[G, 32, 48\]"):
        legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b, d, idx)


def test_m_grouped_stride_and_overlap_errors(legacy):
    f = legacy.m_grouped_bf16_gemm_nt_contiguous_tl
    a, b, d, idx = _mg_args(m=64, n=48, k=32)
    with pytest.raises(ValueError, match=f"^{NT}: a must be contiguous in its last dimension"):
        f(torch.randn(32, 64).to(torch.bfloat16).t(), b, d, idx)
    with pytest.raises(ValueError, match=f"^{NT}: b must be contiguous in its last dimension"):
        f(a, torch.randn(2, 32, 48).to(torch.bfloat16).transpose(1, 2), d, idx)
    with pytest.raises(ValueError, match=f"^{NT}: d must be contiguous in its last dimension"):
        f(a, b, torch.empty(48, 64, dtype=torch.bfloat16).t(), idx)
    with pytest.raises(ValueError, match=f"^{NT}: m_indices must be contiguous"):
        f(a, b, d, torch.zeros(128, dtype=torch.int32)[::2])
    with pytest.raises(ValueError, match=f"^{NT}: d must not have zero strides"):
        f(a, b, torch.empty(1, 48, dtype=torch.bfloat16).expand(64, 48), idx)
    buf = torch.empty(64 * 48 + 64 * 32, dtype=torch.bfloat16)
    a_view = buf[:64 * 32].view(64, 32)
    d_view = buf[64 * 16:64 * 16 + 64 * 48].view(64, 48)      # overlaps the end of a_view
    with pytest.raises(ValueError, match=f"^{NT}: d must not overlap a"):
        f(a_view, b, d_view, idx)


def test_m_grouped_device_error_on_cpu(legacy, no_interpreter):
    a, b, d, idx = _mg_args()
    with pytest.raises(_device_error(), match=f"^{NT}: "):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx)


def test_exact_call_shapes_pass_validation(legacy, no_interpreter):
    """A user's reported call (b [1, 256, 1024] with K = 256, N = 1024) is accepted: it gets past every shape
    check to the device check (CPU tensors here)."""
    A = torch.empty(1024, 256, dtype=torch.bfloat16)
    B = torch.empty(1, 256, 1024, dtype=torch.bfloat16)
    D = torch.empty(1024, 1024, dtype=torch.bfloat16)
    m_idx = torch.zeros(1024, dtype=torch.int32)
    with pytest.raises(_device_error()) as info:
        legacy.m_grouped_gemm.m_grouped_bf16_gemm_nt_contiguous_tl(A, B, D, m_idx)
    assert "must be on a CUDA device" in str(info.value) or "needs Triton" in str(info.value)


@requires_cuda
def test_mixed_devices(legacy):
    a, b, d, idx = _mg_args()
    with pytest.raises(RuntimeError, match=f"^{NT}: all tensors must be on one device"):
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a.cuda(), b.cuda(), d.cuda(), idx)


# ---------------------------------------------------------------------------------------------------
# Argument checks: k-grouped
# ---------------------------------------------------------------------------------------------------

def test_k_grouped_errors(legacy, no_interpreter):
    f = legacy.k_grouped_bf16_gemm_tn_contiguous_tl
    a, b, d, ks = _kg_args(ks=(16, 32), m=24, n=40)
    with pytest.raises(TypeError, match=f"^{KG}: d must have dtype float32; got bfloat16"):
        f(a, b, d.bfloat16(), ks)
    with pytest.raises(TypeError, match=f"^{KG}: a must have dtype bfloat16; got float32"):
        f(a.float(), b, d, ks)
    with pytest.raises(TypeError, match=f"^{KG}: c must have dtype float32"):
        f(a, b, d, ks, c=d.bfloat16())
    with pytest.raises(TypeError, match=f"^{KG}: ks must be a list or tuple"):
        f(a, b, d, torch.tensor(ks))
    with pytest.raises(TypeError, match=f"^{KG}: ks_tensor must have dtype int32"):
        f(a, b, d, ks, torch.tensor(ks, dtype=torch.int64))
    with pytest.raises(ValueError, match=f"^{KG}: sum\\(ks\\) must equal a.shape\\[0\\] = 48; got 47"):
        f(a, b, d, [16, 31])
    with pytest.raises(ValueError, match=f"^{KG}: ks must be non-negative"):
        f(a, b, d, [50, -2])
    with pytest.raises(ValueError, match=f"^{KG}: ks must have one entry per group"):
        f(a, b, d, [48])
    with pytest.raises(ValueError, match=f"^{KG}: a must have shape \\[sum\\(ks\\), M\\] with M = 24"):
        f(a[:, :20], b, d, ks)
    with pytest.raises(ValueError, match=f"^{KG}: b must have shape"):
        f(a, b[:40], d, ks)
    with pytest.raises(ValueError, match=f"^{KG}: c must have the shape of d"):
        f(a, b, d, ks, c=d[:1])
    with pytest.raises(ValueError, match=f"^{KG}: ks_tensor must have 2 entries"):
        f(a, b, d, ks, torch.tensor([1, 2, 3], dtype=torch.int32))
    with pytest.raises(ValueError, match=f"^{KG}: a must be contiguous in its last dimension"):
        f(torch.randn(24, 48).to(torch.bfloat16).t(), b, d, ks)
    buf = torch.empty(2 * 2 * 24 * 40)
    with pytest.raises(ValueError, match=f"^{KG}: d must not overlap c"):
        f(a, b, buf[:1920].view(2, 24, 40), ks, c=buf[40:1960].view(2, 24, 40))
    # c is d (in-place accumulation) is allowed: reaches the device check.
    with pytest.raises(_device_error(), match=f"^{KG}: "):
        f(a, b, d, ks, c=d)


# ---------------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------------

@pytest.mark.gpu
@requires_cuda
def test_gpu_exact_call():
    m_grouped_bf16_gemm_nt_contiguous_tl = load_legacy().m_grouped_gemm.m_grouped_bf16_gemm_nt_contiguous_tl
    A = torch.randn(1024, 256, dtype=torch.bfloat16, device="cuda")
    B = torch.randn(1, 256, 1024, dtype=torch.bfloat16, device="cuda")
    D = torch.empty(1024, 1024, dtype=torch.bfloat16, device="cuda")
    m_idx = torch.zeros(1024, dtype=torch.int32, device="cuda")
    m_grouped_bf16_gemm_nt_contiguous_tl(A, B, D, m_idx)
    torch.cuda.synchronize()
    assert calc_diff(D, A.float() @ B[0].float()) < 1e-5


def _moe_layout(sizes, align=128):
    parts = []
    for g, size in enumerate(sizes):
        padded = (size + align - 1) // align * align
        parts += [torch.full((size,), g, dtype=torch.int32), torch.full((padded - size,), -1, dtype=torch.int32)]
    return torch.cat(parts).cuda()


def _m_grouped_reference(a, b_gnk, idx):
    ref = torch.zeros(a.shape[0], b_gnk.shape[1], device=a.device)
    for g in range(b_gnk.shape[0]):
        rows = idx == g
        ref[rows] = a[rows].float() @ b_gnk[g].float().T
    return ref


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("layout", ["nt", "nn"])
@pytest.mark.parametrize("sizes,n,k", [([300, 0, 513, 128], 4096, 7168), ([1000], 2112, 7168),
                                       ([96, 200, 33], 1000, 1000), ([77, 1], 24576, 1536)])
def test_gpu_m_grouped(legacy, layout, sizes, n, k):
    torch.manual_seed(0)
    idx = _moe_layout(sizes)
    m, g = idx.shape[0], len(sizes)
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(g, n, k, dtype=torch.bfloat16, device="cuda")
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    if layout == "nt":
        legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx)
    else:
        legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b.transpose(1, 2).contiguous(), d, idx)
    assert not torch.isnan(d).any()
    assert (d[idx < 0] == 0).all()
    assert calc_diff(d, _m_grouped_reference(a, b, idx)) < 1e-5


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("d_dtype", [torch.bfloat16, torch.float32])
def test_gpu_m_grouped_arbitrary_ids(legacy, d_dtype):
    torch.manual_seed(1)
    m, n, k, g = 1000, 200, 300, 5
    idx = torch.randint(-1, g, (m,), dtype=torch.int32, device="cuda")
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(g, n, k, dtype=torch.bfloat16, device="cuda")
    d = torch.full((m, n), float("nan"), dtype=d_dtype, device="cuda")
    legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx)
    assert not torch.isnan(d).any()
    assert calc_diff(d, _m_grouped_reference(a, b, idx)) < 1e-5


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("mode", ["plain", "c", "c_is_d", "ks_tensor"])
def test_gpu_k_grouped(legacy, mode):
    torch.manual_seed(2)
    ks, m, n = [256, 0, 384, 1000, 7], 2112, 1536
    total = sum(ks)
    a = torch.randn(total, m, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(total, n, dtype=torch.bfloat16, device="cuda")
    c = torch.randn(len(ks), m, n, device="cuda") if mode in ("c", "c_is_d") else None
    ref = torch.zeros(len(ks), m, n, device="cuda") if c is None else c.clone()
    start = 0
    for g, kg in enumerate(ks):
        ref[g] += a[start:start + kg].float().T @ b[start:start + kg].float()
        start += kg
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device="cuda") if mode == "ks_tensor" else None
    if mode == "c_is_d":
        d = c
        legacy.k_grouped_bf16_gemm_tn_contiguous_tl(a, b, d, ks, c=d)
    else:
        d = torch.full((len(ks), m, n), float("nan"), device="cuda")
        legacy.k_grouped_bf16_gemm_tn_contiguous_tl(a, b, d, ks, ks_tensor, c=c)
    assert not torch.isnan(d).any()
    assert calc_diff(d, ref) < 1e-5
