"""Tables and a plot of a `relok bench kernels --json` record (one JSON
object per line: measurements, and {"skipped": …} lines), e.g.
docs/bench/kernels-h200-2026-12-02.jsonl.

    python3 scripts/plot_kernels.py RECORD.jsonl            # the Markdown tables of docs/benchmarks.md
    python3 scripts/plot_kernels.py RECORD.jsonl PLOT.png   # and the plot (needs matplotlib)

One table per device relok ran on, at that device's sizes: per kernel each
relok variant's time and its ratio to the CUDA C twin at the same size, the
CUDA C twin's time, the fastest library's, and registers per thread (relok
.rk / Rust twin / CUDA C). The plot shows every time over the CUDA C twin's
(log scale; 1 = as fast as CUDA C).
"""
import json, sys

CUDA_C = "CUDA C (NVRTC)"
KERNELS = ["saxpy", "gelu", "reduce", "softmax", "scan", "histogram", "matmul"]


def load(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    return [r for r in lines if "kernel" in r], [r for r in lines if "skipped" in r]


def relok_variant(r):
    return r["variant"].startswith(".rk") or r["variant"].startswith("Rust twin")


def ms(r):
    return "FAILED" if r["ms"] is None else f"{r['ms']:.3f}"


def times(r):
    return "" if r.get("ratio") is None else f" ({r['ratio']:.2f}×)"


def tables(records, skipped):
    out = []
    first = records[0]
    out.append(f"Run {first['date']}, {first.get('driver') or 'no NVIDIA driver'}; medians of "
               f"{max(r['batches'] for r in records)} batches; in brackets: the time over the CUDA C twin's "
               f"at the same size (below 1: faster).")
    for backend in dict.fromkeys(r["backend"] for r in records if relok_variant(r)):
        mine = [r for r in records if r["backend"] == backend and relok_variant(r)]
        device = mine[0]["device"]
        variants = list(dict.fromkeys(r["variant"] for r in mine))
        out.append("")
        out.append(f"relok on {backend} ({device}):")
        out.append("")
        head = ["kernel", "size"] + [f"{v}, ms" for v in variants] + ["CUDA C, ms", "fastest library, ms", "registers"]
        out.append("| " + " | ".join(head) + " |")
        out.append("| --- | --- | " + " | ".join("---:" for _ in head[2:]) + " |")
        for kernel in KERNELS:
            rows = [r for r in mine if r["kernel"] == kernel]
            if not rows:
                continue
            size = rows[0]["size"]
            peers = [r for r in records if r["kernel"] == kernel and r["size"] == size and not relok_variant(r)]
            c = [r for r in peers if r["variant"] == CUDA_C]
            libs = sorted((r for r in peers if r["variant"] != CUDA_C and r["ms"] is not None), key=lambda r: r["ms"])
            cells = [kernel, size]
            for v in variants:
                r = next((r for r in rows if r["variant"] == v), None)
                cells.append("-" if r is None else ms(r) + times(r))
            cells.append(ms(c[0]) if c else "-")
            cells.append(f"{libs[0]['variant']}: {ms(libs[0])}{times(libs[0])}" if libs else "-")
            regs = [next((str(r["registers"]) for r in rows if r["variant"] == v and r["registers"] is not None), "-")
                    for v in variants]
            regs.append(str(c[0]["registers"]) if c and c[0]["registers"] is not None else "-")
            cells.append(" / ".join(regs))
            out.append("| " + " | ".join(cells) + " |")
    for r in records:
        if r["kernel"] == "copy" and r["ms"] is not None:
            out.append("")
            out.append(f"Copy ceiling ({r['variant']}, {r['size']} f32): {r['ms']:.3f} ms, {r['gb_s']:.0f} GB/s "
                       "(bytes read + written).")
    for r in records:
        if r["error"]:
            out.append(f"\nFAILED: {r['kernel']} {r['size']} {r['backend']} {r['variant']}: {r['error']}")
    for s in skipped:
        out.append(f"\nSkipped: {s['skipped']}: {s['why']}")
    return "\n".join(out)


def plot(records, dst):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # Per kernel: each relok variant on each device (at that device's size),
    # and the fastest library at the size of the first device's records.
    bars, libs = {}, {}
    for kernel in KERNELS:
        mine = [r for r in records if r["kernel"] == kernel and relok_variant(r)]
        for r in mine:
            if r.get("ratio") is not None:
                bars.setdefault(f"relok on {r['backend']}, {r['variant']}", {})[kernel] = r["ratio"]
        if mine:
            peers = [r for r in records if r["kernel"] == kernel and r["size"] == mine[0]["size"]
                     and not relok_variant(r) and r["variant"] != CUDA_C and r.get("ratio") is not None]
            if peers:
                libs[kernel] = min(peers, key=lambda r: r["ratio"])
    bars["fastest library"] = {k: r["ratio"] for k, r in libs.items()}
    fig, ax = plt.subplots(figsize=(13, 5))
    width = 0.8 / max(1, len(bars))
    colors = plt.get_cmap("tab10").colors
    for i, (name, ratios) in enumerate(bars.items()):
        xs = [j + i * width for j, k in enumerate(KERNELS) if k in ratios]
        ys = [ratios[k] for k in KERNELS if k in ratios]
        ax.bar(xs, ys, width, label=name, color=colors[i % len(colors)])
        if name == "fastest library":
            for x, k in zip(xs, [k for k in KERNELS if k in ratios]):
                ax.text(x, ratios[k] * 1.05, libs[k]["variant"], rotation=90, fontsize=6, ha="center", va="bottom")
    ax.axhline(1.0, color="black", linewidth=1, label="CUDA C twin (NVRTC), same size")
    ax.set_yscale("log")
    ax.set_ylabel("time / CUDA C twin's time (log; below 1: faster)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(KERNELS))])
    ax.set_xticklabels(KERNELS)
    first = records[0]
    sizes = ", ".join(dict.fromkeys(f"{r['backend']} {r['size']}" for r in records
                                    if relok_variant(r) and r["kernel"] == "saxpy"))
    ax.set_title(f"relok bench kernels, {first['date']}, {first.get('driver') or ''}; 1-D sizes: {sizes}", fontsize=9)
    top = max(v for ratios in bars.values() for v in ratios.values())
    ax.set_ylim(top=top * 3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


def main():
    records, skipped = load(sys.argv[1])
    print(tables(records, skipped))
    if len(sys.argv) > 2:
        plot(records, sys.argv[2])


main()
