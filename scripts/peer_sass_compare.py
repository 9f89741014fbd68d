"""Puts the SASS of DeepGEMM v2.6.1's SM90 FP8 kernel (the peer) beside ours for one tile, on the CPU.

Both kernels are templates: the peer's is instantiated for the tile from a small generated .cu (its template
arguments in the order its host prints them) and compiled with its own flags; ours is planned by the op under
a forced config (DG_FP8_GEMM_CONFIG / DG_FP8_1D1D_GEMM_CONFIG) and built through the JIT. For each side:
registers, spills, stack, and the instruction mix of the whole kernel and of its hot loop (the innermost
backward branch whose body issues the tensor-core instructions), side by side.

    python3 scripts/peer_sass_compare.py --op dense --shape 4096,2112,7168 --tile 128,192,4 --multicast b
    python3 scripts/peer_sass_compare.py --op contiguous --shape 34304,4096,4096 --groups 4 --tile 128,192,4 \\
        --multicast b --dump /tmp/cmp                                           # also writes both .sass files
    python3 scripts/peer_sass_compare.py --op k_grouped --shape 7168,2048,16384 --groups 4 --tile 128,128,6

--peer takes DeepGEMM's source tarball (default: .peers/deepgemm-*.tar.xz, the folder git ignores that
scripts/gpu_check.sh builds the peer from) or an extracted source folder.
Needs the extension built (PYTHONPATH=repo root), nvcc and a cuobjdump of CUDA 13 (the same one the tests use).
docs/performance.md ("Comparing a kernel with DeepGEMM's") says where it fits; docs/kernels/ read its results.
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# op -> (our op name, the peer's GemmType, the peer's kernel, the dims the peer compiles in)
OPS = {
    'dense': ('fp8_gemm_nt', 'GemmType::Normal', '1d2d', 'nk'),
    'contiguous': ('m_grouped_fp8_gemm_nt_contiguous', 'GemmType::MGroupedContiguous', '1d2d', 'nk'),
    'psum': ('m_grouped_fp8_gemm_nt_contiguous', 'GemmType::MGroupedContiguousWithPsumLayout', '1d2d', 'nk'),
    'masked': ('m_grouped_fp8_gemm_nt_masked', 'GemmType::MGroupedMasked', '1d2d', 'nk'),
    'dense_1d1d': ('fp8_gemm_nt', 'GemmType::Normal', '1d1d', 'nk'),
    'k_grouped': ('k_grouped_fp8_gemm_nt_contiguous', 'GemmType::KGroupedContiguous', '1d1d', 'mn'),
}

# Opcode families worth a column (prefix match on the SASS opcode, modifiers stripped).
FAMILIES = ['QGMMA', 'HGMMA', 'WARPGROUP', 'FFMA', 'FMUL', 'FADD', 'LDS', 'LDSM', 'LDG', 'STS', 'STSM', 'STG',
            'UTMALDG', 'UTMASTG', 'UTMAREDG', 'UTMACCTL', 'UBLKCP', 'SYNCS', 'BAR', 'R2UR', 'MOV', 'SHFL', 'BRA',
            'ISETP', 'SEL', 'FSEL', 'IMAD', 'IADD3', 'LDL', 'STL', 'CCTL', 'UCGABAR', 'ELECT', 'WARPSYNC', 'NOP']


def default_peer():
    """The peer's tarball in .peers/ (ignored by git; scripts/gpu_check.sh builds the peer from the same folder)."""
    found = sorted(glob.glob(os.path.join(ROOT, '.peers', 'deepgemm-*.tar.xz')))
    return found[-1] if found else ''


def swizzle(nbytes):
    """The peer's swizzle rule: the widest of 128/64/32/16 bytes dividing the block's inner bytes."""
    return next(mode for mode in (128, 64, 32, 16) if nbytes % mode == 0)


