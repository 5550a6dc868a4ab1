#!/usr/bin/env bash
# Runs on the GPU machine (after scripts/gpu-build.sh here): every example
# on the cuda device under table, patch and bake and on the wgpu device
# (NVIDIA's Vulkan driver) under table and bake, compared with the cpu
# device (the oracle); the file tests' run lines and the device tests on
# both; logs in $OUT. For Vulkan, carry `.gl` (the loader's packages, see
# the device tool's README); it is unpacked first when present.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/relok-out}
mkdir -p "$OUT"
B=.dev/bin
if [ -f .dev/bin.tar.xz ] && [ ! -x $B/relok ]; then tar -C .dev -xJf .dev/bin.tar.xz; fi
export RELOK_CACHE_DIR=/tmp/relok-cache
# The test binaries were built in another checkout (scripts/gpu-build.sh):
# they find examples/ and tests/ here through RELOK_REPO, not through the
# path they were built in (crates/*/tests/common: `repo()`).
export RELOK_REPO=$PWD
# This machine has both GPU devices: a test that finds either missing fails
# instead of skipping, so the run cannot pass by skipping.
export RELOK_REQUIRE_CUDA=1 RELOK_REQUIRE_WGPU=1
if ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
fi
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
# PARTS (default all) picks what runs, to fit a call's time: cuda wgpu
# fuzz fleet rust shipped floor bench.
part() { [ "${PARTS:-all}" = all ] || [[ " $PARTS " == *" $1 "* ]]; }
status=0
RELOK_CACHE=off $B/relok demo --device cpu --json > "$OUT/demo-cpu.json"
if part cuda; then
for s in table patch bake; do
    $B/relok demo --device cuda --strategy $s --json > "$OUT/demo-cuda-$s.json" 2> "$OUT/demo-cuda-$s.err" || status=1
    python3 scripts/compare-demo.py "$OUT/demo-cpu.json" "$OUT/demo-cuda-$s.json" || status=1
done
# Second process: every kernel from the artifact store.
$B/relok demo --device cuda --json > "$OUT/demo-cuda-warm.json" 2>&1 || status=1
tail -1 "$OUT/demo-cuda-warm.json"
RELOK_TEST_DEVICE=cuda $B/test-filetests > "$OUT/filetests-cuda.log" 2>&1 || status=1
grep -E "test result|failed|note:" "$OUT/filetests-cuda.log" | head -40
# The math library's accuracy measured on CUDA (docs/ir.md's table): the
# same bits as the cpu device and within the bounds.
RELOK_TEST_DEVICE=cuda $B/test-math_accuracy --nocapture > "$OUT/math-accuracy-cuda.log" 2>&1 || status=1
grep -E "math accuracy|f32:|f64:|test result|panicked" "$OUT/math-accuracy-cuda.log" | head -50
# The facade on the cuda device (crates/relok/tests/cuda.rs), then what
# needs the runtime itself: the cubin archive's faults, a slot freed under
# a launch, one session over two CUDA contexts (crates/relok-runtime/tests/cuda_device.rs).
$B/test-cuda > "$OUT/cuda-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|skipping" "$OUT/cuda-tests.log" | head -40
$B/test-cuda_device > "$OUT/cuda-device-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|SKIPPED" "$OUT/cuda-device-tests.log" | head -20
fi
# The wgpu device on the NVIDIA Vulkan driver (RELOK_WGPU_ADAPTER=nvidia
# keeps lavapipe or others out).
if part wgpu; then
export RELOK_WGPU_ADAPTER=${RELOK_WGPU_ADAPTER:-nvidia}
for s in table bake; do
    $B/relok demo --device wgpu --strategy $s --json > "$OUT/demo-wgpu-$s.json" 2> "$OUT/demo-wgpu-$s.err" || status=1
    python3 scripts/compare-demo.py "$OUT/demo-cpu.json" "$OUT/demo-wgpu-$s.json" || status=1
