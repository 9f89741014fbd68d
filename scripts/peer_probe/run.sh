#!/usr/bin/env bash
# Probes why the peer (DeepGEMM, built by gpu_check.sh's `peer` step) crashes: std::regex on this host, then one
# peer call with a native backtrace on SIGSEGV. Usage: scripts/peer_probe/run.sh PEER_SRC
here=$(cd "$(dirname "$0")" && pwd)
peer=${1:?usage: run.sh PEER_SRC}
tmp=$(mktemp -d)
g++ --version | head -1
g++ -O3 -std=c++17 -DPROBE_MAIN "$here/regex_probe.cpp" -o "$tmp/probe" && "$tmp/probe"
g++ -O3 -std=c++17 -fPIC -shared "$here/regex_probe.cpp" -o "$tmp/probe.so"
python3 -c "import ctypes; print('python, no torch:', ctypes.CDLL('$tmp/probe.so').count_includes(b'#include <a>'))"
python3 -c "import torch, ctypes; print('python after torch:', ctypes.CDLL('$tmp/probe.so').count_includes(b'#include <a>'))"
gcc -shared -fPIC -o "$tmp/segv_backtrace.so" "$here/segv_backtrace.c" -ldl
(cd / && LD_PRELOAD="$tmp/segv_backtrace.so" PYTHONPATH="$peer" DG_JIT_CACHE_DIR="$tmp/cache" timeout 120 \
    python3 "$here/peer_smoke.py" 2>&1 | tail -40; echo "peer smoke: rc=${PIPESTATUS[0]}")
