#!/usr/bin/env bash
# Everything that needs the H200, in one call: build the extension and the C++ GPU smoke programs, run the
# GPU tests, compute-sanitizer and the benchmarks. Logs go to $OUT (the device tool's folder) or
# ./gpu_logs. Usage: scripts/gpu_check.sh [build] [smoke] [test] [sanitize] [peer] [peer_tests] [vs_peer] [bench]
# [roofline] [host] [host_peer] [profile] [profile_grouped] [profile_bf16] [profile_full] [sweep_moe]
# (default: build smoke test sanitize bench). PYTEST_JOBS=N runs the GPU test files in N processes side by side.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_logs}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export HOME="${HOME:-/root}"
export PATH="/usr/local/cuda/bin:$PATH"
export DG_JIT_CACHE_DIR="${DG_JIT_CACHE_DIR:-/tmp/dg_cache}"
steps="${*:-build smoke test sanitize bench}"
has() { [[ " $steps " == *" $1 "* ]]; }
summary="$OUT/summary.txt"
note() { echo "$*" | tee -a "$summary"; }

note "== $(date -u) host: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1)"
note "python: $(python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))' 2>&1)"

if has build; then
    t0=$(date +%s)
    CXX=/usr/bin/g++ MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1
    note "build extension: rc=$? in $(( $(date +%s) - t0 )) s"
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >>"$OUT/build.log" 2>&1 &&
        cmake --build build -j16 --target dg_gpu_smoke dg_gpu_smoke_runtime dg_host_breakdown dg_kernel_sources >>"$OUT/build.log" 2>&1
    note "build smoke programs: rc=$?"
fi

if has smoke; then
    # Whole JIT path on a trivial kernel: both loaders x both compilers, cold then warm cache.
    for prog in dg_gpu_smoke dg_gpu_smoke_runtime; do
        for nvrtc in 0 1; do
            cache=$(mktemp -d /tmp/dg_smoke.XXXX)
            for run in cold warm; do
                DG_JIT_USE_NVRTC=$nvrtc DG_JIT_CACHE_DIR="$cache" ./build/"$prog" >>"$OUT/smoke.log" 2>&1
                note "$prog nvrtc=$nvrtc ($run cache): rc=$? $(tail -1 "$OUT/smoke.log")"
            done
        done
    done
fi

