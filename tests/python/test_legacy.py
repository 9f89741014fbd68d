"""``deep_gemm.legacy``: argument checks (CPU, no GPU, no launch), import without Triton, and GPU tests.

The numerical CPU tests run under Triton's interpreter in ``test_legacy_interpreter.py``; the sm_90
compile checks are in ``test_legacy_compile.py``.
"""

from __future__ import annotations

import importlib
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
ANT = "a_fused_m_grouped_bf16_gemm_nt_contiguous_tl"
ANN = "a_fused_m_grouped_bf16_gemm_nn_contiguous_tl"
AKG = "a_fused_k_grouped_bf16_gemm_tn_contiguous_tl"
BKG = "b_fused_k_grouped_bf16_gemm_tn_contiguous_tl"
ALL_OPS = [NT, NN, ANT, ANN, KG, AKG, BKG]

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
        assert callable(mod.a_fused_m_grouped_gemm.a_fused_m_grouped_bf16_gemm_nn_contiguous_tl)
        assert callable(mod.a_fused_k_grouped_gemm.a_fused_k_grouped_bf16_gemm_tn_contiguous_tl)
        assert callable(mod.b_fused_k_grouped_gemm.b_fused_k_grouped_bf16_gemm_tn_contiguous_tl)
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
        import importlib.util, sys
        sys.modules["triton"] = None  # hides Triton also from torch >= 2.15's find_spec('triton') at import
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
    # b may be K-major or MN-major, not strided along both.
    with pytest.raises(ValueError, match=f"^{NT}: b must be contiguous along K \\(K-major\\) or along N"):
        f(a, torch.randn(2, 96, 64).to(torch.bfloat16)[:, ::2, ::2], d, idx)
    with pytest.raises(ValueError, match=f"^{NN}: b must be contiguous along K \\(K-major\\) or along N"):
        legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, torch.randn(2, 64, 96).to(torch.bfloat16)[:, ::2, ::2], d, idx)
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


def test_mn_major_b_passes_validation(legacy, no_interpreter):
    """MN-major weights are accepted by both m-grouped entry points (they reach the device check)."""
    a, b, d, idx = _mg_args(m=64, n=48, k=32)
    for call in (lambda: legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b.mT.contiguous().mT, d, idx),
                 lambda: legacy.m_grouped_bf16_gemm_nn_contiguous_tl(a, b.mT, d, idx),
                 lambda: legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a, b.mT.contiguous().mT, d, (idx, idx))):
        with pytest.raises(_device_error()):
            call()


# ---------------------------------------------------------------------------------------------------
# Argument checks: a_fused m-grouped, a_fused / b_fused k-grouped
# ---------------------------------------------------------------------------------------------------

def test_a_fused_m_grouped_errors(legacy, no_interpreter):
    f = legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl
    a = torch.randn(10, 32).to(torch.bfloat16)          # 10 source rows, 64 output rows
    b = torch.randn(2, 48, 32).to(torch.bfloat16)
    d = torch.empty(64, 48, dtype=torch.bfloat16)
    idx, rows = torch.zeros(64, dtype=torch.int32), torch.zeros(64, dtype=torch.int32)
    with pytest.raises(TypeError, match=rf"^{ANT}: mappings must be a pair \(m_indices, m_row_indices\)"):
        f(a, b, d, idx)
    with pytest.raises(TypeError, match=f"^{ANT}: mappings must be a pair.*of length 3"):
        f(a, b, d, (idx, rows, rows))
    with pytest.raises(TypeError, match=f"^{ANT}: m_row_indices must have dtype int32; got int64"):
        f(a, b, d, (idx, rows.long()))
    with pytest.raises(ValueError, match=f"^{ANT}: m_row_indices must have 64 entries like m_indices"):
        f(a, b, d, (idx, rows[:10]))
    with pytest.raises(ValueError, match=f"^{ANT}: m_indices must have 64 entries, one per row of d"):
        f(a, b, d, (idx[:10], rows))
    with pytest.raises(ValueError, match=rf"^{ANN}: b must have shape \[G, K, N\] = \[G, 32, 48\]"):
        legacy.a_fused_m_grouped_bf16_gemm_nn_contiguous_tl(a, b, d, (idx, rows))
    with pytest.raises(ValueError, match=f"^{ANT}: d must not overlap m_row_indices"):
        buf = torch.empty(64 * 48, dtype=torch.bfloat16)
        f(a, b, buf.view(64, 48), (idx, buf[:128].view(torch.int32)))
    with pytest.raises(_device_error(), match=f"^{ANT}: "):   # valid: any number of source rows
        f(a, b, d, (idx, rows))


