#!/usr/bin/python3
"""plot.py — the PNGs of docs/BENCHMARKS.md's issue-7 section, from the raw
figures bench/peers/*.sh write to OUT: throughput (batch), RSS (batch and
soak), freshness (live), the soak's batch/commit times per epoch and, when
the soak ran with SOAK_VERBOSE=1, its commit split and load (bench-soak-commit.png).
Needs matplotlib (Debian's python3-matplotlib; bench/peers.sh installs it).
usage: plot.py OUT IMG_DIR N"""
import collections
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT, IMG, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(IMG, exist_ok=True)
med = statistics.median


def lines(name):
    p = os.path.join(OUT, name)
    return [l.split() for l in open(p)] if os.path.exists(p) else []


def save(fig, name):
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, name), dpi=110)
    plt.close(fig)
    print(os.path.join(IMG, name))


# ---------------------------------------------------------------- batch
runs = collections.defaultdict(list)
for r, e, p, w, c, m in lines("batch.tsv"):
    runs[(e, p)].append((float(w), float(c), int(m)))
bars = [("freshet ingest", ("freshet", "ingest"), "#7fa7d6"),
        ("freshet process", ("freshet", "process"), "#1f5fa8"),
        ("DuckDB", ("duckdb", "job"), "#d9a33b"),
        ("Polars", ("polars", "job"), "#4c9a62"),
        ("zstd -1 -T2", ("limit", "zstd1T2"), "#999999"),
        ("cat (page cache)", ("limit", "cat"), "#cccccc")]
bars = [(l, k, c) for l, k, c in bars if k in runs]
if bars:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    eps = [N / max(0.01, med(x[0] for x in runs[k])) for _, k, _ in bars]
    a1.barh([l for l, _, _ in bars], eps, color=[c for _, _, c in bars])
    a1.set_xscale("log")
    a1.invert_yaxis()
    a1.set_xlabel("events/s (log scale, median of rounds)")
    a1.set_title(f"Throughput, {N:,} events")
    for i, v in enumerate(eps):
        a1.text(v, i, f" {v:,.0f}", va="center", fontsize=8)
    a1.set_xlim(right=max(eps) * 8)
    engines = [(l, k, c) for l, k, c in bars if k[0] != "limit"]
    rss = [med(x[2] for x in runs[k]) * 1024 / 1e6 for _, k, _ in engines]
    a2.barh([l for l, _, _ in engines], rss, color=[c for _, _, c in engines])
    a2.set_xscale("log")
    a2.invert_yaxis()
    a2.axvline(128, color="red", ls="--", lw=1)
    a2.text(128, len(engines) - 0.5, " 128 MB target", color="red", fontsize=8, va="bottom")
    a2.set_xlabel("peak RSS, MB (log scale)")
    a2.set_title("Peak memory, same job")
    for i, v in enumerate(rss):
        a2.text(v, i, f" {v:,.0f}", va="center", fontsize=8)
    a2.set_xlim(right=max(rss) * 6)
    save(fig, "bench-throughput.png")

# ---------------------------------------------------------------- live
curves = []
for f in sorted(os.listdir(OUT)) if os.path.isdir(OUT) else []:
    if f.startswith("live-") and f.endswith("-cdf.tsv"):
        _, rate, trig, _ = f.split("-")
        pts = [(float(q), float(ms)) for q, ms in lines(f)]
        curves.append((int(rate), int(trig), pts))
if curves:
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for rate, trig, pts in sorted(curves):
        ax.plot([ms / 1000 for _, ms in pts], [q for q, _ in pts],
                label=f"{rate:,} ev/s, trigger {trig / 1000:g} s",
                ls="-" if trig == 1000 else "--", color="#1f5fa8" if rate == 1000 else "#d9a33b")
    ax.set_xlabel("freshness, s (log entry → row committed in silver)")
    ax.set_ylabel("fraction of rows")
    ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Live freshness (round 1 of each setting)")
    save(fig, "bench-freshness.png")

# ---------------------------------------------------------------- soak
soak = {}
for name in ("shipped", "raw", "maint", "paused"):
    skip = {int(l[0]) for l in lines(f"soak-{name}-pauses.tsv")}
    ep = [tuple(map(int, l)) for l in lines(f"soak-{name}-epochs.tsv") if int(l[1]) not in skip]
    rs = [tuple(map(int, l)) for l in lines(f"soak-{name}-rss.tsv")]
    if ep:
        soak[name] = (ep, rs)


