"""Tables and a plot of a `relok bench kernels --json` record (one JSON
object per line: measurements, and {"skipped": …} lines), e.g.
docs/bench/kernels-h200-2026-12-02.jsonl.

    python3 scripts/plot_kernels.py RECORD.jsonl            # the Markdown tables of docs/benchmarks.md
    python3 scripts/plot_kernels.py RECORD.jsonl PLOT.png   # and the plot (needs matplotlib)

One table per device relok ran on, at that device's sizes: per kernel each
relok variant's time and its ratio to the CUDA C twin at the same size, the
CUDA C twin's time, the fastest library's, and registers per thread (each
relok variant's in the columns' order, then the CUDA C twin's). The plot
shows, per device relok ran on, every time over the CUDA C twin's (log
scale; 1 = as fast as CUDA C).
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
    backends = list(dict.fromkeys(r["backend"] for r in records if relok_variant(r)))
    fig, axes = plt.subplots(len(backends), 1, figsize=(12, 4.5 * len(backends)), squeeze=False)
    colors = plt.get_cmap("tab10").colors
    first = records[0]
    for ax, backend in zip(axes[:, 0], backends):
        # Each relok variant on this device, and the fastest library at the
        # device's size, per kernel.
        bars, libs, sizes = {}, {}, {}
        for kernel in KERNELS:
            mine = [r for r in records if r["kernel"] == kernel and r["backend"] == backend and relok_variant(r)]
            for r in mine:
                if r.get("ratio") is not None:
                    bars.setdefault(r["variant"], {})[kernel] = r["ratio"]
            if mine:
                sizes[kernel] = mine[0]["size"]
                peers = [r for r in records if r["kernel"] == kernel and r["size"] == mine[0]["size"]
                         and not relok_variant(r) and r["variant"] != CUDA_C and r.get("ratio") is not None]
                if peers:
                    libs[kernel] = min(peers, key=lambda r: r["ratio"])
        bars["fastest library"] = {k: r["ratio"] for k, r in libs.items()}
        width = 0.8 / max(1, len(bars))
        for i, (name, ratios) in enumerate(bars.items()):
            ks = [k for k in KERNELS if k in ratios]
            xs = [KERNELS.index(k) + i * width for k in ks]
            ax.bar(xs, [ratios[k] for k in ks], width, label=name, color=colors[i % len(colors)])
            if name == "fastest library":
                for x, k in zip(xs, ks):
                    ax.text(x, ratios[k] * 1.05, libs[k]["variant"], rotation=90, fontsize=6, ha="center", va="bottom")
        ax.axhline(1.0, color="black", linewidth=1, label="CUDA C twin (NVRTC), same size")
        ax.set_yscale("log")
        top = max(v for ratios in bars.values() for v in ratios.values())
        ax.set_ylim(top=top * 5)
        ax.set_ylabel("time / CUDA C twin's (log)")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(KERNELS))])
        ax.set_xticklabels([f"{k}\n{sizes.get(k, '')}" for k in KERNELS], fontsize=8)
        device = next(r["device"] for r in records if r["backend"] == backend and relok_variant(r))
        ax.set_title(f"relok on {device}: below 1, faster than the CUDA C twin", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(f"relok bench kernels, {first['date']}, {first.get('driver') or ''}", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


def main():
    records, skipped = load(sys.argv[1])
    print(tables(records, skipped))
    if len(sys.argv) > 2:
        plot(records, sys.argv[2])


main()