def _fk_args(fused, positions=48, t_rows=20, m=24, n=40, g=2):
    src = torch.randn(t_rows, m if fused == "a" else n).to(torch.bfloat16)
    plain = torch.randn(positions, n if fused == "a" else m).to(torch.bfloat16)
    a, b = (src, plain) if fused == "a" else (plain, src)
    handle = (torch.zeros(positions, dtype=torch.int32), torch.zeros(g, dtype=torch.int32),
              torch.zeros(g, dtype=torch.int32))
    return a, b, torch.empty(g, m, n), handle


@pytest.mark.parametrize("fused", ["a", "b"])
def test_fused_k_grouped_errors(legacy, no_interpreter, fused):
    op = AKG if fused == "a" else BKG
    f = getattr(legacy, op)
    a, b, d, (ki, ks, ke) = _fk_args(fused)
    plain = "b" if fused == "a" else "a"
    with pytest.raises(TypeError, match=rf"^{op}: handle must be a triple \(k_indices, k_start, k_end\)"):
        f(a, b, d, (ki, ks), True)
    with pytest.raises(TypeError, match=f"^{op}: acc must be a bool; got int"):
        f(a, b, d, (ki, ks, ke), 1)
    with pytest.raises(TypeError, match=f"^{op}: d must have dtype float32 or bfloat16; got float16"):
        f(a, b, d.half(), (ki, ks, ke), False)
    with pytest.raises(TypeError, match=f"^{op}: k_start must have dtype int32; got int64"):
        f(a, b, d, (ki, ks.long(), ke), False)
    with pytest.raises(ValueError, match=f"^{op}: k_indices must have one entry per row of {plain} \\(48\\)"):
        f(a, b, d, (ki[:47], ks, ke), False)
    with pytest.raises(ValueError, match=f"^{op}: k_end must have one entry per group \\(G = 2"):
        f(a, b, d, (ki, ks, ke[:1]), False)
    with pytest.raises(ValueError, match=f"^{op}: a must have shape .* with M = 24"):
        f(a[:, :20], b, d, (ki, ks, ke), False)
    with pytest.raises(ValueError, match=f"^{op}: b must be contiguous in its last dimension"):
        f(a, torch.randn(b.shape[1], b.shape[0]).to(torch.bfloat16).t(), d, (ki, ks, ke), False)
    with pytest.raises(ValueError, match=f"^{op}: d must not overlap k_indices"):
        f(a, b, d, (d.view(-1)[:48].view(torch.int32), ks, ke), False)
    with pytest.raises(_device_error(), match=f"^{op}: "):
        f(a, b, d, (ki, ks, ke), True)


# ---------------------------------------------------------------------------------------------------
# torch.library ops
# ---------------------------------------------------------------------------------------------------

def _op_args(name, device):
    """A valid call of each op (flattened arguments), on ``device``."""
    t = lambda *shape, dtype=torch.bfloat16: torch.randn(*shape).to(dtype).to(device)
    i32 = lambda n: torch.zeros(n, dtype=torch.int32, device=device)
    if name in (NT, NN):
        return (t(64, 32), t(2, 48, 32) if name == NT else t(2, 32, 48), t(64, 48), i32(64))
    if name in (ANT, ANN):
        return (t(10, 32), t(2, 48, 32) if name == ANT else t(2, 32, 48), t(64, 48), i32(64), i32(64))
    if name == KG:
        return (t(48, 24), t(48, 40), t(2, 24, 40, dtype=torch.float32), [16, 32], None, None)
    a, b, d, (ki, ks, ke) = _fk_args("a" if name == AKG else "b")
    return (a.to(device), b.to(device), d.to(device), ki.to(device), ks.to(device), ke.to(device), True)


@pytest.mark.parametrize("name", ALL_OPS)
def test_torch_library_schema_mutates_only_d(legacy, name):
    schema = getattr(torch.ops.deep_gemm, name).default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ["d"] and len(schema.returns) == 0, str(schema)


@pytest.mark.parametrize("name", ALL_OPS)
def test_torch_library_opcheck_meta(legacy, name):
    torch.library.opcheck(getattr(torch.ops.deep_gemm, name).default, _op_args(name, "meta"))