def rolling(xs, w=200):
    out = []
    for i in range(0, len(xs), max(1, w // 4)):
        win = xs[max(0, i - w // 2): i + w // 2]
        out.append((i, med(win)))
    return out


if soak:
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    colors = {"shipped": "#2e8b57", "raw": "#c0392b", "maint": "#d9a33b", "paused": "#1f5fa8"}
    labels = {"shipped": "as shipped (own compaction + expiry)", "raw": "maintenance off",
              "maint": "maintenance off, freshet compact beside it",
              "paused": "maintenance off, paused for freshet compact"}
    for name, (ep, rs) in soak.items():
        e0 = ep[0][1]
        for ax, col, what in ((axes[0], 2, "batch"), (axes[1], 3, "commit")):
            pts = rolling([e[col] for e in ep])
            ax.plot([ep[i][1] - e0 for i, _ in pts], [v for _, v in pts], color=colors[name], label=labels[name])
            ax.set_title(f"{what} ms per epoch (rolling median of 200)")
            ax.set_xlabel("epoch")
        # RSS against the epoch reached at each sample
        j, xs, ys = 0, [], []
        for t, kb in rs:
            while j + 1 < len(ep) and ep[j + 1][0] <= t:
                j += 1
            xs.append(ep[j][1] - e0)
            ys.append(kb / 1024)
        axes[2].plot(xs, ys, color=colors[name], label=labels[name])
    axes[2].set_title("processor RSS, MiB (/proc, 1 s samples)")
    axes[2].set_xlabel("epoch")
    axes[2].set_ylim(bottom=0)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, "bench-soak.png")

# The shipped run's commit split (SOAK_VERBOSE=1: "epoch N commit us: ...")
# and the machine's load average (soak-shipped-files.tsv, 5th column).
split = {}
for l in lines("soak-shipped-commit.log"):
    text = " ".join(l)
    if " commit us: " in text and "epoch" in l:
        w = text.split(" commit us: ", 1)[1].split(";")[0].split()
        split[int(l[l.index("epoch") + 1])] = dict(zip(w[0::2], map(int, w[1::2])))
if split and "shipped" in soak:
    ep, _ = soak["shipped"]
    e0 = ep[0][1]
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
    keys = sorted(split)
    parts = (("catalog row + base metadata", ("catalog-read", "load"), "#1f5fa8"), ("manifests", ("manifests",), "#d9a33b"),
             ("metadata write", ("metadata",), "#c0392b"), ("data files", ("files",), "#2e8b57"),
             ("swap + publish + finish", ("swap", "publish", "finish"), "#7f7f7f"))
    for label, ks, color in parts:
        pts = rolling([sum(split[k][x] for x in ks) / 1000 for k in keys])
        axes[0].plot([keys[i] - e0 for i, _ in pts], [v for _, v in pts], color=color, label=label)
    axes[0].set_title("commit ms per epoch by step (rolling median of 200)")
    axes[0].set_xlabel("epoch")
    axes[0].set_ylim(bottom=0)
    pts = rolling([e[3] for e in ep])
    axes[1].plot([ep[i][1] - e0 for i, _ in pts], [v for _, v in pts], color="#2e8b57", label="commit ms")
    axes[1].set_xlabel("epoch")
    axes[1].set_ylim(bottom=0)
    fl = [l for l in lines("soak-shipped-files.tsv") if len(l) >= 5]
    if fl:
        j, xs, ys = 0, [], []
        for l in fl:
            t = int(l[0])
            while j + 1 < len(ep) and ep[j + 1][0] <= t:
                j += 1
            xs.append(ep[j][1] - e0)
            ys.append(float(l[4]))
        ax2 = axes[1].twinx()
        ax2.plot(xs, ys, color="#7f7f7f", alpha=0.6, label="1-minute load average")
        ax2.set_ylim(bottom=0)
        ax2.legend(fontsize=8, loc="upper right")
    axes[1].set_title("commit ms (rolling median of 200) and the machine's load")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8, loc="upper left")
    save(fig, "bench-soak-commit.png")
