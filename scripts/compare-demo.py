"""Compares two `relok demo --json` outputs example by example: the
results must be equal (the cpu device is the oracle). The math-library
examples must match their Rust reference within their tolerance: on wgpu a
driver's f32 division may differ from the cpu device's by an ulp
(docs/ir.md, "Math functions")."""
import json, sys

TOLERANT = {"softmax", "gelu"}

def load(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "example" in r:
            out[r["example"]] = r
    return out

oracle, other = load(sys.argv[1]), load(sys.argv[2])
if not oracle:
    print(f"{sys.argv[1]}: no example results (the cpu run failed)"); sys.exit(1)
bad = 0
for name, want in oracle.items():
    got = other.get(name)
    if got is None:
        print(f"{sys.argv[2]}: {name}: missing"); bad += 1
    elif "error" in got:
        print(f"{sys.argv[2]}: {name}: error: {got['error']}"); bad += 1
    elif not got["matches_reference"] or (got["result"] != want["result"] and name not in TOLERANT):
        print(f"{sys.argv[2]}: {name}: differs from the cpu device"); bad += 1
print(f"{sys.argv[2]}: {len(oracle) - bad}/{len(oracle)} examples equal to the cpu device")
sys.exit(1 if bad else 0)