done
$B/relok demo --device wgpu --json > "$OUT/demo-wgpu-warm.json" 2>&1 || status=1
tail -1 "$OUT/demo-wgpu-warm.json"
# The math library's accuracy on NVIDIA's Vulkan driver.
RELOK_TEST_DEVICE=wgpu $B/test-math_accuracy --nocapture > "$OUT/math-accuracy-wgpu.log" 2>&1 || status=1
grep -E "math accuracy|f32:|f64:|test result|panicked" "$OUT/math-accuracy-wgpu.log" | head -50
fi
$B/relok cache stats > "$OUT/cache-stats.txt" 2>&1
# Differential testing on both GPU devices (cuda under table, patch and
# bake; wgpu on NVIDIA's Vulkan under table and bake) against the cpu
# device: FUZZ_COUNT kernels from FUZZ_SEED (200 here, to stay within one
# call; the >= 10 000 campaign runs the same command on its own, in calls
# of a few thousand: FUZZ_SEED=0, 2500, 5000, 7500 with --count 2500).
if part fuzz; then
# FUZZ_JOBS processes at once (default 1), each FUZZ_COUNT kernels from
# its own seed range: job j starts at FUZZ_SEED + j * FUZZ_COUNT.
jobs=${FUZZ_JOBS:-1}
for j in $(seq 0 $((jobs - 1))); do
    seed=$(( ${FUZZ_SEED:-0} + j * ${FUZZ_COUNT:-200} ))
    RELOK_WGPU_ADAPTER=nvidia $B/relok fuzz --devices cpu,cuda,wgpu --count "${FUZZ_COUNT:-200}" --seed "$seed" --out-dir "$OUT/fuzz-failures" > "$OUT/fuzz-$j.log" 2>&1 &
done
for j in $(seq 0 $((jobs - 1))); do wait -n || status=1; done
tail -q -n 1 "$OUT"/fuzz-*.log
fi
# Every example, every file test's run lines (refusals by name), caches:
# the facade on the wgpu device (crates/relok/tests/wgpu.rs); the
# pipeline-cache archive and the heap (the runtime's wgpu_device.rs);
# `relok bench wgpu` and a fuzz campaign (the CLI's wgpu_commands.rs).
if part wgpu; then
$B/test-wgpu > "$OUT/wgpu-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|skipping|note: file tests" "$OUT/wgpu-tests.log" | head -60
$B/test-wgpu_device > "$OUT/wgpu-device-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|SKIPPED" "$OUT/wgpu-device-tests.log" | head -20
RELOK_BIN=$PWD/$B/relok $B/test-wgpu_commands > "$OUT/wgpu-commands-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|SKIPPED" "$OUT/wgpu-commands-tests.log" | head -20
unset RELOK_WGPU_ADAPTER
# The relok facade on every device (cpu, cuda, wgpu on NVIDIA's Vulkan
# driver), each result compared with the cpu device; the examples.
RELOK_WGPU_ADAPTER=nvidia $B/test-devices > "$OUT/facade-tests.log" 2>&1 || status=1
grep -E "^test |test result|panicked|skipping" "$OUT/facade-tests.log" | head -30
# Context::kernels (parallel loading) on every device.
RELOK_WGPU_ADAPTER=nvidia $B/test-kernels > "$OUT/kernels-tests.log" 2>&1 || status=1
grep -E "test result|panicked|skipping" "$OUT/kernels-tests.log"
RELOK_WGPU_ADAPTER=nvidia $B/test-wgpu_streams > "$OUT/wgpu-streams.log" 2>&1 || status=1
# Host values are read-only to kernels (the seal bitmap on NVIDIA's Vulkan,
# the seal table on cuda).
RELOK_WGPU_ADAPTER=nvidia $B/test-readonly_values > "$OUT/readonly-values.log" 2>&1 || status=1
grep -E "test result|panicked" "$OUT/readonly-values.log" | head
grep -E "test result|panicked" "$OUT/wgpu-streams.log" | head
fi
# The remote tier (Redis): eight hosts on the cpu device and on NVIDIA's
# Vulkan, two cuda nodes sharing cubins, poisoning and faults. Needs
# .dev/redis.tar.xz (scripts/gpu-build.sh packs redis-server and its
# libraries).
if part fleet; then
if [ -f .dev/redis.tar.xz ] && [ ! -x .dev/redis/redis-server ]; then tar -C .dev -xJf .dev/redis.tar.xz; fi
if [ -x .dev/redis/redis-server ]; then
    PATH=$PWD/.dev/redis:$PATH RELOK_REQUIRE_REDIS=1 RELOK_WGPU_ADAPTER=nvidia RELOK_BIN=$PWD/$B/relok \
        $B/test-fleet > "$OUT/fleet-tests.log" 2>&1 || status=1
    grep -E "^test |test result|panicked|SKIPPED" "$OUT/fleet-tests.log" | head -20
    # A new process loading 64 kernels (and their cubins) from the remote
    # against compiling them (docs/benchmarks.md).
    PATH=$PWD/.dev/redis:$PATH $B/relok bench remote --device cuda ${BENCH_QUICK:+--quick} > "$OUT/bench-remote-cuda.txt" 2>&1 || status=1
    cat "$OUT/bench-remote-cuda.txt"
