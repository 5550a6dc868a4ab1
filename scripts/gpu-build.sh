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
for e in saxpy table_and_exception pipeline readme rust_saxpy rust_twins; do cp "target/release/examples/$e" ".dev/bin/example-$e"; done
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
    if m.get("reason") == "compiler-artifact" and exe and m["target"]["name"] in ("filetests", "cuda", "wgpu", "devices", "wgpu_streams", "math_accuracy", "rust_kernels"):
        shutil.copy(exe, ".dev/bin/test-" + m["target"]["name"])
'
# Debug info would not fit the device tool's 64 MiB.
strip .dev/bin/*
du -sh .dev/bin; ls -la .dev/bin
# Compressed, the binaries fit the device tool's carry: carry
# `.dev/bin.tar.xz` (gpu-run.sh unpacks it).
tar -C .dev -cJf .dev/bin.tar.xz bin
du -sh .dev/bin.tar.xz
