#!/usr/bin/env bash
# Per-shape config sweeps: each line of LIST is "MxNxK CONFIGS" (CONFIGS as sweep_fp8_configs.py --configs takes
# them, ';'-separated DG_FP8_GEMM_CONFIG values, 'default' = the config model), so every shape gets its own
# candidates (e.g. the model's tile with other group_n values). One process per shape, --runs 20; prints each
# shape's timing line. Usage: benchmarks/sweep_per_shape.sh LIST
#     128x4096x7168 default;64,64,13,1,0,1,0;64,64,13,1,0,8,0;default
set -uo pipefail
cd "$(dirname "$0")/.."
while read -r shape configs; do
    [ -n "$shape" ] || continue
    DG_JIT_USE_NVRTC=1 timeout 120 python3 benchmarks/sweep_fp8_configs.py --no-edges --runs 20 --budget 100 \
        --configs "$configs" --shapes "$shape" 2>&1 | grep -E "^[0-9]+x[0-9]+x[0-9]+:|BAD|HANG"
done <"$1"