def peer_source(args, gemm_type, kernel, dims):
    m, n, k = args.shape
    bm, bn, stages = args.tile
    shape = [d if axis in dims else 0 for axis, d in zip('mnk', (m, n, k))]
    math_threads = 128 if bm <= 64 else 256
    cluster = 2 if args.multicast != 'none' else 1
    on_a = 'true' if args.multicast == 'a' else 'false'
    groups = args.groups if gemm_type != 'GemmType::Normal' else 1
    if kernel == '1d2d':
        targs = ['cute::UMMA::Major::K', *shape, groups, bm, bn, 128, swizzle(128), swizzle(128), swizzle(bn * 2),
                 stages, 128, math_threads, cluster, on_a, args.num_sms, gemm_type, 'cutlass::bfloat16_t',
                 'epilogue::transform::EpilogueIdentity']
    else:
        targs = [*shape, groups, bm, bn, 128, swizzle(128), swizzle(128), stages, 128, math_threads, cluster, on_a,
                 args.num_sms, gemm_type, 'float']
    return (f'#include <deep_gemm/impls/sm90_fp8_gemm_{kernel}.cuh>\nusing namespace deep_gemm;\n'
            f'static void instantiate() {{\n'
            f'    auto ptr = reinterpret_cast<void*>(&sm90_fp8_gemm_{kernel}_impl<\n        '
            + ', '.join(map(str, targs)) + '>);\n    (void)ptr;\n}\n')


def peer_tree(path, work):
    """The peer's source folder: `path` itself, or the tarball extracted under `work`."""
    if os.path.isdir(path):
        return path
    with tarfile.open(path) as t:
        t.extractall(work, filter='data')
    return glob.glob(os.path.join(work, 'DeepGEMM-*'))[0]


def build_peer(args, work, nvcc, cuobjdump):
    """The SASS of the peer's kernel for this tile, compiled with the peer's own flags."""
    _, gemm_type, kernel, dims = OPS[args.op]
    src = peer_tree(args.peer, work)
    cu = os.path.join(work, 'peer.cu')
    with open(cu, 'w') as f:
        f.write(peer_source(args, gemm_type, kernel, dims))
    cubin = os.path.join(work, 'peer.cubin')
    cmd = [nvcc, '-std=c++20', '--gpu-architecture=sm_90a', '-cubin', '-O3', '--expt-relaxed-constexpr',
           '--expt-extended-lambda', '--ptxas-options=--register-usage-level=10',
           '-I', os.path.join(src, 'deep_gemm', 'include'),
           '-I', os.path.join(src, 'third-party', 'cutlass', 'include'),
           cu, '-o', cubin]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f'the peer kernel did not compile:\n{out.stderr[-3000:]}')
    return subprocess.run([cuobjdump, '-sass', '-res-usage', cubin], capture_output=True, text=True, check=True).stdout


def our_config_var(args):
    """Our forced-config variable and value for the tile."""
    bm, bn, stages = args.tile
    if OPS[args.op][2] == '1d1d':
        # block_m,block_n,stages,group_n,pipelined,multicast (B shared only)
        return 'DG_FP8_1D1D_GEMM_CONFIG', f'{bm},{bn},{stages},0,{args.pipelined},{int(args.multicast == "b")}'
    multicast = {'none': 0, 'b': 1, 'a': 2}[args.multicast]
    return 'DG_FP8_GEMM_CONFIG', f'{bm},{bn},{stages},{args.pipelined},{multicast}'