def test_torch_library_fake_runs_validation(legacy):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a, b, d, idx, rows = _op_args(ANT, "cpu")
        torch.ops.deep_gemm.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx, rows)
        with pytest.raises(ValueError, match=f"^{ANT}: m_row_indices must have 64 entries"):
            torch.ops.deep_gemm.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx, rows[:5])


def test_torch_compile_records_the_op(legacy):
    """torch.compile(fullgraph=True) traces a public function into its op (no graph break)."""
    torch._dynamo.reset()
    counts = {}

    def backend(gm, example_inputs):
        counts["ops"] = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
        return gm.forward

    fn = torch.compile(legacy.a_fused_k_grouped_bf16_gemm_tn_contiguous_tl, backend=backend, fullgraph=True)
    a, b, d, handle = _fk_args("a")
    with pytest.raises(Exception):   # CPU tensors outside the interpreter: the op itself refuses to run
        fn(a, b, d, handle, True)
    assert any(AKG in op for op in counts.get("ops", [])), counts


# ---------------------------------------------------------------------------------------------------
# Triton's cache directory and the DG_JIT_DEBUG compile log
# ---------------------------------------------------------------------------------------------------

def _triton_cache_module():
    load_legacy()
    import importlib
    return importlib.import_module(PRIVATE_NAME + "._triton_cache")


def test_cache_dir_env_precedence(tmp_path):
    tc = _triton_cache_module()
    assert tc.legacy_cache_dir({"DG_JIT_CACHE_DIR": str(tmp_path), "HOME": "/h"}) == str(tmp_path / "triton")
    assert tc.legacy_cache_dir({"HOME": "/h"}) == "/h/.deep_gemm/triton"
    assert tc.legacy_cache_dir({"DG_JIT_CACHE_DIR": "", "HOME": "/h"}) == "/h/.deep_gemm/triton"   # empty = unset
    assert tc.legacy_cache_dir({"TRITON_CACHE_DIR": "/t", "DG_JIT_CACHE_DIR": str(tmp_path)}) is None
    assert tc.legacy_cache_dir({"TMPDIR": "/x"}) == f"/x/deep_gemm-{os.getuid()}/triton"


