"""Plots the first-launch figures of a `relok bench cuda --json` record
(docs/bench/*.json) as grouped bars on a log scale, with CuPy's and
Triton's warm starts from scripts/bench_peers.py as reference lines.

    python3 scripts/plot_bench.py docs/bench/cuda-h200-2026-11-30.json docs/img/cuda-first-launch.png
"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

# scripts/bench_peers.py on the same machine and day (warm kernel caches).
PEERS = {"CuPy warm (after imports + context)": 0.38, "Triton warm (after imports + context)": 442.0}

def main(src, dst):
    r = json.load(open(src))
    examples = list(dict.fromkeys(s["example"] for s in r["starts"]))
    modes = list(dict.fromkeys(s["mode"] for s in r["starts"]))
    ms = {(s["example"], s["mode"]): s["median_us"] / 1e3 for s in r["starts"]}
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        xs = [j + i * width for j in range(len(examples))]
        ax.bar(xs, [ms[(e, mode)] for e in examples], width, label=mode)
    for (name, v), style in zip(PEERS.items(), ["--", ":"]):
        ax.axhline(v, color="black", linestyle=style, linewidth=1, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("first launch in a new process, ms (log)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(examples))])
    ax.set_xticklabels(examples)
    ax.set_title(f"relok first launch on {r['device']} (driver CUDA {r['driver']}), medians of {r['runs']} processes")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)

main(sys.argv[1], sys.argv[2])
