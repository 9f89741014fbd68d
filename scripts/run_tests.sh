#!/usr/bin/env bash
# The test command (README "Run the tests"): builds the torch-free C++ core with CMake and runs its
# GoogleTest suite, builds the Python extension in place and runs pytest. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${DG_BUILD_JOBS:-2}"

echo "== C++ core: configure, build, ctest"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDG_REQUIRE_SASS_TOOLS=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j1

echo "== Python package: build the extension in place"
CXX="${CXX:-/usr/bin/g++}" MAX_JOBS="$jobs" python3 -m pip install -q --no-build-isolation --no-deps -e .

echo "== pytest"
set +e
python3 -m pytest tests/python -ra -q
status=$?
set -e
# Exit status 5 means pytest collected nothing: that is a failure of the suite, not a pass (nonzero exits).
if [ $status -eq 5 ]; then
    echo "pytest collected no tests (exit 5): a failure of the suite" >&2
fi
exit $status
