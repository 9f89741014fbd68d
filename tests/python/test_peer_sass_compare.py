"""scripts/peer_sass_compare.py, the CPU-side comparison of our FP8 kernel's SASS with DeepGEMM's for one tile:
its SASS reading (the main K loop, per-K-block counts) on a made-up listing, and one real comparison when the
peer's tarball (.peers/), nvcc and a cuobjdump are here."""
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import peer_sass_compare as cmp  # noqa: E402

# A math tile loop (0x0010-0x00f0) with peeled first and last K blocks (0x0020, 0x00a0) around a K loop (0x0030-0x0090)
# unrolled twice, an epilogue store; then the producer's copies (0x00f8) and an out-of-line wait retry (0x0100)
# that jumps back into the middle of the K loop. The tile loop has more MMAs than the K loop, but is not innermost.
LISTING = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   IMAD R2, R3, R4, RZ ;
        /*0020*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT ;
        /*0028*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
.L_x_1:
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x100], R5 ;
.L_x_2:
        /*0040*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT ;
        /*0050*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*0060*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0070*/                   FFMA R10, R24, R11, R10 ;
        /*0080*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT ;
        /*0085*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*0090*/              @!P1 BRA `(.L_x_1) ;
        /*00a0*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT ;
        /*00a8*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*00b0*/                   STSM.16.M88.4 [R5], R8 ;
        /*00f0*/              @!P2 BRA `(.L_x_0) ;
        /*00f8*/                   UTMALDG.3D [UR8], [UR10] ;
        /*0100*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x100], R5 ;
        /*0110*/              @!P0 BRA `(.L_x_2) ;
        /*0120*/                   EXIT ;
"""


def test_main_loop_is_the_innermost_mma_loop():
    rows = cmp.instructions(cmp.resolve_labels(LISTING))
    loop = cmp.hot_loop(rows)
    assert [r[0] for r in loop] == [0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x85, 0x90]
    counts = cmp.mix(loop)
    assert counts['QGMMA'] == 4 and counts['FFMA'] == 1 and counts['STSM'] == 0
    # Per K block of one wave (4 MMAs): this loop holds one.
    assert cmp.per_k_block(counts)['SYNCS'] == 1.0


def test_per_k_block_scales_unrolled_loops():
    assert cmp.per_k_block({'QGMMA': 32, 'FFMA': 768, 'total': 1100}) == {'QGMMA': 4.0, 'FFMA': 96.0, 'total': 137.5}


def test_resources_read_from_res_usage():
    text = 'Function foo:\n REG:168 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:1024 TEXTURE:0\n'
    assert cmp.resources(text) == {'registers': '168', 'stack': '0', 'static shared': '1024', 'local': '0'}


def test_peer_template_arguments_follow_its_host():
    import argparse
    args = argparse.Namespace(op='contiguous', shape=[34304, 4096, 4096], tile=[128, 192, 4], multicast='b',
                              groups=4, num_sms=132)
    src = cmp.peer_source(args, 'GemmType::MGroupedContiguous', '1d2d', 'nk')
    # Major SFB, M not compiled, N and K compiled, groups, tile, swizzles (D: 192 BF16 = 384 bytes -> 128),
    # stages, threads, a 2-CTA cluster sharing B, SMs, type, D dtype, epilogue.
    assert ('cute::UMMA::Major::K, 0, 4096, 4096, 4, 128, 192, 128, 128, 128, 128, 4, 128, 256, 2, false, 132, '
            'GemmType::MGroupedContiguous, cutlass::bfloat16_t, epilogue::transform::EpilogueIdentity>') in src


def _tools_here():
    nvcc = os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'), 'bin', 'nvcc')
    return os.path.exists(nvcc) and cmp.find_cuobjdump() and cmp.default_peer()


@pytest.mark.skipif(not _tools_here(), reason='needs nvcc, a cuobjdump and the peer tarball in .peers/')
def test_dense_tile_side_by_side(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv('DG_JIT_CACHE_DIR', str(tmp_path / 'cache'))
    assert cmp.main(['--op', 'dense', '--shape', '4096,2112,7168', '--tile', '128,192,4', '--multicast', 'b',
                     '--dump', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # Both kernels: 168 registers, no local memory, 4 m64n192k32 FP8 MMAs per K block of a wave.
    assert '| registers | 168 | 168 |' in out and '| local | 0 | 0 |' in out
    loop = out.split('## Main K loop')[1]
    assert '| QGMMA | 4.0 | 4.0 |' in loop and '| FFMA | 96.0 | 96.0 |' in loop
    assert 'QGMMA.64x192x32' in (tmp_path / 'peer.sass').read_text()
    assert 'QGMMA.64x192x32' in (tmp_path / 'ours.sass').read_text()
