#!/usr/bin/env bash
# Builds, on a machine without a GPU, everything scripts/gpu-run.sh runs on
# a machine with one (which has no Rust): the relok binary and the test
# binaries, copied into .dev/bin and packed into .dev/bin.tar.xz (ignored
# by git; name the archive and `.gl` in the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
cargo build --release -p relok-cli
cargo build --release -p relok --examples
cargo build --release -p relok-runtime --example bare_context --example relok_open --example driver_floor --features cuda
mkdir -p .dev/bin
cp target/release/relok .dev/bin/
for e in saxpy table_and_exception pipeline readme rust_saxpy rust_twins; do cp "target/release/examples/$e" ".dev/bin/example-$e"; done
# The first-launch benchmark's children (relok bench start finds them beside relok).
cp target/release/examples/first_launch target/release/examples/bare_context target/release/examples/relok_open target/release/examples/driver_floor .dev/bin/
# Bundles with cubins for the shipped-path tests and benchmark (the GPU
# machine has no ptxas): scale and saxpy for sm_90; and
# the application whose build.rs embeds its kernels and their cubins.
ptxas=${RELOK_PTXAS:-$(ls target/tools/nvidia/cu13/bin/ptxas 2>/dev/null || command -v ptxas || true)}
if [ -n "$ptxas" ]; then
    RELOK_PTXAS=$ptxas cargo build --release -p relok-example-shipped
    cp target/release/relok-example-shipped .dev/bin/example-shipped
    mkdir -p .dev/bin/bundles
    for b in "bench/scale 90" "saxpy 90"; do
        set -- $b
        RELOK_PTXAS=$ptxas target/release/relok precompile "examples/$1.rk" --target ptx-sm90 --strategy table --cubin "sm_$2" \
            -o ".dev/bin/bundles/$(basename "$1")-sm$2.bundle"
    done
    # The 64-kernel application of relok bench start, shipped with cubins.
    app=$(mktemp -d)
    target/release/examples/first_launch --kernels 64 --write-kernels "$app"
    RELOK_PTXAS=$ptxas target/release/relok precompile "$app"/*.rk --target ptx-sm90 --strategy table --cubin sm_90 \
        -o .dev/bin/bundles/app64-sm90.bundle
    rm -rf "$app"
    # The driver's floor under a first launch (driver_floor): scale's cubin,
    # checked and not.
    ptx=$(mktemp --suffix .ptx)
    for mode in checked unchecked; do
        target/release/relok compile examples/bench/scale.rk --target ptx $([ $mode = unchecked ] && echo --unchecked) -o "$ptx"
        "$ptxas" -arch=sm_90 -o ".dev/bin/scale-$mode.cubin" "$ptx"
    done
    rm -f "$ptx"
else
    echo "warning: no ptxas (set RELOK_PTXAS): no cubin bundles; the shipped-path GPU test will fail" >&2
fi
rm -f .dev/bin/test-*
# Test binaries that take a device (RELOK_TEST_DEVICE, or every device
# found): cuda and wgpu are the facade's (crates/relok/tests), cuda_device
# and wgpu_device the runtime's, wgpu_commands the CLI's.
cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    exe = m.get("executable")
    if m.get("reason") == "compiler-artifact" and exe and m["target"]["name"] in ("filetests", "cuda", "wgpu", "cuda_device", "wgpu_device", "wgpu_commands", "devices", "wgpu_streams", "shipped", "fleet", "math_accuracy", "readonly_values", "rust_kernels", "rust_semantics", "rust_control", "rust_data", "rust_places", "kernels"):
        shutil.copy(exe, ".dev/bin/test-" + m["target"]["name"])
'
# Debug info would not fit the device tool's 64 MiB.
strip .dev/bin/relok .dev/bin/example-* .dev/bin/test-* .dev/bin/first_launch .dev/bin/bare_context .dev/bin/driver_floor
du -sh .dev/bin; ls -la .dev/bin
# Compressed, the binaries fit the device tool's carry: carry
# `.dev/bin.tar.xz` (gpu-run.sh unpacks it).
tar -C .dev -cJf .dev/bin.tar.xz bin
du -sh .dev/bin.tar.xz
# redis-server and redis-cli with the libraries they load beyond glibc, for
# the remote tier's fleet tests (the GPU machine has no package access):
# carry `.dev/redis.tar.xz` too.
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
    rm -rf .dev/redis && mkdir -p .dev/redis/lib .dev/redis/bin
    cp -L "$(command -v redis-server)" "$(command -v redis-cli)" .dev/redis/bin/
    ldd "$(command -v redis-server)" "$(command -v redis-cli)" | awk '/=> \//{print $3}' | sort -u |
        grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | xargs -I{} cp -L {} .dev/redis/lib/
    # Wrappers on the PATH: the libraries for redis alone (never for relok
    # or the GPU drivers).
    for t in redis-server redis-cli; do
        printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/%s" "$@"\n' "$t" > ".dev/redis/$t"
        chmod +x ".dev/redis/$t"
    done
    tar -C .dev -cJf .dev/redis.tar.xz redis
    du -sh .dev/redis.tar.xz
fi
