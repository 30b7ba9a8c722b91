"""The chart for docs/performance.png: each configuration's figures next to the floor and the targets.

matplotlib is an optional extra (`pip install -e '.[bench]'`), imported only when a plot is asked
for, so the benchmark itself runs with the test extras alone.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tests.bench.report import Row, label

# (workload, figure, target value or None): what each panel shows.
THROUGHPUT = (
    ("get_c1", "rps", None),
    ("get_c8", "rps", 4000.0),
    ("create_c8", "rps", None),
    ("update_c8", "rps", None),
)
LATENCY = (
    ("get_c1", "p50_ms", None),
    ("list_all", "p50_ms", 35.0),
    ("list_paged", "p50_ms", None),
    ("watch", "p99_ms", 50.0),
)
CREATE_TARGETS = {"embedded": 1200.0, "etcd": 1000.0}


def memory_targets(rows: list[Row], backend: str) -> tuple[float | None, float | None]:
    """The RSS each memory target allows: idle + 2x the encoded objects, the RSS before watches + 40 MB."""

    def figures(workload: str) -> dict[str, float]:
        match = next(
            (r for r in rows if (r.backend, r.config, r.workload) == (backend, "default", workload)), None
        )
        return match.figures if match and not match.error else {}

    idle, objects, watches = figures("rss_idle"), figures("rss_objects"), figures("rss_watches")
    objects_limit = (
        idle["mb"] + 2 * objects["encoded_mb"] if "mb" in idle and "encoded_mb" in objects else None
    )
    watches_limit = watches["before_mb"] + 40 if "before_mb" in watches else None
    return objects_limit, watches_limit


def write_plot(path: Path, rows: list[Row], sizes: dict[str, Any], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = sorted(
        {(r.backend, r.config) for r in rows if not r.error},
        key=lambda bc: (bc[0] == "floor", bc),
    )
    fig, axes = plt.subplots(1, 3, figsize=(17, 6), gridspec_kw={"width_ratios": [4, 4, 2]})
    width = 0.8 / max(1, len(series))

    def panel(ax: Any, spec: tuple[tuple[str, str, float | None], ...], ylabel: str, log: bool) -> None:
        for i, (backend, config) in enumerate(series):
            values = []
            for workload, figure, _ in spec:
                match = next(
                    (r for r in rows if (r.backend, r.config, r.workload) == (backend, config, workload)),
                    None,
                )
                values.append(match.figures.get(figure, 0.0) if match and not match.error else 0.0)
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(spec))]
            hatch = "//" if backend == "floor" else None
            ax.bar(
                xs,
                values,
                width,
                label=f"{backend} / {config}",
                hatch=hatch,
                edgecolor="black",
                linewidth=0.4,
            )
        for x, (workload, _, target) in enumerate(spec):
            if workload == "create_c8":
                for backend, value in CREATE_TARGETS.items():
                    ax.hlines(
                        value, x - 0.45, x + 0.45, colors="red", linestyles=":" if backend == "etcd" else "--"
                    )
            elif target is not None:
                ax.hlines(target, x - 0.45, x + 0.45, colors="red", linestyles="--")
        ax.set_xticks(range(len(spec)))
        ax.set_xticklabels(
            [
                "\n".join(textwrap.wrap(label(w, sizes), 20))
                + f"\n({f.replace('_ms', '').replace('rps', 'req/s')})"
                for w, f, _ in spec
            ],
            fontsize=7,
        )
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)

    panel(axes[0], THROUGHPUT, "requests per second (higher is better)", log=False)
    axes[0].set_title("Throughput (hatched: the aiohttp floor; red: targets)")
    panel(axes[1], LATENCY, "milliseconds (log scale, lower is better)", log=True)
    axes[1].set_title("Latency")

    backends = [b for b in ("embedded", "etcd") if any(r.backend == b for r in rows)]
    memory = ("rss_idle", "rss_objects", "rss_watches")
    for i, backend in enumerate(backends):
        values = []
        for workload in memory:
            match = next(
                (r for r in rows if (r.backend, r.config, r.workload) == (backend, "default", workload)), None
            )
            values.append(match.figures.get("mb", 0.0) if match and not match.error else 0.0)
        w = 0.8 / max(1, len(backends))
        xs = [x + (i - (len(backends) - 1) / 2) * w for x in range(3)]
        axes[2].bar(xs, values, w, label=backend)
        for x, limit in zip(xs[1:], memory_targets(rows, backend), strict=True):
            if limit is not None:
                axes[2].hlines(limit, x - w / 2, x + w / 2, colors="red", linestyles="--")
    axes[2].set_xticks(range(3))
    axes[2].set_xticklabels(["\n".join(textwrap.wrap(label(w, sizes), 14)) for w in memory], fontsize=7)
    axes[2].set_ylabel("server RSS, MB (process + children)")
    axes[2].set_title("Memory, default config (red: targets)", fontsize=10)
    axes[2].grid(axis="y", alpha=0.3)
    axes[2].legend(fontsize=7)

    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
