"""Many processes on one JIT cache, and one process on two GPUs.

The cache part needs one GPU: several processes start together on one empty DG_JIT_CACHE_DIR, each
compiles and runs the same kernels; every kernel must be compiled exactly once in total, every result
must be right, and no partial entry (tmp/ leftovers) may remain. The two-GPU part is skipped unless two
GPUs are visible. NVLink multicast stays off in every multi-GPU test (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1): it must not be used on the shared H200 hosts.
"""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import deep_gemm
from deep_gemm.testing import calc_diff
from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

pytestmark = pytest.mark.gpu

os.environ.setdefault('NCCL_NVLS_ENABLE', '0')
os.environ.setdefault('TORCH_SYMM_MEM_DISABLE_MULTICAST', '1')

# One rank: runs two FP8 GEMM shapes (and the scale-layout kernel they need), counts the compiles it
# did itself through the `deep_gemm` logger, and prints one RESULT line.
WORKER = textwrap.dedent('''
    import logging, sys
    import torch, deep_gemm
    from deep_gemm.testing import calc_diff
    from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

    compiles = []
    class Count(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith('compiling kernel'):
                compiles.append(record.getMessage())
    log = logging.getLogger('deep_gemm')
    log.addHandler(Count())
    log.setLevel(logging.INFO)

    torch.manual_seed(int(sys.argv[1]))
    worst = 0.0
    for m, n, k in [(100, 576, 512), (257, 2112, 1536)]:
        a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16)
        b = torch.randn(n, k, device='cuda', dtype=torch.bfloat16)
        d = torch.full((m, n), float('nan'), device='cuda', dtype=torch.bfloat16)
        deep_gemm.fp8_gemm_nt(per_token_cast_to_fp8(a), per_block_cast_to_fp8(b), d)
        worst = max(worst, calc_diff(d, a.float() @ b.float().t()))
    print(f'RESULT compiles={len(compiles)} diff={worst:.3e}', flush=True)
''')


def test_ranks_share_one_empty_cache(tmp_path, hopper):
    num_ranks = 4
    env = dict(os.environ, DG_JIT_CACHE_DIR=str(tmp_path / 'cache root'), CUDA_VISIBLE_DEVICES='0')
    ranks = [subprocess.Popen([sys.executable, '-c', WORKER, str(rank)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in range(num_ranks)]
    outputs = [rank.communicate(timeout=600)[0] for rank in ranks]
    total_compiles = 0
    for rank, out in zip(ranks, outputs):
        assert rank.returncode == 0, out
        result = [line for line in out.splitlines() if line.startswith('RESULT')]
        assert result, out
        fields = dict(item.split('=') for item in result[0].split()[1:])
        assert float(fields['diff']) < 1e-3, out
        total_compiles += int(fields['compiles'])

    entries = list((tmp_path / 'cache root' / 'cache').iterdir())
    assert all(e.name.startswith('kernel.') for e in entries), entries
    assert all((e / 'kernel.cubin').is_file() and (e / 'manifest').is_file() for e in entries), entries
    # Each kernel compiled once across all ranks: as many compiles as entries.
    assert total_compiles == len(entries) and len(entries) >= 2, (total_compiles, entries)
    leftovers = list((tmp_path / 'cache root' / 'tmp').iterdir()) if (tmp_path / 'cache root' / 'tmp').exists() else []
    assert leftovers == [], leftovers


def _fp8_case(m, n, k, device):
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
    d = torch.full((m, n), float('nan'), device=device, dtype=torch.bfloat16)
    return per_token_cast_to_fp8(a), per_block_cast_to_fp8(b), d, a.float() @ b.float().t()


two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason='needs 2 GPUs')


@two_gpus
def test_alternating_devices_whatever_the_current_device(hopper):
    for _ in range(3):
        for device, current in ((1, 0), (0, 1), (1, 1), (0, 0)):
            with torch.cuda.device(current):
                a, b, d, ref = _fp8_case(300, 2112, 1536, f'cuda:{device}')
                deep_gemm.fp8_gemm_nt(a, b, d)
                assert d.device.index == device
                assert calc_diff(d, ref) < 1e-3

                x = torch.randn(512, 256, device=f'cuda:{device}', dtype=torch.bfloat16)
                w = torch.randn(2, 384, 256, device=f'cuda:{device}', dtype=torch.bfloat16)
                layout = torch.cat([torch.zeros(256, dtype=torch.int32), torch.ones(256, dtype=torch.int32)]).to(x.device)
                out = torch.full((512, 384), float('nan'), device=x.device, dtype=torch.bfloat16)
                deep_gemm.m_grouped_bf16_gemm_nt_contiguous(x, w, out, layout)
                ref_g = torch.cat([x[:256].float() @ w[0].float().t(), x[256:].float() @ w[1].float().t()])
                assert calc_diff(out, ref_g) < 1e-5


@two_gpus
def test_mixed_devices_name_both(hopper):
    a, b, d, _ = _fp8_case(128, 256, 256, 'cuda:0')
    b1 = (b[0].to('cuda:1'), b[1].to('cuda:1'))
    with pytest.raises(RuntimeError, match=r'cuda:0.*cuda:1|cuda:1.*cuda:0'):
        deep_gemm.fp8_gemm_nt(a, b1, d)