def test_launch_scope_sets_and_restores_triton_cache_dir(tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    tc = _triton_cache_module()
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    before = triton.knobs.cache.dir
    env = {"DG_JIT_CACHE_DIR": str(tmp_path)}
    with tc.launch_scope(False, env):
        assert triton.knobs.cache.dir == str(tmp_path / "triton")
        assert "TRITON_CACHE_DIR" not in os.environ          # the process environment is left alone
    assert triton.knobs.cache.dir == before
    # TRITON_CACHE_DIR set: Triton's choice stands.
    with tc.launch_scope(False, {"TRITON_CACHE_DIR": "/somewhere", **env}) as chosen:
        assert chosen is None and triton.knobs.cache.dir == before


@pytest.mark.parametrize("whose", ["root", "triton"])
def test_launch_scope_refuses_a_triton_cache_another_user_can_write(tmp_path, monkeypatch, whose):
    """Triton loads whatever its cache holds: the legacy kernels' <root>/triton gets the C++ cache's checks.
    Another user's world-writable root, or a triton/ of theirs inside the victim's root, is refused."""
    triton = pytest.importorskip("triton")
    if os.geteuid() != 0:
        pytest.skip("needs root to hand directories to a second user (chown)")
    tc = _triton_cache_module()
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    root = tmp_path / "root"
    (root / "triton" / "planted").mkdir(parents=True)
    (root / "triton" / "planted" / "kernel.json").write_text("{}")
    hostile = root if whose == "root" else root / "triton"
    hostile.chmod(0o777)
    os.chown(hostile, 65534, 65534)
    before = triton.knobs.cache.dir
    with pytest.raises(RuntimeError, match="refusing the kernel cache dir.*uid 65534"):
        with tc.launch_scope(False, {"DG_JIT_CACHE_DIR": str(root)}):
            pass
    assert triton.knobs.cache.dir == before


_NO_COMPILE = textwrap.dedent("""
    import importlib, os, sys
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sys.path.insert(0, os.path.join(os.environ["REPO"], "tests", "python"))
    from legacy_util import PRIVATE_NAME, load_legacy
    load_legacy()
    tc = importlib.import_module(PRIVATE_NAME + "._triton_cache")
    from deep_gemm import _C

    @triton.jit
    def copy(x, y, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(y + offsets, tl.load(x + offsets))

    def compile_once(mode):
        os.environ["DG_JIT_COMPILE"] = mode
        _C.reload_settings()
        src = ASTSource(copy, {"x": "*fp32", "y": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
        try:
            with tc.launch_scope(False):
                triton.compile(src, target=GPUTarget("cuda", 90, 32))
            return "compiled or hit"
        except RuntimeError as e:
            return "RuntimeError: " + str(e)

    print(compile_once("error"))
    print(compile_once("compile"))
    print(compile_once("error"))
""")


def test_compile_mode_error_gates_the_legacy_triton_kernels(tmp_path):
    """DG_JIT_COMPILE=error: a legacy kernel missing from Triton's cache raises instead of compiling; once the
    cache has it, it is served."""
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET", "0").strip().lower() not in ("", "0", "false", "off"):
        pytest.skip("TRITON_INTERPRET is set: nothing is compiled")
    env = {**os.environ, "REPO": str(REPO), "DG_JIT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TRITON_CACHE_DIR", None)
    script = tmp_path / "no_compile.py"  # Triton reads a kernel's source from its file
    script.write_text(_NO_COMPILE)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    first, second, third = result.stdout.splitlines()
    assert first.startswith("RuntimeError: DG_JIT_COMPILE=error: legacy Triton kernel copy"), first
    assert second == "compiled or hit" and third == "compiled or hit", result.stdout


_MOCK_COMPILE = textwrap.dedent("""
    import contextlib, importlib, os, sys, torch, triton
    import deep_gemm.legacy
    kn = importlib.import_module("deep_gemm.legacy._kernels")
    torch.cuda.device = lambda device: contextlib.nullcontext()    # no GPU here: launch() only enters it

    class Src:                                   # what triton.compile hands its listener
        name = "m_grouped_kernel"
        constants = {(0,): 128, (1,): 256, (2,): 1}
        class fn:
            arg_names = ["BLOCK_M", "BLOCK_N", "stride_x"]

    class Times:
        total = 1234567                          # microseconds

    seen = {}
    def earlier_listener(**kwargs):
        seen["chained"] = kwargs["cache_hit"]
    triton.knobs.compilation.listener = earlier_listener

    class FakeKernel:                            # stands for the JITFunction: "compiles" when launched
        def __getitem__(self, grid):
            def run(*args, **kwargs):
                seen["dir"] = triton.knobs.cache.dir
                for hit in (False, True):
                    triton.knobs.compilation.listener(src=Src, metadata={"num_warps": 8, "num_stages": 3},
                                                      metadata_group={}, times=Times, cache_hit=hit)
            return run

    kn.launch(FakeKernel(), (1,), (), {}, torch.device("cuda"))
    assert seen["dir"] == os.path.join(os.environ["DG_JIT_CACHE_DIR"], "triton"), seen
    assert seen["chained"] is True, seen
    assert triton.knobs.compilation.listener is earlier_listener
    assert triton.knobs.cache.dir != seen["dir"] and "TRITON_CACHE_DIR" not in os.environ
    print("ok")
""")


def _deep_gemm_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_CACHE_DIR", "DG_JIT_DEBUG", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _skip_without_deep_gemm(env):
    probe = subprocess.run([sys.executable, "-c", "import deep_gemm"], capture_output=True, text=True, env=env,
                           cwd=str(REPO), timeout=300)
    if probe.returncode != 0:
        pytest.skip("deep_gemm does not import here: " + (probe.stderr.strip().splitlines() or ["?"])[-1])


@pytest.mark.parametrize("debug", ["1", "0"])
def test_compile_log_with_mocked_compile(tmp_path, debug):
    """In a fresh process, ``DG_JIT_DEBUG=1`` alone (no logging set-up) prints one line per Triton compile of a
    legacy kernel to stderr, with config, time and cache hit/miss; the cache dir is in place during the
    launch. Triton's compile is mocked (no GPU): the fake kernel calls the listener as triton.compile does."""
    pytest.importorskip("triton")
    env = _deep_gemm_env(DG_JIT_CACHE_DIR=str(tmp_path), DG_JIT_DEBUG=debug)
    _skip_without_deep_gemm(env)
    proc = subprocess.run([sys.executable, "-c", _MOCK_COMPILE], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
    miss = ("[deep_gemm DEBUG] legacy Triton kernel m_grouped_kernel [BLOCK_M=128 BLOCK_N=256 num_warps=8 "
            "num_stages=3]: compiled (cache miss) in 1.235 s")
    hit = "loaded from Triton's cache (hit) in 1.235 s"
    if debug == "1":
        assert miss in proc.stderr and hit in proc.stderr, proc.stderr
    else:
        assert "legacy Triton kernel" not in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------------

@pytest.fixture
def untuned(legacy, monkeypatch):
    """One fixed config per shape instead of the autotuner, which compiles and times up to 14 configs per
    new shape key (with autotuning everywhere this file did not finish in 40 s on the H200).
    test_gpu_m_grouped (and the benchmark) keep the autotuner, so its configs stay covered."""
    kn = importlib.import_module(legacy.__name__ + "._kernels")   # imported on first use: maybe not yet
    for name in ("m_grouped_kernel_tuned", "m_grouped_tma_kernel_tuned", "k_grouped_kernel_tuned"):
        monkeypatch.setattr(kn, name, None)


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
def test_gpu_m_grouped_arbitrary_ids(legacy, untuned, d_dtype):
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
def test_gpu_k_grouped(legacy, untuned, mode):
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


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("b_major", ["k", "mn"])
def test_gpu_m_grouped_mn_major_b(legacy, untuned, b_major):
    """nt and nn with either memory order of b; shapes not multiples of the blocks."""
    torch.manual_seed(3)
    idx = _moe_layout([300, 0, 513, 128])
    m, n, k, g = idx.shape[0], 1000, 1800, 4
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(g, n, k, dtype=torch.bfloat16, device="cuda")
    b_view = b if b_major == "k" else b.mT.contiguous().mT
    ref = _m_grouped_reference(a, b, idx)
    for fn, weight in ((legacy.m_grouped_bf16_gemm_nt_contiguous_tl, b_view),
                       (legacy.m_grouped_bf16_gemm_nn_contiguous_tl, b_view.mT)):
        d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        fn(a, weight, d, idx)
        torch.cuda.synchronize()
        assert not torch.isnan(d).any()
        assert calc_diff(d, ref) < 1e-5


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("layout", ["nt", "nn", "nt_mn_major"])
def test_gpu_a_fused_m_grouped(legacy, untuned, layout):
    torch.manual_seed(4)
    tokens, n, k, g = 700, 2112, 1536, 4
    idx = _moe_layout([300, 0, 513, 129])
    rows = torch.randint(0, tokens, idx.shape, dtype=torch.int32, device="cuda")
    rows = torch.where(idx >= 0, rows, -1)
    rows[5] = -1                                              # a valid group with no source row: zeros
    a = torch.randn(tokens, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(g, n, k, dtype=torch.bfloat16, device="cuda")
    d = torch.full((idx.shape[0], n), float("nan"), dtype=torch.bfloat16, device="cuda")
    if layout == "nn":
        legacy.a_fused_m_grouped_bf16_gemm_nn_contiguous_tl(a, b.mT.contiguous(), d, (idx, rows))
    else:
        weight = b if layout == "nt" else b.mT.contiguous().mT
        legacy.a_fused_m_grouped_bf16_gemm_nt_contiguous_tl(a, weight, d, (idx, rows))
    torch.cuda.synchronize()
    ok = (idx >= 0) & (rows >= 0)
    ref = _m_grouped_reference(a[torch.where(ok, rows, 0).long()], b, torch.where(ok, idx, -1))
    assert not torch.isnan(d).any() and (d[~ok] == 0).all()
    assert calc_diff(d, ref) < 1e-5


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("fused", ["a", "b"])
@pytest.mark.parametrize("acc", [False, True])
def test_gpu_fused_k_grouped(legacy, untuned, fused, acc):
    torch.manual_seed(5)
    m, n, tokens = 2112, 1536, 3000
    ks = [256, 0, 384, 1000, 7]
    starts = [sum(ks[:i]) for i in range(len(ks))]
    positions = sum(ks)
    k_idx = torch.randint(0, tokens, (positions,), dtype=torch.int32, device="cuda")
    k_idx[::9] = -1                                           # padding positions contribute nothing
    k_start = torch.tensor(starts, dtype=torch.int32, device="cuda")
    k_end = torch.tensor([s + kg for s, kg in zip(starts, ks)], dtype=torch.int32, device="cuda")
    src = torch.randn(tokens, m if fused == "a" else n, dtype=torch.bfloat16, device="cuda")
    plain = torch.randn(positions, n if fused == "a" else m, dtype=torch.bfloat16, device="cuda")
    a, b = (src, plain) if fused == "a" else (plain, src)
    d0 = torch.randn(len(ks), m, n, device="cuda")
    d = d0.clone() if acc else torch.full_like(d0, float("nan"))
    ok = k_idx >= 0
    gathered = src[torch.where(ok, k_idx, 0).long()].float() * ok[:, None]
    ref = d0.clone() if acc else torch.zeros_like(d0)
    for g, (s, kg) in enumerate(zip(starts, ks)):
        lhs = gathered[s:s + kg] if fused == "a" else plain[s:s + kg].float()
        rhs = plain[s:s + kg].float() if fused == "a" else gathered[s:s + kg]
        ref[g] += lhs.T @ rhs
    getattr(legacy, AKG if fused == "a" else BKG)(a, b, d, (k_idx, k_start, k_end), acc)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert calc_diff(d, ref) < 1e-5


_GPU_FIRST_CALL = textwrap.dedent("""
    import torch, deep_gemm.legacy as L
    a = torch.randn(256, 192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(2, 160, 192, dtype=torch.bfloat16, device="cuda")
    d = torch.empty(256, 160, dtype=torch.bfloat16, device="cuda")
    idx = torch.arange(256, device="cuda", dtype=torch.int32) // 128
    cfg = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4, "num_stages": 3}
    L.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx, _config=cfg)
    torch.cuda.synchronize()
    print("ok")
""")


@pytest.mark.gpu
@requires_cuda
def test_gpu_triton_cache_dir_and_compile_log(tmp_path):
    """Fresh processes on the GPU: the first compile goes to $DG_JIT_CACHE_DIR/triton and is logged as a miss,
    the next process logs a hit; with TRITON_CACHE_DIR set, Triton's directory is used instead."""
    env = _deep_gemm_env(DG_JIT_CACHE_DIR=str(tmp_path / "dg"), DG_JIT_DEBUG="1")
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _GPU_FIRST_CALL], capture_output=True, text=True, env=env,
                              cwd=str(REPO), timeout=600)
        assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
        runs.append(proc.stderr)
    assert "legacy Triton kernel m_grouped_tma_kernel" in runs[0] and "compiled (cache miss)" in runs[0], runs[0]
    assert "BLOCK_M=64" in runs[0] and "num_warps=4" in runs[0], runs[0]
    assert "loaded from Triton's cache (hit)" in runs[1] and "cache miss" not in runs[1], runs[1]
    assert any((tmp_path / "dg" / "triton").rglob("*.cubin"))

    env["TRITON_CACHE_DIR"] = str(tmp_path / "own")
    env["DG_JIT_CACHE_DIR"] = str(tmp_path / "dg2")
    proc = subprocess.run([sys.executable, "-c", _GPU_FIRST_CALL], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert any((tmp_path / "own").rglob("*.cubin")) and not (tmp_path / "dg2" / "triton").exists()


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("variant", ["pointer_kernel", "d_rows_unaligned", "tma_fixed_config"])
def test_gpu_m_grouped_kernel_variants(legacy, variant):
    """The pointer kernel (taken when TMA cannot be), the TMA kernel storing D through pointers (rows of d
    not 16-byte aligned), and the TMA kernel at a fixed config; groups straddle tiles in part."""
    torch.manual_seed(6)
    idx = torch.cat([_moe_layout([300, 0, 513]), _moe_layout([50, 40], align=1)])
    idx[-90:] = torch.where(idx[-90:] >= 0, idx[-90:] + 1, idx[-90:])     # groups 1 and 2, unaligned
    m, n, k, g = idx.shape[0], 999 if variant == "d_rows_unaligned" else 1000, 1800, 3
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(g, n, k, dtype=torch.bfloat16, device="cuda")
    d = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    config = {"pointer_kernel": {"TMA": False}, "d_rows_unaligned": None,
              "tma_fixed_config": {"TMA": True, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                                   "num_warps": 8, "num_stages": 4}}[variant]
    legacy.m_grouped_bf16_gemm_nt_contiguous_tl(a, b, d, idx, _config=config)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any() and (d[idx < 0] == 0).all()
    assert calc_diff(d, _m_grouped_reference(a, b, idx)) < 1e-5