else
    echo "remote tier fleet tests not run: no .dev/redis.tar.xz (run scripts/gpu-build.sh where redis-server is installed)"
fi
fi
if part rust; then
for d in cuda wgpu; do
    for e in saxpy table_and_exception pipeline readme rust_saxpy rust_twins; do
        RELOK_WGPU_ADAPTER=nvidia RELOK_DEVICE=$d $B/example-$e >> "$OUT/examples.log" 2>&1 || { status=1; echo "example $e on $d FAILED"; }
    done
done
grep -E "wrong|correct|caught|on " "$OUT/examples.log" | head -20
# Rust kernels (#[relok::kernel]): every twin against its .rk, bounds
# checks with Rust locations, host statics, generics, on cpu, cuda and
# wgpu (NVIDIA's Vulkan driver), each compared with the cpu device.
RELOK_WGPU_ADAPTER=nvidia $B/test-rust_kernels > "$OUT/rust-kernels.log" 2>&1 || status=1
grep -E "^test |test result|panicked|skipping" "$OUT/rust-kernels.log" | head -30
# The Rust semantics the macro must keep (issue 31): on every device.
RELOK_WGPU_ADAPTER=nvidia $B/test-rust_semantics > "$OUT/rust-semantics.log" 2>&1 || status=1
grep -E "test result|panicked|skipping" "$OUT/rust-semantics.log" | head -10
# Rust kernels' control flow and methods (match, ranges, labels, slice
# iterators, the composed integer and float methods) against plain Rust.
RELOK_WGPU_ADAPTER=nvidia $B/test-rust_control > "$OUT/rust-control.log" 2>&1 || status=1
grep -E "^test |test result|panicked|skipping" "$OUT/rust-control.log" | head -30
# Rust kernels' data (structs, tuples, small integers u8 i8 u16 i16,
# &[bool], Option) and places (2-D arrays, sub-slices, closures,
# macro_rules!).
for t in rust_data rust_places; do
    RELOK_WGPU_ADAPTER=nvidia $B/test-$t > "$OUT/$t.log" 2>&1 || status=1
    grep -E "test result|panicked|skipping" "$OUT/$t.log" | head -10
done
for d in cuda wgpu; do
    RELOK_WGPU_ADAPTER=nvidia $B/relok demo --device $d --rust --json > "$OUT/demo-rust-$d.json" 2> "$OUT/demo-rust-$d.err" || { status=1; echo "demo --rust on $d FAILED"; }
    grep rust_twin "$OUT/demo-rust-$d.json"