def build_ours(args, work, cuobjdump):
    """(sass, symbol, setting) of our kernel for this tile, planned by the op under the forced config."""
    var, value = our_config_var(args)
    os.environ[var] = value
    os.environ.setdefault('DG_JIT_CACHE_DIR', os.path.join(work, 'cache'))
    sys.path.insert(0, ROOT)
    from deep_gemm import _C
    _C.reload_settings()
    op, gemm_type, kernel, _ = OPS[args.op]
    m, n, k = args.shape
    kwargs = dict(num_groups=args.groups if gemm_type != 'GemmType::Normal' else 1, d_fp32=kernel == '1d1d',
                  with_c=kernel == '1d1d', expected_m=m // max(args.groups, 1) if args.op == 'masked' else 0)
    if kernel == '1d1d':
        kwargs['recipe'] = [1, 1, 128]
    if args.op == 'k_grouped':
        kwargs['ks'] = [k // args.groups] * args.groups
    if args.op == 'psum':
        kwargs['psum'] = True
    try:
        planned = _C._plan_gemm_call(op, m, n, k, **kwargs)
    except (RuntimeError, ValueError) as e:   # a tile our kernel does not take: the planner's message
        sys.exit(f'ours cannot plan this tile: {e}')
    name, symbol, code = planned[-1]   # a planned call's last kernel is the GEMM (earlier ones: layout helpers)
    entry = _C.build_source(name, symbol, code, 'sm_90a')
    cubin = glob.glob(os.path.join(entry['dir'], '*.cubin'))[0]
    sass = subprocess.run([cuobjdump, '-sass', '-res-usage', cubin], capture_output=True, text=True, check=True).stdout
    return sass, symbol, f'{var}={value}'


def find_cuobjdump():
    """DG_JIT_CUOBJDUMP, else cuobjdump on PATH, else the one of the nvidia-cuda-cuobjdump wheel."""
    found = os.environ.get('DG_JIT_CUOBJDUMP') or shutil.which('cuobjdump')
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    hits = [h for base in nvidia.__path__ for h in glob.glob(os.path.join(base, '*', 'bin', 'cuobjdump'))]
    return hits[0] if hits else None


def instructions(sass):
    """[(address, opcode family, full opcode, text)] of a cuobjdump SASS listing."""
    rows = []
    for line in sass.splitlines():
        match = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);', line)
        if match:
            addr, opcode, rest = int(match.group(1), 16), match.group(2), match.group(3)
            rows.append((addr, opcode.split('.')[0], opcode, line.strip()))
    return rows


def hot_loop(rows):
    """The instructions of the main K loop. Candidates: the ranges of backward branches that issue tensor-core
    MMAs and hold neither producer copies nor an exit (that leaves the math loops; the out-of-line retry paths
    of barrier waits jump back from past the producer). Of the innermost candidates (containing no other), the
    one with the most MMAs (an unrolled K loop), the smallest on a tie."""
    ranges = []
    for addr, family, _, text in rows:
        target = re.search(r'0x([0-9a-f]+)\s*;', text) if family == 'BRA' else None
        dest = int(target.group(1), 16) if target else None
        if dest is None or dest >= addr:
            continue
        families = collections.Counter(r[1] for r in rows if dest <= r[0] <= addr)
        if (families['QGMMA'] or families['HGMMA']) and not families['UTMALDG'] and not families['EXIT']:
            ranges.append((dest, addr, families['QGMMA'] + families['HGMMA']))
    inner = [r for r in ranges if not any(o != r and r[0] <= o[0] and o[1] <= r[1] for o in ranges)]
    if not inner:
        return []
    lo, hi, _ = max(inner, key=lambda r: (r[2], r[0] - r[1]))
    return [r for r in rows if lo <= r[0] <= hi]


def per_k_block(counts, mmas_per_k_block=4):
    """Counts scaled to one K block of one 64-row wave (4 MMAs of K 32): loops unrolled differently compare."""
    mmas = counts.get('QGMMA', 0) + counts.get('HGMMA', 0)
    return {k: round(v * mmas_per_k_block / mmas, 1) if mmas else v for k, v in counts.items()}


def resolve_labels(sass):
    """cuobjdump prints branch targets as `(.L_x_N) with the label's address on its own line: turn them into
    addresses so that hot_loop() can find backward branches."""
    labels = {}
    pending = []
    for line in sass.splitlines():
        m = re.match(r'\.L_x_(\d+):', line.strip())
        if m:
            pending.append(m.group(1))
            continue
        a = re.match(r'\s*/\*([0-9a-f]{4,})\*/', line)
        if a and pending:
            for p in pending:
                labels[p] = a.group(1)
            pending = []
    return re.sub(r'`\(\.L_x_(\d+)\)', lambda m: '0x' + labels.get(m.group(1), 'ffffffff'), sass)


def resources(sass):
    """Registers, stack, local (spill) and static shared bytes of the kernel (cuobjdump -res-usage)."""
    m = re.search(r'REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)', sass)
    return dict(zip(('registers', 'stack', 'static shared', 'local'), m.groups())) if m else {'registers': '?'}


def mix(rows):
    counts = collections.Counter(r[1] for r in rows)
    return {f: counts.get(f, 0) for f in FAMILIES} | {'total': len(rows)}


def table(ours, peer):
    lines = ['| | ours | peer |', '|---|---|---|']
    for key in ours:
        if ours[key] or peer.get(key):
            lines.append(f'| {key} | {ours[key]} | {peer.get(key, 0)} |')
    return '\n'.join(lines)


def variants(rows, families=('WARPGROUP', 'SYNCS', 'BAR', 'UTMALDG', 'UTMASTG')):
    """The distinct full opcodes of a few families (e.g. WARPGROUP.DEPBAR.LE gsb0 waits, mbarrier forms)."""
    seen = collections.Counter(r[2] + ' ' + ' '.join(re.findall(r'gsb\d|0x[0-9a-f]+\s*;', r[3])[:1])
                               for r in rows if r[1] in families)
    return '\n'.join(f'  {n:4d} x {op}' for op, n in sorted(seen.items()))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--op', choices=sorted(OPS), required=True)
    p.add_argument('--shape', required=True, help='M,N,K (grouped: M = rows of all groups; k_grouped: K = sum K)')
    p.add_argument('--groups', type=int, default=1)
    p.add_argument('--tile', required=True, help='BLOCK_M,BLOCK_N,stages')
    p.add_argument('--multicast', choices=('none', 'a', 'b'), default='none',
                   help='2-CTA cluster sharing A or B (both sides)')
    p.add_argument('--pipelined', type=int, default=0, choices=(0, 1), help='ours only: the pipelined promotion')
    p.add_argument('--num-sms', type=int, default=132)
    p.add_argument('--peer', default=default_peer(), help="the peer's tarball or extracted source folder (default: "
                   ".peers/deepgemm-*.tar.xz)")
    p.add_argument('--dump', help='write peer.sass, ours.sass and the generated sources into this folder')
    args = p.parse_args(argv)
    args.shape = [int(x) for x in args.shape.split(',')]
    args.tile = [int(x) for x in args.tile.split(',')]
    if len(args.shape) != 3 or len(args.tile) != 3:
        p.error('--shape takes M,N,K and --tile BLOCK_M,BLOCK_N,stages')
    if not args.peer:
        p.error('--peer: no .peers/deepgemm-*.tar.xz; name the tarball or a source folder')
    nvcc = os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'), 'bin', 'nvcc')
    cuobjdump = find_cuobjdump()
    if not cuobjdump:
        p.error('no cuobjdump: set DG_JIT_CUOBJDUMP, put one on PATH or pip install nvidia-cuda-cuobjdump==13.*')
    with tempfile.TemporaryDirectory() as work:
        peer_sass = build_peer(args, work, nvcc, cuobjdump)
        our_sass, symbol, setting = build_ours(args, work, cuobjdump)
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for name, text in (('peer.sass', peer_sass), ('ours.sass', our_sass)):
            with open(os.path.join(args.dump, name), 'w') as f:
                f.write(text)
    sides = {}
    for side, sass in (('ours', our_sass), ('peer', peer_sass)):
        rows = instructions(resolve_labels(sass))
        sides[side] = dict(rows=rows, loop=hot_loop(rows), res=resources(sass))
    print(f'# {args.op} {"x".join(map(str, args.shape))} groups={args.groups} tile {"x".join(map(str, args.tile))} '
          f'multicast={args.multicast}\nours: {symbol} ({setting})\n')
    print('## Resources\n' + table(sides['ours']['res'], sides['peer']['res']))
    print('\n## Whole kernel\n' + table(mix(sides['ours']['rows']), mix(sides['peer']['rows'])))
    print('\n## Main K loop, per K block of one 64-row wave (counts x 4 / MMAs)\n'
          + table(per_k_block(mix(sides['ours']['loop'])), per_k_block(mix(sides['peer']['loop']))))
    for side in ('ours', 'peer'):
        print(f'\n## {side}: waits, barriers and copies in the hot loop\n' + variants(sides[side]['loop']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
