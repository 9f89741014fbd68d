#!/usr/bin/env bash
# Same-run A/B of kernel headers: a benchmark with the JIT reading headers from each OLD include tree, then from
# the package, in turns (old..., new, old..., new) so that clock and power drift hit every side; each side has
# its own JIT cache. An OLD tree is the include tree of a commit to compare against, made before the device
# call (its copy has no .git); several are given comma-separated:
#     mkdir -p scratch/old && git archive <commit> deep_gemm/include | tar -x -C scratch/old
#     benchmarks/ab_headers.sh scratch/old/deep_gemm/include[,scratch/old2/deep_gemm/include] [SHAPES] [CONFIGS]
# The benchmark is the FP8 config sweep (benchmarks/sweep_fp8_configs.py, --runs 20) on SHAPES with CONFIGS, or
# AB_SCRIPT, any benchmark command line (script and arguments), e.g.
#     AB_SCRIPT="benchmarks/bench_fp8_grouped.py --runs 6 --config 128,192,0,0,0" benchmarks/ab_headers.sh OLD
# AB_ROUNDS turns (default 2). Log: $OUT/ab.log (or ./ab.log); printed at the end: its lines matching AB_GREP
# (default: the sweep's geomean lines; e.g. AB_GREP='contiguous|masked|DG_FP8' for the grouped benchmark).
set -uo pipefail
cd "$(dirname "$0")/.."
IFS=, read -ra old_includes <<<"$1"
shapes="${2:-4096x7168x16384,4096x4096x7168,4096x7168x2048,4096x24576x1536,4096x32768x512,4096x2112x7168}"
configs="${3:-default}"
log="${OUT:-.}/ab.log"
sides=()
for i in "${!old_includes[@]}"; do sides+=("old$((i + 1))"); done
sides+=(new)
for ((round = 1; round <= ${AB_ROUNDS:-2}; ++round)); do
    for i in "${!sides[@]}"; do
        side="${sides[i]}"
        include=-
        [ "$side" != new ] && include="${old_includes[i]}"
        echo "=== $side ($include) round $round" >>"$log"
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
grep -E "^=== |^rc=|${AB_GREP:-geomean}" "$log"
