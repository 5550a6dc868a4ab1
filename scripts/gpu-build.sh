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
mkdir -p .dev/bin
cp target/release/relok .dev/bin/
for e in saxpy table_and_exception pipeline readme; do cp "target/release/examples/$e" ".dev/bin/example-$e"; done
rm -f .dev/bin/test-*
# Test binaries that take a device (RELOK_TEST_DEVICE).
cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    exe = m.get("executable")
    if m.get("reason") == "compiler-artifact" and exe and m["target"]["name"] in ("filetests", "cuda", "wgpu", "devices", "wgpu_streams", "fleet"):
        shutil.copy(exe, ".dev/bin/test-" + m["target"]["name"])
'
# Debug info would not fit the device tool's 64 MiB.
strip .dev/bin/*
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
