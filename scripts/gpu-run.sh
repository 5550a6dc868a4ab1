#!/usr/bin/env bash
# Runs on the GPU machine (after scripts/gpu-build.sh here): every example
# on the cuda device under table, patch and bake, compared with the cpu
# device (the oracle); the file tests' run lines on the GPU; logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/relok-out}
mkdir -p "$OUT"
B=.dev/bin
export RELOK_CACHE_DIR=/tmp/relok-cache
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
RELOK_CACHE=off $B/relok demo --device cpu --json > "$OUT/demo-cpu.json"
status=0
for s in table patch bake; do
    $B/relok demo --device cuda --strategy $s --json > "$OUT/demo-cuda-$s.json" 2> "$OUT/demo-cuda-$s.err" || status=1
    python3 scripts/compare-demo.py "$OUT/demo-cpu.json" "$OUT/demo-cuda-$s.json" || status=1
done
# Second process: every kernel from the artifact store.
$B/relok demo --device cuda --json > "$OUT/demo-cuda-warm.json" 2>&1 || status=1
tail -1 "$OUT/demo-cuda-warm.json"
RELOK_TEST_DEVICE=cuda RELOK_REPO=$PWD $B/test-filetests > "$OUT/filetests-cuda.log" 2>&1 || status=1
grep -E "test result|failed|note:" "$OUT/filetests-cuda.log" | head -40
$B/test-cuda > "$OUT/cuda-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked" "$OUT/cuda-tests.log" | head -40
exit $status
