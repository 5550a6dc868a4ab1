"""The peers of `relok bench kernels`, which runs this script and merges its
records with relok's own: the CUDA C twins of the example kernels
(examples/cuda/*.cu, compiled by NVRTC through CuPy's RawKernel with its
default options), the library baselines (cuBLAS saxpy and SGEMM, CuPy sum,
cumsum and bincount, torch softmax and gelu(approximate="tanh")) and the copy
ceiling (a device-to-device cudaMemcpy: bytes read plus written).

Each is checked, then timed, as relok bench kernels does its own (see
crates/relok-cli/src/bench/kernels.rs): pseudo-random inputs (never zeros),
the output poisoned (NaN, 0xffffffff), one launch, its whole result compared
with a reference (float64 through CuPy for the float kernels, exactly for the
integer ones, NumPy's bincount for the histogram) -- a wrong result is an
error record and is not timed; then one launch timed alone says how many make
a batch of about --batch-ms, and the time is the median over --batches batches
of (the launches back to back, one device synchronisation) / launches, host
clock. Sets of buffers smaller than 256 MiB rotate among up to 8 copies so
that repeated launches do not run from the L2.

    python3 scripts/bench_kernels.py --repo . --size 268435456:4096 [--size 16776960:4096]
        [--kernels saxpy,gelu,…] [--batches 25] [--batch-ms 20] [--date …] [--driver …]

--size ELEMENTS:MATMUL: elements of the 1-D kernels (softmax: rows of 256)
and the side of matmul's matrices; one set of measurements per --size (a
kernel whose size repeats is measured once). Prints one JSON record per line
(the fields of relok's Record), and {"skipped": …, "why": …} for a library
that is not importable.
"""
import argparse, json, math, os, statistics, sys, time

os.environ.setdefault("CUPY_TF32", "0")  # cuBLAS SGEMM in plain fp32, as the kernels compute
import cupy as cp
import numpy as np

BLOCK = 256
ROTATE_BYTES = 256 << 20
MAX_SETS = 8
BINS = 256
SAXPY_A = 2.5
CUDA_C = "CUDA C (NVRTC)"
KERNELS = ["saxpy", "gelu", "reduce", "softmax", "scan", "histogram", "matmul"]


class Wrong(Exception):
    """A result that differs from its reference."""


def sync():
    cp.cuda.runtime.deviceSynchronize()


def label(kernel, elements, matmul):
    if kernel == "softmax":
        return f"{elements // BLOCK}x{BLOCK}"
    if kernel == "matmul":
        return f"{matmul}^3"
    return str(elements)