done
fi
# Shipped kernels: bundled cubins used only by their own GPU; damaged or
# foreign machine code refused (bundles made by gpu-build.sh).
if part shipped; then
RELOK_TEST_BUNDLES=$PWD/$B/bundles $B/test-shipped > "$OUT/shipped.log" 2>&1 || status=1
grep -E "^test |test result|panicked|SKIPPED" "$OUT/shipped.log" | head
# The application that embeds its kernels and cubins (build.rs), on empty
# caches: zero compiles on both GPU devices, zero JIT on cuda.
for d in cuda wgpu; do
    RELOK_WGPU_ADAPTER=nvidia RELOK_DEVICE=$d RELOK_CACHE_DIR=$(mktemp -d) $B/example-shipped > "$OUT/shipped-app-$d.json" 2>&1 || status=1
    cat "$OUT/shipped-app-$d.json"
    grep -q '"compiles":0' "$OUT/shipped-app-$d.json" || { status=1; echo "shipped app on $d compiled"; }
done
grep -q '"bundled":1,"linked":0,"jit":0' "$OUT/shipped-app-cuda.json" || { status=1; echo "shipped app on cuda did not load its bundled cubin"; }
fi
# The first launch of a facade program, cold / warm / shipped, the whole
# process, the 64-kernel application, CuPy and Triton (BENCH_START=1;
# about 5 minutes).
if [ -n "${BENCH_START:-}" ]; then
    RELOK_WGPU_ADAPTER=nvidia $B/relok bench start --devices cuda,wgpu --bundle $B/bundles/scale-sm90.bundle --app-bundle $B/bundles/app64-sm90.bundle --peers --json > "$OUT/bench-start.json" 2> "$OUT/bench-start.err" || status=1
fi
# How fast the example kernels and their Rust twins run on cuda and wgpu
# against their CUDA C twins, cuBLAS, CuPy and torch, each result checked
# first (BENCH_KERNELS=1; about 2 minutes; with BENCH_QUICK=1 a smoke
# test): the record, its tables and plot (docs/benchmarks.md).
if [ -n "${BENCH_KERNELS:-}" ]; then
    RELOK_WGPU_ADAPTER=nvidia $B/relok bench kernels ${BENCH_QUICK:+--quick} --json > "$OUT/bench-kernels.jsonl" 2> "$OUT/bench-kernels.err" || status=1
    python3 scripts/plot_kernels.py "$OUT/bench-kernels.jsonl" "$OUT/bench-kernels.png" || status=1
fi
# The driver's floor under a first launch (driver_floor, bare driver calls
# in new processes), relok's scale kernel checked and not: medians of 9.
if part floor; then
for i in $(seq 9); do for mode in unchecked checked; do
    $B/driver_floor $B/scale-$mode.cubin $mode >> "$OUT/floor.txt" 2>> "$OUT/floor.err" || status=1
done; done
python3 - "$OUT/floor.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = [p.strip() for p in line.split('|')]
    mode, _, total = parts[0].split()
    steps = dict(p.rsplit(' ', 1) for p in parts[1:])
    rows.setdefault(mode, []).append({'total': float(total), **{k: float(v) for k, v in steps.items()}})
for mode, rs in rows.items():
    print(f"driver floor, {mode} ({len(rs)} processes, µs medians): " + ' | '.join(f"{k} {statistics.median(r[k] for r in rs):.1f}" for k in rs[0]))
PY
[ $? -eq 0 ] && [ -s "$OUT/floor.txt" ] || { status=1; cat "$OUT/floor.err"; }
fi
# Host time per asynchronous launch against the bare loops.
if part bench; then
RELOK_WGPU_ADAPTER=nvidia $B/relok bench launch ${BENCH_QUICK:+--quick} > "$OUT/bench-launch.txt" 2>&1 || status=1
RELOK_WGPU_ADAPTER=nvidia $B/relok bench launch --json ${BENCH_QUICK:+--quick} > "$OUT/bench-launch.json" 2>&1 || status=1
cat "$OUT/bench-launch.txt"
fi
exit $status
