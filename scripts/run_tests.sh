#!/usr/bin/env bash
# The test command (README "Run the tests"): checks its tools, builds the torch-free C++ core with CMake and runs
# its GoogleTest suite, builds the Python extension in place (skipped when its sources and torch are unchanged)
# and runs pytest. GPU tests skip without a GPU.
#   --check-only   check the tools and stop (nothing is built)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${DG_BUILD_JOBS:-2}"
start=$SECONDS
step() { echo "== $1 (at $((SECONDS - start)) s)"; }

step "tools"
missing=()
for tool in cmake ninja; do
    command -v "$tool" >/dev/null || missing+=("$tool: apt-get install cmake ninja-build")
done
if ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
    missing+=("nvcc: the CUDA 13 toolkit at \$CUDA_HOME or /usr/local/cuda")
fi
python3 -c 'import torch' 2>/dev/null || missing+=("torch: the set-up command of README.md installs it")
for module in pytest numpy tqdm matplotlib; do
    python3 -c "import $module" 2>/dev/null || missing+=("$module: pip install -r requirements-test.txt")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "scripts/run_tests.sh: missing before anything is built:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
# GoogleTest, fmt's headers and the SASS tools are checked by the CMake configure below, before the build.
if [ "${1:-}" = "--check-only" ]; then
    echo "tools found"
    exit 0
fi

step "C++ core: configure, build, ctest"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDG_REQUIRE_SASS_TOOLS=ON -DDG_REQUIRE_GTEST=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure --no-tests=error -j1

step "Python package: the extension in place"
if reason=$(python3 deep_gemm/_build_stamp.py --up-to-date); then
    echo "up to date (same sources, same torch): not rebuilt"
else
    echo "building ($reason): about 10 minutes on 2 cores, silent until done"
    CXX="${CXX:-/usr/bin/g++}" MAX_JOBS="$jobs" python3 -m pip install -q --no-build-isolation --no-deps \
        --config-settings editable_mode=compat -e .
fi

step "pytest"
set +e
python3 -m pytest tests/python -ra -q
status=$?
set -e
# Exit status 5 means pytest collected nothing: that is a failure of the suite, not a pass (nonzero exits).
if [ $status -eq 5 ]; then
    echo "pytest collected no tests (exit 5): a failure of the suite" >&2
fi
step "done, pytest exit status $status"
exit $status