if has test; then
    # PYTEST_ARGS narrows the run (files or node ids); by default every GPU test. PYTEST_JOBS=N splits the
    # GPU test functions (all parametrizations of one function stay together: they share kernels) round-robin
    # over N pytest processes side by side (they share the JIT cache; the GPU is mostly idle in tests). Split
    # by file instead, one process got all ~170 compiles of test_fp8_gemm_1d2d_gpu.py and ran out of time.
    jobs="${PYTEST_JOBS:-1}"
    files=(${PYTEST_ARGS:-$(ls tests/python/test_*.py)})
    if ((jobs > 1)); then
        mapfile -t files < <(python3 -m pytest --collect-only -q -m gpu -p no:cacheprovider "${files[@]}" 2>/dev/null |
            grep '::' | sed 's/\[.*//' | awk '!seen[$0]++')
        note "pytest gpu: ${#files[@]} test functions over $jobs processes"
    fi
    for ((j = 0; j < jobs; ++j)); do
        part=()
        for ((i = j; i < ${#files[@]}; i += jobs)); do part+=("${files[i]}"); done
        ((${#part[@]})) || continue
        printf '%s\n' "${part[@]}" >"$OUT/pytest_gpu_$j.functions"   # to rerun one process's share
        (env ${TEST_ENV:-} timeout "${PYTEST_TIMEOUT:-400}" python3 -m pytest "${part[@]}" -m gpu -ra -q --durations=8 \
            -p no:cacheprovider >"$OUT/pytest_gpu_$j.log" 2>&1; echo "rc=$?" >>"$OUT/pytest_gpu_$j.log") &
    done
    wait
    for ((j = 0; j < jobs; ++j)); do
        [ -f "$OUT/pytest_gpu_$j.log" ] || continue
        note "pytest gpu [$j]: $(tail -1 "$OUT/pytest_gpu_$j.log") $(tail -2 "$OUT/pytest_gpu_$j.log" | head -1)"
    done
fi

if has sanitize; then
    # Without PyTorch's caching allocator every tensor is an allocation of its own, so memcheck can see an
    # access past a tensor's end (inside one of the allocator's cached blocks it cannot). SAN_OPTS: more
    # compute-sanitizer options.
    for tool in ${SAN_TOOLS:-memcheck racecheck}; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${SAN_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
            ${SAN_OPTS:-} python3 scripts/sanitize_cases.py ${SAN_CASES:-} >>"$OUT/sanitizer.log" 2>&1
        note "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)"
    done
fi

# DeepGEMM v2.6.1 (the peer), built from .peers/ (carried with the checkout; ignored by git), for the
# same-run comparisons below. PEER_SRC names an already built peer instead.
PEER_SRC="${PEER_SRC:-/tmp/deepgemm-peer/DeepGEMM-v2.6.1}"
if has peer; then
    t0=$(date +%s)
    # The system compiler for compiling AND linking: the host's default toolchain (/opt/gcc, which Python's
    # sysconfig may name for the link) gave extensions that crashed in std::regex / std::locale.
    CC=/usr/bin/gcc CXX=/usr/bin/g++ LDSHARED="/usr/bin/g++ -shared" \
        bash .peers/build_deepgemm.sh "$(dirname "$PEER_SRC")" >"$OUT/peer_build.log" 2>&1
    note "peer build: rc=$? in $(( $(date +%s) - t0 )) s ($PEER_SRC)"
    cp "$(dirname "$PEER_SRC")/build.log" "$OUT/peer_build_full.log" 2>/dev/null
    python3 -c 'import sysconfig as s; print("python sysconfig: CC", s.get_config_var("CC"), "| LDSHARED", s.get_config_var("LDSHARED"))' >>"$OUT/peer_build.log"
    # The peer crashed on its first call on an H200 host (SIGSEGV in std::regex, benchmarks/log/performance_2026-12-05.md): probe
    # std::regex on this host and take a native backtrace of one peer call.
    bash scripts/peer_probe/run.sh "$PEER_SRC" >"$OUT/peer_probe.log" 2>&1
    note "peer probe: $(grep -E 'standalone|after torch|no torch|peer smoke|max abs' "$OUT/peer_probe.log" | tr '\n' ';')"
fi

if has peer_tests; then
    # The peer's own test modules against our deep_gemm, each test function pass / fail / harness.
    DG_MQA_NUM_CASES="${DG_MQA_NUM_CASES:-6}" timeout "${PEER_TESTS_TIMEOUT:-500}" \
        python3 scripts/run_peer_tests.py "$PEER_SRC/tests" ${PEER_TEST_MODULES:-} >"$OUT/peer_tests.log" 2>&1
    note "peer tests: rc=$? $(grep -cE ': pass \(' "$OUT/peer_tests.log") pass, $(grep -cE ': fail \(' "$OUT/peer_tests.log") fail, $(grep -cE ': harness \(' "$OUT/peer_tests.log") harness"
    grep -E ': (pass|fail|harness) \(' "$OUT/peer_tests.log" | tee -a "$summary"
fi

if has vs_peer; then
    # Ours and the peer in turns, two rounds, identical inputs (benchmarks/bench_vs_peer.py; VS_PEER_VARIANTS:
    # ours also under each 'VAR=value;...' setting, e.g. forced configs); then the
    # new ops' scripts, each with the same turns (--impl ours / --impl peer).
    timeout "${VS_PEER_TIMEOUT:-500}" python3 benchmarks/bench_vs_peer.py --peer-path "$PEER_SRC" \
        ${VS_PEER_FAMILIES:+--families $VS_PEER_FAMILIES} ${VS_PEER_ROUNDS:+--rounds $VS_PEER_ROUNDS} \
        ${VS_PEER_VARIANTS:+--ours-variants "$VS_PEER_VARIANTS"} --json "$OUT/vs_peer.json" \
        $(python3 -c 'import matplotlib' 2>/dev/null && echo "--plot $OUT/vs_peer.png") >"$OUT/vs_peer.md" 2>"$OUT/vs_peer.err"
    note "bench_vs_peer: rc=$?"
    cat "$OUT/vs_peer.md"
    for b in ${VS_PEER_OPS:-}; do
        for round in 1 2; do
            for impl in ours peer; do
                echo "=== $b --impl $impl (round $round)" >>"$OUT/vs_peer_ops.log"
                env $([ "$impl" = peer ] && echo "PYTHONPATH=$PEER_SRC") DG_JIT_CACHE_DIR="/tmp/dg_vs_$impl" \
                    timeout "${BENCH_TIMEOUT:-300}" python3 "$b" --impl "$impl" >>"$OUT/vs_peer_ops.log" 2>&1
                note "$b --impl $impl round $round: rc=$?"
            done
        done
    done
fi

if has sweep_moe; then
    # The MoE GEMMs' forced-config variants, each timed in the same turns as the default and the peer, one round
    # each. SWEEP_FAMILIES picks the sweeps (default: contiguous 1d1d masked; also dense = FP8 dense M=4096's
    # DeepGEMM picks); SWEEP_CONTIGUOUS / SWEEP_1D1D / SWEEP_MASKED / SWEEP_DENSE replace a sweep's variants.
    declare -A sweep_fam=([contiguous]=fp8_contiguous [1d1d]=fp8_k_grouped,fp8_1d1d [masked]=fp8_masked [dense]=fp8_dense)
    declare -A sweep_var=(
        [contiguous]="${SWEEP_CONTIGUOUS:-DG_FP8_GEMM_CONFIG=128,192,4,0,1;DG_FP8_GEMM_CONFIG=128,128,5,1,1;DG_FP8_GEMM_CONFIG=128,192,4,0,2;DG_FP8_GEMM_CONFIG=256,128,0,0,2;DG_FP8_GEMM_CONFIG=128,128,5,1,0,16}"
        [1d1d]="${SWEEP_1D1D:-DG_FP8_1D1D_GEMM_CONFIG=128,128,0,0,1;DG_FP8_1D1D_GEMM_CONFIG=128,128,0,0,0,1;DG_FP8_1D1D_GEMM_CONFIG=128,128,0,0,1,1;DG_FP8_1D1D_GEMM_CONFIG=128,160,0,0,0,1;DG_FP8_1D1D_GEMM_CONFIG=128,160;DG_FP8_1D1D_GEMM_CONFIG=128,128,0,0,0,0,1;DG_FP8_1D1D_GEMM_CONFIG=128,128,0,0,1,1,1}"
        [masked]="${SWEEP_MASKED:-DG_FP8_GEMM_CONFIG=128,192,4,0,1;DG_FP8_GEMM_CONFIG=128,128,0,1,1;DG_FP8_GEMM_CONFIG=256,128,0,0,1;DG_FP8_GEMM_CONFIG=64,128,8,0,1;DG_FP8_GEMM_CONFIG=64,192,6,0,1}"
        [dense]="${SWEEP_DENSE:-DG_FP8_GEMM_CONFIG=256,128,3,0,2,16;DG_FP8_GEMM_CONFIG=128,192,4,0,1;DG_FP8_GEMM_CONFIG=256,128,3,0,0,16}")
    for s in ${SWEEP_FAMILIES:-contiguous 1d1d masked}; do
        OUT="$OUT/sweep_$s" VS_PEER_ROUNDS=1 VS_PEER_FAMILIES="${sweep_fam[$s]}" VS_PEER_TIMEOUT="${SWEEP_TIMEOUT:-240}" \
            VS_PEER_VARIANTS="${sweep_var[$s]}" "$PWD/scripts/gpu_check.sh" vs_peer >/dev/null 2>&1
        note "sweep_moe $s: $(tail -1 "$OUT/sweep_$s/summary.txt" 2>/dev/null)"
    done
    cat "$OUT"/sweep_*/vs_peer.md 2>/dev/null
fi

if has bench; then
    for b in ${BENCHES:-benchmarks/bench_fp8_gemm.py benchmarks/bench_first_call.py benchmarks/bench_host_overhead.py benchmarks/bench_bf16_gemm.py benchmarks/bench_legacy.py}; do
        [ -f "$b" ] || continue
        echo "=== $b" >>"$OUT/bench.log"
        timeout "${BENCH_TIMEOUT:-300}" python3 "$b" >>"$OUT/bench.log" 2>&1
        note "$b: rc=$?"
    done
    tail -40 "$OUT/bench.log"
fi

if has host; then
    # Host time per cached call: the torch-free entry and its pieces (C++), then the Python entries.
    DG_JIT_USE_NVRTC=1 ./build/dg_host_breakdown >"$OUT/host.log" 2>&1
    note "dg_host_breakdown: rc=$?"
    DG_JIT_USE_NVRTC=1 python3 benchmarks/bench_host_overhead.py >>"$OUT/host.log" 2>&1
    note "bench_host_overhead: rc=$?"
    cat "$OUT/host.log"
fi

if has host_peer; then
    # The same host costs, ours and the peer in turns (first call cold / warm cache, host time per cached call).
    timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/bench_host_vs_peer.py --peer-path "$PEER_SRC" >"$OUT/host_peer.log" 2>&1
    note "bench_host_vs_peer: rc=$?"
    cat "$OUT/host_peer.log" | tee -a "$summary"
fi

if has roofline; then
    # The FP8, BF16 and grouped sets in one table (benchmarks/bench_all.py), results kept as JSON, and the
    # roofline PNG when matplotlib is installed (redraw anywhere: bench_all.py --from-json ... --plot ...).
    plot=""
    python3 -c 'import matplotlib' 2>/dev/null && plot="--plot $OUT/roofline.png"
    timeout "${BENCH_TIMEOUT:-400}" python3 benchmarks/bench_all.py --json "$OUT/bench_all.json" $plot >"$OUT/bench_all.log" 2>&1
    note "bench_all: rc=$? ${plot:-(no matplotlib: no plot)}"
    tail -45 "$OUT/bench_all.log"
fi

if has profile; then
    # Nsight Compute on one large FP8 GEMM per config in PROFILE_CONFIGS (DG_FP8_GEMM_CONFIG values;
    # "default" = the heuristics). Clocks left alone (--clock-control none), as the host's notes ask.
    shape="${PROFILE_SHAPE:-4096 7168 16384}"
    for cfg in ${PROFILE_CONFIGS:-default}; do
        tag=$(echo "$cfg" | tr ',' '_')
        env DG_JIT_USE_NVRTC=1 DG_FP8_GEMM_CONFIG="$([ "$cfg" = default ] || echo "$cfg")" \
            python3 benchmarks/profile_fp8.py $shape 20 >"$OUT/profile_$tag.log" 2>&1
        env DG_JIT_USE_NVRTC=1 DG_FP8_GEMM_CONFIG="$([ "$cfg" = default ] || echo "$cfg")" \
            timeout "${PROFILE_TIMEOUT:-120}" ncu --clock-control none -k regex:sm90_fp8 --launch-skip 2 --launch-count 1 \
            ${NCU_ARGS:---section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats} \
            python3 benchmarks/profile_fp8.py $shape 3 >>"$OUT/profile_$tag.log" 2>&1
        note "ncu $cfg: rc=$? $(head -1 "$OUT/profile_$tag.log")"
    done
fi
if has profile_full; then
    # Nsight Compute's full set with source-level warp-stall samples for one FP8 GEMM (ours, lineinfo on),
    # exported as text: the details page, every raw metric, and the per-SASS-instruction source page.
    shape="${PROFILE_SHAPE:-4096 7168 16384}"
    rep="$OUT/full_fp8"
    DG_JIT_WITH_LINEINFO=1 DG_JIT_USE_NVRTC=1 DG_FP8_GEMM_CONFIG="${PROFILE_CONFIG:-}" \
        timeout "${PROFILE_TIMEOUT:-180}" ncu --clock-control none -k regex:sm90_fp8 --launch-skip 2 --launch-count 1 \
        --set full --import-source yes -f -o "$rep" python3 benchmarks/profile_fp8.py $shape 3 >"$OUT/profile_full.log" 2>&1
    note "ncu full ${PROFILE_CONFIG:-default}: rc=$? $(head -1 "$OUT/profile_full.log")"
    ncu -i "$rep.ncu-rep" --page details >>"$OUT/profile_full.log" 2>&1
    ncu -i "$rep.ncu-rep" --page raw --csv >"$OUT/profile_full_raw.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$OUT/profile_full_sass.csv" 2>&1
    note "ncu full export: $(wc -c <"$OUT/profile_full_sass.csv") bytes of SASS source page"
    rm -f "$rep.ncu-rep"
fi
if has profile_grouped; then
    # Nsight Compute on grouped FP8 cases (PROFILE_CASES: lines of bench_vs_peer case-name text), ours and the peer,
    # the same inputs (bench_vs_peer.py --child; its JIT caches, so a vs_peer step before saves the compiles):
    # clocks, tensor-pipe activity, warp stall reasons side by side.
    i=0
    while IFS= read -r c; do
        [ -n "$c" ] || continue
        for side in ours peer; do
            log="$OUT/ncu_grouped_${PROFILE_FAMILY:-fp8_contiguous}_${i}_$side.log"
            echo "== $side: $c" >"$log"
            env PYTHONPATH="$([ $side = peer ] && echo "$PEER_SRC" || echo "$PWD")" DG_JIT_CACHE_DIR="/tmp/dg_vs_peer/$side" \
                timeout "${PROFILE_TIMEOUT:-120}" ncu --clock-control none -k regex:sm90_fp8_gemm --launch-skip 4 --launch-count 1 \
                --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats \
                --section Occupancy --section MemoryWorkloadAnalysis --metrics "regex:^sm__pipe_tensor_op.*cycles_active\.avg\.pct_of_peak_sustained_active$,sm__cycles_elapsed.avg.per_second" \
                python3 benchmarks/bench_vs_peer.py --child --families "${PROFILE_FAMILY:-fp8_contiguous}" --case "$c" --runs 6 >>"$log" 2>&1
            note "ncu grouped [$i] $side ($c): rc=$? $(grep -m1 -E 'Duration' "$log" | tr -s ' ')"
        done
        i=$((i + 1))
    done <<<"${PROFILE_CASES:-m=4256 n=6144 k=7168 psum=False zero_padding=False
m=4256 n=6144 k=7168 psum=True zero_padding=False}"
fi
if has profile_bf16; then
    # BF16 nt, ours vs torch.mm (cuBLAS), per shape in PROFILE_BF16_SHAPES ("M,N,K ..."): Nsight Compute on one
    # call (profiler range, so cuBLAS's kernel is caught whatever its name), then a few seconds back to back
    # with nvidia-smi sampling SM clock and power every 100 ms.
    ncu --query-metrics --chip gh100 2>&1 | grep -E "^(sm__pipe_tensor|sm__pipe_shared|l1tex__data_bank|sm__ops_path_tensor_src_bf16)" \
        >"$OUT/ncu_metric_names.log"
    for shape in ${PROFILE_BF16_SHAPES:-4096,4096,7168 4096,7168,2048}; do
        set -- $(echo "$shape" | tr ',' ' ')
        for lib in ours cublas; do
            log="$OUT/profile_bf16_${1}x${2}x${3}_$lib.log"
            DG_JIT_USE_NVRTC=1 timeout "${PROFILE_TIMEOUT:-120}" ncu --clock-control none --profile-from-start off \
                --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
                --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
                --metrics "regex:^sm__pipe_tensor_op.*cycles_active\.avg\.pct_of_peak_sustained_active$,regex:^sm__pipe_shared_cycles_active\.avg\.pct_of_peak_sustained_active$,regex:^l1tex__data_bank_(reads|writes)\.avg\.pct_of_peak_sustained_elapsed$,sm__ops_path_tensor_src_bf16_dst_fp32.sum" \
                python3 benchmarks/profile_bf16.py "$1" "$2" "$3" --lib "$lib" --range >"$log" 2>&1
            note "ncu bf16 $shape $lib: rc=$? $(head -1 "$log")"
            nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 \
                >"$OUT/power_bf16_${1}x${2}x${3}_$lib.csv" 2>&1 &
            smi=$!
            DG_JIT_USE_NVRTC=1 python3 benchmarks/profile_bf16.py "$1" "$2" "$3" --lib "$lib" --seconds "${POWER_SECONDS:-3}" \
                >>"$log" 2>&1
            kill $smi 2>/dev/null; wait $smi 2>/dev/null
            note "sustained bf16 $shape $lib: $(tail -1 "$log") | $(python3 scripts/power_summary.py "$OUT/power_bf16_${1}x${2}x${3}_$lib.csv")"
        done
    done
fi
cat "$summary"
