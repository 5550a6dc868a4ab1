"""Plots a `relok bench start --json` record (docs/bench/start-*.json):
the first launch in a new process on cuda, relok's modes beside CuPy's and
Triton's cold and warm caches, for one kernel and for the application of
N kernels, as horizontal bars on a log scale.

    python3 scripts/plot_start.py docs/bench/start-h200-2026-12-01.json docs/img/start-h200.png
"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def bars(rows, peers, app):
    """(label, ms, who) for one panel: relok's cuda rows, then the peers."""
    out = []
    for r in rows:
        if r["device"] == "cuda" and (" kernels" in r["mode"]) == app:
            out.append((f"relok, {r['mode']}", r["first_us"] / 1e3, "relok"))
    for p in peers:
        if (" kernels" in p["tool"]) == app:
            out.append((f"{p['tool']}, {p['cache']}", p["first_ms"], p["tool"].split()[0].rstrip(",")))
    return out


def main(src, dst):
    r = json.load(open(src))
    colors = {"relok": "tab:blue", "CuPy": "tab:orange", "Triton": "tab:green"}
    panels = [("one kernel", bars(r["rows"], r["peers"], False)), ("application", bars(r["rows"], r["peers"], True))]
    fig, axes = plt.subplots(2, 1, figsize=(10, 8))
    for ax, (title, data) in zip(axes, panels):
        labels = [d[0] for d in data]
        ax.barh(range(len(data)), [d[1] for d in data], color=[colors.get(d[2], "gray") for d in data])
        for i, d in enumerate(data):
            ax.text(d[1], i, f" {d[1]:.3g} ms", va="center", fontsize=7)
        ax.set_yticks(range(len(data)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("first result in a new process, ms from after the context (log)")
        ax.set_title(title, fontsize=9)
    driver = r.get("driver") or "no NVIDIA driver reported"
    fig.suptitle(f"relok bench start, {r.get('date_utc', 'date unknown')}, {driver}; medians of {r['runs']} children", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


main(sys.argv[1], sys.argv[2])
