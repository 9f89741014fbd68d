#!/usr/bin/env bash
# Same-run A/B of two whole source trees (host code and headers), for changes ab_headers.sh cannot compare (the
# host's shared-memory formula, kernel arguments): builds BASE_TREE's extension in place, then alternates the FP8
# config sweep (--runs 20) between BASE_TREE and this tree (base, new, base, new), each with its own JIT cache
# and its own configs. BASE_TREE is the tree of the commit to compare against, made before the device call, and
# this tree's extension must be built in place too (a `pip install -e .` would shadow BASE_TREE's package):
#     mkdir -p scratch/base && git archive <commit> | tar -x -C scratch/base
#     python3 setup.py build_ext --inplace && benchmarks/ab_trees.sh scratch/base SHAPES "CONFIGS_BASE" "CONFIGS_NEW"
# Log: $OUT/ab_trees.log (or ./ab_trees.log); each side's log starts with the deep_gemm package it imported.
set -uo pipefail
cd "$(dirname "$0")/.."
base="$1"; shapes="$2"; configs_base="$3"; configs_new="$4"
log="${OUT:-$PWD}/ab_trees.log"
(cd "$base" && CXX=${CXX:-g++} MAX_JOBS=${MAX_JOBS:-16} python3 setup.py build_ext --inplace -q >"$log.build" 2>&1)
echo "base build: rc=$?" >>"$log"
for round in 1 2; do
    for side in base new; do
        root=.; configs="$configs_new"
        [ "$side" = base ] && root="$base" && configs="$configs_base"
        echo "=== $side round $round" >>"$log"
        (cd "$root" && export PYTHONPATH=$PWD DG_JIT_CACHE_DIR="/tmp/dg_ab_trees_$side" DG_JIT_USE_NVRTC=1 &&
            python3 -c "import deep_gemm; print(deep_gemm.__file__)" &&
            timeout 300 python3 benchmarks/sweep_fp8_configs.py --no-edges --runs 20 --budget 250 --configs "$configs" \
                --shapes "$shapes") >>"$log" 2>&1
    done
done
grep -E "^=== |^[0-9]+x[0-9]+x[0-9]+:" "$log"