def sets_for(nbytes):
    return max(1, min(MAX_SETS, -(-ROTATE_BYTES // max(1, nbytes))))


def uniform(n, seed):
    return cp.random.default_rng(seed).random(n, dtype=cp.float32)


def close(out, ref, rtol, atol=0.0):
    """Every element of `out` within rtol·|ref| + atol of the float64 `ref`."""
    out, ref = out.ravel(), ref.ravel()
    bad = ~(cp.abs(out.astype(cp.float64) - ref) <= rtol * cp.abs(ref) + atol)
    wrong(bad, out, ref)


def exact(out, ref):
    out, ref = out.ravel(), ref.ravel()
    wrong(out != ref, out, ref)


def wrong(bad, out, ref):
    n = int(bad.sum())
    if n:
        i = int(cp.argmax(bad))
        raise Wrong(f"{n} of {out.size} elements differ from the reference; the first at {i}: "
                    f"{out[i].item()}, expected {ref[i].item()}")


class Bench:
    def __init__(self, a):
        self.a = a
        self.device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        self.repo = a.repo

    def emit(self, rec):
        print(json.dumps(rec), flush=True)

    def cuda_c(self, name):
        with open(os.path.join(self.repo, "examples", "cuda", f"{name}.cu")) as f:
            return cp.RawKernel(f.read(), name)

    def time(self, launch, sets):
        sync()
        t = time.perf_counter()
        launch(sets[-1])
        sync()
        one = (time.perf_counter() - t) * 1e3
        per = max(1, min(1000, math.ceil(self.a.batch_ms / one))) if one > 0 else 1000
        times, i = [], 0
        for _ in range(self.a.batches):
            t = time.perf_counter()
            for _ in range(per):
                launch(sets[i % len(sets)])
                i += 1
            sync()
            times.append((time.perf_counter() - t) * 1e3 / per)
        return statistics.median(times), per

    def measure(self, kernel, variant, size, sets, reset, launch, check, checked, nbytes=None, flops=None, regs=None):
        """Checks `launch` on sets[0] after `reset`, then times it; emits the record."""
        rec = {"date": self.a.date, "device": self.device, "backend": "cuda", "driver": self.a.driver,
               "kernel": kernel, "variant": variant, "size": size, "ms": None, "gb_s": None, "gflop_s": None,
               "ratio": None, "registers": None, "checked": checked, "error": None, "batches": 0, "launches": 0}
        try:
            reset(sets[0])
            launch(sets[0])
            sync()
            check(sets[0])
            ms, per = self.time(launch, sets)
            rec.update(ms=ms, batches=self.a.batches, launches=per)
            if nbytes is not None:
                rec["gb_s"] = nbytes / (ms * 1e-3) / 1e9
            if flops is not None:
                rec["gflop_s"] = flops / (ms * 1e-3) / 1e9
            rec["registers"] = regs() if regs else None
        except Wrong as e:
            rec["error"] = f"wrong result, not timed: {e}"
        except Exception as e:  # a compile or launch error: the record says which
            rec["error"] = f"{type(e).__name__}: {e}"
        self.emit(rec)

    def skipped(self, what, why):
        self.emit({"skipped": what, "why": why})


class Set:
    def __init__(self, **bufs):
        self.__dict__.update(bufs)


def copies(nbytes, make):
    return [make() for _ in range(sets_for(nbytes))]


def run(b, n, m, kernels, done, torch):
    blocks = n // BLOCK
    grid1 = (blocks,)
    c_checked = "every element against float64 through CuPy"
    todo = [k for k in kernels if (k, label(k, n, m)) not in done]
    for k in todo:
        done.add((k, label(k, n, m)))
    if "saxpy" in todo:
        x, y = uniform(n, 1), uniform(n, 2)
        ref = SAXPY_A * x.astype(cp.float64) + y.astype(cp.float64)
        sets = copies(8 * n, lambda: Set(x=x.copy(), y=y.copy()))
        reset = lambda s: cp.copyto(s.y, y)
        check = lambda s: close(s.y, ref, 1e-6)
        k = b.cuda_c("saxpy")
        size = label("saxpy", n, m)
        b.measure("saxpy", CUDA_C, size, sets, reset,
                  lambda s: k(grid1, (BLOCK,), (np.uint32(n), np.float32(SAXPY_A), s.x, s.y)), check, c_checked,
                  nbytes=12 * n, regs=lambda: k.num_regs)
        try:
            from cupy import cublas
            b.measure("saxpy", "cuBLAS saxpy", size, sets, reset,
                      lambda s: cublas.axpy(np.float32(SAXPY_A), s.x, s.y), check, c_checked, nbytes=12 * n)
        except ImportError as e:
            b.skipped("cuBLAS saxpy", str(e))
        del x, y, ref, sets
    if "gelu" in todo:
        x = uniform(n, 3) * 12 - 6
        x64 = x.astype(cp.float64)
        ref = 0.5 * x64 * (1 + cp.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
        del x64
        sets = copies(8 * n, lambda: Set(x=x.copy(), y=cp.empty_like(x)))
        reset = lambda s: s.y.fill(cp.nan)
        check = lambda s: close(s.y, ref, 1e-5, 1e-6)
        k = b.cuda_c("gelu")
        size = label("gelu", n, m)
        b.measure("gelu", CUDA_C, size, sets, reset, lambda s: k(grid1, (BLOCK,), (np.uint32(n), s.x, s.y)),
                  check, c_checked, nbytes=8 * n, regs=lambda: k.num_regs)
        if torch:
            gelu = torch.nn.functional.gelu
            tsets = [Set(x=torch.as_tensor(s.x, device="cuda"), y=None) for s in sets]
            b.measure("gelu", "torch gelu(approximate=\"tanh\")", size, tsets, lambda s: None,
                      lambda s: setattr(s, "y", gelu(s.x, approximate="tanh")),
                      lambda s: close(cp.asarray(s.y), ref, 1e-5, 1e-6), c_checked, nbytes=8 * n)
            del tsets
        del x, ref, sets
    if "reduce" in todo:
        x = cp.floor(uniform(n, 4) * 16)
        ref = x.reshape(-1, BLOCK).astype(cp.float64).sum(axis=1)
        sets = copies(4 * (n + blocks), lambda: Set(x=x.copy(), out=cp.empty(blocks, cp.float32)))
        reset = lambda s: s.out.fill(cp.nan)
        check = lambda s: exact(s.out.astype(cp.float64), ref)
        k = b.cuda_c("reduce")
        size = label("reduce", n, m)
        checked = "every element, exactly (integer-valued), against float64 through CuPy"
        b.measure("reduce", CUDA_C, size, sets, reset, lambda s: k(grid1, (BLOCK,), (np.uint32(n), s.x, s.out)),
                  check, checked, nbytes=4 * (n + blocks), regs=lambda: k.num_regs)
        b.measure("reduce", "CuPy sum (per 256)", size, sets, reset,
                  lambda s: cp.sum(s.x.reshape(-1, BLOCK), axis=1, out=s.out), check, checked,
                  nbytes=4 * (n + blocks))
        del x, ref, sets
    if "softmax" in todo:
        rows = n // BLOCK
        x = uniform(n, 1)
        x64 = x.reshape(rows, BLOCK).astype(cp.float64)
        e = cp.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        del x64, e
        sets = copies(8 * n, lambda: Set(x=x.copy(), y=cp.empty_like(x)))
        reset = lambda s: s.y.fill(cp.nan)
        check = lambda s: close(s.y, ref, 1e-5)
        k = b.cuda_c("softmax")
        size = label("softmax", n, m)
        b.measure("softmax", CUDA_C, size, sets, reset, lambda s: k((rows,), (BLOCK,), (np.uint32(BLOCK), s.x, s.y)),
                  check, c_checked, nbytes=8 * n, regs=lambda: k.num_regs)
        if torch:
            tsets = [Set(x=torch.as_tensor(s.x, device="cuda").view(rows, BLOCK), y=None) for s in sets]
            b.measure("softmax", "torch softmax", size, tsets, lambda s: None,
                      lambda s: setattr(s, "y", torch.softmax(s.x, dim=1)),
                      lambda s: close(cp.asarray(s.y), ref, 1e-5), c_checked, nbytes=8 * n)
            del tsets
        del x, ref, sets
    if "scan" in todo:
        x = (uniform(n, 5) * 65536).astype(cp.uint32)
        ref = cp.cumsum(x.reshape(-1, BLOCK).astype(cp.uint64), axis=1).astype(cp.uint32)
        sets = copies(8 * n, lambda: Set(x=x.copy(), out=cp.empty_like(x)))
        reset = lambda s: s.out.fill(0xFFFFFFFF)
        check = lambda s: exact(s.out, ref)
        k = b.cuda_c("scan")
        size = label("scan", n, m)
        checked = "every element, exactly, against CuPy in 64-bit integers"
        b.measure("scan", CUDA_C, size, sets, reset, lambda s: k(grid1, (BLOCK,), (np.uint32(n), s.x, s.out)),
                  check, checked, nbytes=8 * n, regs=lambda: k.num_regs)
        b.measure("scan", "CuPy cumsum (per 256)", size, sets, reset,
                  lambda s: cp.cumsum(s.x.reshape(-1, BLOCK), axis=1, dtype=cp.uint32, out=s.out.reshape(-1, BLOCK)),
                  check, checked, nbytes=8 * n)
        del x, ref, sets
    if "histogram" in todo:
        data = (uniform(n, 6) * BINS).astype(cp.uint32)
        ref = cp.asarray(np.bincount(cp.asnumpy(data), minlength=BINS).astype(np.uint32))
        sets = copies(4 * n, lambda: Set(data=data.copy(), hist=cp.zeros(BINS, cp.uint32)))
        reset = lambda s: s.hist.fill(0)
        checked = "every bin, exactly, against NumPy's bincount"
        k = b.cuda_c("histogram")
        size = label("histogram", n, m)
        b.measure("histogram", CUDA_C, size, sets, reset,
                  lambda s: k(grid1, (BLOCK,), (np.uint32(n), np.uint32(BINS), s.data, s.hist)),
                  lambda s: exact(s.hist, ref), checked, nbytes=4 * (n + BINS), regs=lambda: k.num_regs)
        b.measure("histogram", "CuPy bincount", size, sets, reset,
                  lambda s: setattr(s, "hist", cp.bincount(s.data, minlength=BINS)),
                  lambda s: exact(s.hist.astype(cp.uint32), ref), checked, nbytes=4 * (n + BINS))
        del data, ref, sets
    if "matmul" in todo:
        a, bm = uniform(m * m, 7).reshape(m, m), uniform(m * m, 8).reshape(m, m)
        ref = a.astype(cp.float64) @ bm.astype(cp.float64)
        sets = copies(12 * m * m, lambda: Set(a=a.copy(), b=bm.copy(), c=cp.empty_like(a)))
        reset = lambda s: s.c.fill(cp.nan)
        check = lambda s: close(s.c, ref, 1e-4)
        checked = "every element against float64 through CuPy (cuBLAS DGEMM), within 1e-4 relative"
        k = b.cuda_c("matmul")
        tiles = -(-m // 16)
        size = label("matmul", n, m)
        b.measure("matmul", CUDA_C, size, sets, reset,
                  lambda s: k((tiles, tiles), (16, 16), (np.uint32(m), np.uint32(m), np.uint32(m), s.a, s.b, s.c)),
                  check, checked, flops=2.0 * m ** 3, regs=lambda: k.num_regs)
        b.measure("matmul", "cuBLAS SGEMM", size, sets, reset, lambda s: cp.matmul(s.a, s.b, out=s.c), check, checked,
                  flops=2.0 * m ** 3)
        del a, bm, ref, sets
    if ("copy", str(n)) not in done:
        done.add(("copy", str(n)))
        src = uniform(n, 9)
        sets = [Set(src=src, dst=cp.empty_like(src))]
        b.measure("copy", "cudaMemcpy device to device (ceiling)", str(n), sets, lambda s: s.dst.fill(cp.nan),
                  lambda s: s.dst.data.copy_from_device_async(s.src.data, 4 * n),
                  lambda s: exact(s.dst, s.src), "every element, exactly", nbytes=8 * n)
        del src, sets
    cp.get_default_memory_pool().free_all_blocks()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", default=".")
    p.add_argument("--size", action="append", required=True, help="ELEMENTS:MATMUL")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--batches", type=int, default=25)
    p.add_argument("--batch-ms", type=float, default=20.0)
    p.add_argument("--date", default=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    p.add_argument("--driver")
    a = p.parse_args()
    kernels = [k for k in a.kernels.split(",") if k]
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        sys.exit(f"unknown kernels {unknown} (expected some of {KERNELS})")
    b = Bench(a)
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch sees no CUDA GPU")
    except ImportError as e:
        torch = None
        b.skipped("torch softmax and gelu", str(e))
    done = set()
    for s in a.size:
        n, m = (int(v) for v in s.split(":"))
        run(b, n, m, kernels, done, torch)


main()
