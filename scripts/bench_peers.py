"""First launch in a new process with CuPy (NVRTC to cubin, its kernel
cache) and Triton (its compiler and cache), cold and warm, on the GPU
machine (run by scripts/gpu-run.sh --bench; compare with `relok bench
cuda`). Each figure is a child process timed from just after CUDA context
creation (imports and context excluded, reported apart) to the end of the
first launch of y[i] = x[i] * f[0] over 4096 floats; medians of RUNS.
The driver's JIT cache is disabled (CUDA_CACHE_DISABLE=1) in every child.

APP_KERNELS=N (N > 1) adds the application rows: N distinct kernels (the
same kernel with N different constant factors: N RawKernels for CuPy, N
constexpr specialisations for Triton) compiled or loaded, then each
launched once, before the first result (medians of min(RUNS, 3); Triton's
cold application once: it takes tens of seconds). `--json` prints one JSON
list instead of the table."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

RUNS = int(os.environ.get("RUNS", "5"))

CUPY = r'''
import json, time
t0 = time.perf_counter()
import cupy as cp
t1 = time.perf_counter()
x = cp.arange(4096, dtype=cp.float32) + 1
y = cp.empty_like(x)
f = cp.array([2.0], dtype=cp.float32)
cp.cuda.Device(0).synchronize()
t2 = time.perf_counter()
code = r"""extern "C" __global__ void scale(unsigned n, const float* x, float* y, const float* f) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * f[0];
}"""
k = cp.RawKernel(code, "scale")
k((16,), (256,), (cp.uint32(4096), x, y, f))
cp.cuda.Device(0).synchronize()
t3 = time.perf_counter()
assert float(y[1]) == 4.0
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3, "first_ms": (t3 - t2) * 1e3}))
'''

TRITON = r'''
import json, time
t0 = time.perf_counter()
import torch, triton, triton.language as tl
t1 = time.perf_counter()
@triton.jit
def scale(x_ptr, y_ptr, f_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    f = tl.load(f_ptr)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * f, mask=m)
x = torch.arange(4096, dtype=torch.float32, device="cuda") + 1
y = torch.empty_like(x)
f = torch.tensor([2.0], dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
scale[(16,)](x, y, f, 4096, BLOCK=256)
torch.cuda.synchronize()
t3 = time.perf_counter()
assert float(y[1]) == 4.0
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3, "first_ms": (t3 - t2) * 1e3}))
'''

CUPY_APP = r'''
import json, time, sys
import cupy as cp
N = int(sys.argv[1])
x = cp.arange(4096, dtype=cp.float32) + 1
ys = [cp.empty_like(x) for _ in range(N)]
cp.cuda.Device(0).synchronize()
t2 = time.perf_counter()
ks = [cp.RawKernel(r"""extern "C" __global__ void scale(unsigned n, const float* x, float* y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * %d.0f;
}""" % (k + 2), "scale") for k in range(N)]
for k, y in zip(ks, ys):
    k((16,), (256,), (cp.uint32(4096), x, y))
cp.cuda.Device(0).synchronize()
t3 = time.perf_counter()
assert all(float(y[1]) == 2.0 * (k + 2) for k, y in enumerate(ys))
print(json.dumps({"import_ms": 0, "context_ms": 0, "first_ms": (t3 - t2) * 1e3}))
'''

TRITON_APP = r'''
import json, time, sys
import torch, triton, triton.language as tl
N = int(sys.argv[1])
@triton.jit
def scale(x_ptr, y_ptr, n, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * F, mask=m)
x = torch.arange(4096, dtype=torch.float32, device="cuda") + 1
ys = [torch.empty_like(x) for _ in range(N)]
torch.cuda.synchronize()
t2 = time.perf_counter()
for k, y in enumerate(ys):
    scale[(16,)](x, y, 4096, F=float(k + 2), BLOCK=256)
torch.cuda.synchronize()
t3 = time.perf_counter()
assert all(float(y[1]) == 2.0 * (k + 2) for k, y in enumerate(ys))
print(json.dumps({"import_ms": 0, "context_ms": 0, "first_ms": (t3 - t2) * 1e3}))
'''

def child(code, env, args=()):
    # Triton reads its kernels' source: the child must be a file.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    out = subprocess.run([sys.executable, f.name, *args], env=env, capture_output=True, text=True)
    os.unlink(f.name)
    if out.returncode != 0:
        raise SystemExit(f"child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])

def main():
    rows = []
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        raise SystemExit("CuPy is not importable here")
    for name, code, var in [("CuPy RawKernel (NVRTC)", CUPY, "CUPY_CACHE_DIR"), ("Triton", TRITON, "TRITON_CACHE_DIR")]:
        if name == "Triton" and importlib.util.find_spec("triton") is None:
            print("Triton is not importable here: skipped", file=sys.stderr)
            continue
        warm_dir = tempfile.mkdtemp(prefix="peer-warm-")
        base = dict(os.environ, CUDA_CACHE_DISABLE="1")
        child(code, dict(base, **{var: warm_dir}))
        for mode in ["cold", "warm"]:
            res = []
            for _ in range(RUNS):
                d = tempfile.mkdtemp(prefix="peer-cold-") if mode == "cold" else warm_dir
                res.append(child(code, dict(base, **{var: d})))
                if mode == "cold":
                    shutil.rmtree(d, ignore_errors=True)
            med = lambda k: statistics.median(r[k] for r in res)
            rows.append((name, mode, med("first_ms"), med("context_ms"), med("import_ms")))
        shutil.rmtree(warm_dir, ignore_errors=True)
    n = int(os.environ.get("APP_KERNELS", "0"))
    if n > 1:
        for name, code, var in [("CuPy RawKernel (NVRTC)", CUPY_APP, "CUPY_CACHE_DIR"), ("Triton", TRITON_APP, "TRITON_CACHE_DIR")]:
            if name == "Triton" and importlib.util.find_spec("triton") is None:
                continue
            warm_dir = tempfile.mkdtemp(prefix="peer-warm-")
            base = dict(os.environ, CUDA_CACHE_DISABLE="1")
            child(code, dict(base, **{var: warm_dir}), [str(n)])
            for mode in ["cold", "warm"]:
                runs = 1 if (name == "Triton" and mode == "cold") else min(RUNS, 3)
                res = []
                for _ in range(runs):
                    d = tempfile.mkdtemp(prefix="peer-cold-") if mode == "cold" else warm_dir
                    res.append(child(code, dict(base, **{var: d}), [str(n)]))
                    if mode == "cold":
                        shutil.rmtree(d, ignore_errors=True)
                rows.append((f"{name}, {n} kernels", mode, statistics.median(r["first_ms"] for r in res), 0.0, 0.0))
            shutil.rmtree(warm_dir, ignore_errors=True)
    if "--json" in sys.argv:
        print(json.dumps([{"tool": n, "cache": m, "first_ms": f, "context_ms": c} for n, m, f, c, _ in rows]))
        return
    print(f"{'tool':<24} {'cache':<6} {'first launch':>14} {'context':>10} {'import':>10}   (medians of {RUNS}, ms)")
    for name, mode, first, ctx, imp in rows:
        print(f"{name:<24} {mode:<6} {first:>14.2f} {ctx:>10.1f} {imp:>10.1f}")

main()
