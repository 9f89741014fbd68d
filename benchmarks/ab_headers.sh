#!/usr/bin/env bash
# Same-run A/B of kernel headers: the FP8 config sweep (benchmarks/sweep_fp8_configs.py, --runs 20) with the JIT
# reading headers from OLD_INCLUDE, then from the package, alternating (old, new, old, new) so clock and power
# drift hit both; each side has its own JIT cache. OLD_INCLUDE is the include tree of the commit to compare
# against, made before the device call (its copy of the tree has no .git):
#     mkdir -p scratch/old && git archive <commit> deep_gemm/include | tar -x -C scratch/old
#     benchmarks/ab_headers.sh scratch/old/deep_gemm/include [SHAPES] [CONFIGS]
# AB_SCRIPT replaces the sweep by another benchmark command line (script and arguments), e.g.
#     AB_SCRIPT="benchmarks/bench_fp8_grouped.py --runs 6 --config 128,192,0,0,0" benchmarks/ab_headers.sh OLD
# Log: $OUT/ab.log (or ./ab.log).
set -uo pipefail
cd "$(dirname "$0")/.."
old_include="$1"
shapes="${2:-4096x7168x16384,4096x4096x7168,4096x7168x2048,4096x24576x1536,4096x32768x512,4096x2112x7168}"
configs="${3:-default}"
log="${OUT:-.}/ab.log"
for round in 1 2; do
    for side in old new; do
        include=-
        [ "$side" = old ] && include="$old_include"
        echo "=== $side round $round" >>"$log"
        if [ -n "${AB_SCRIPT:-}" ]; then
            DG_JIT_CACHE_DIR="/tmp/dg_ab_cache_$side" DG_JIT_USE_NVRTC=1 timeout 300 python3 benchmarks/with_include_dir.py \
                "$include" $AB_SCRIPT >>"$log" 2>&1
        else
            DG_JIT_CACHE_DIR="/tmp/dg_ab_cache_$side" DG_JIT_USE_NVRTC=1 timeout 300 python3 benchmarks/with_include_dir.py \
                "$include" benchmarks/sweep_fp8_configs.py --no-edges --runs 20 --budget 250 --configs "$configs" \
                --shapes "$shapes" >>"$log" 2>&1
        fi
        echo "rc=$?" >>"$log"
    done
done
grep -E "^=== |geomean" "$log"
