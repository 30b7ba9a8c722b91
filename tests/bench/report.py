"""What a run measured, the team's targets, and the one table (and JSON) that reports both.

Every figure is shown with the floor's fraction next to it, "(n%)": the share of the floor's speed
reached, so 100% means as fast as a bare aiohttp handler sending the same bytes. For rates (req/s,
MB/s) that is server ÷ floor; for latencies it is floor ÷ server. A server with several workers can
exceed 100%, the floor being one process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Workload keys, in the order the table prints them, with their labels.
WORKLOADS: dict[str, str] = {
    "get_c1": "GET one object, 1 conn",
    "get_c8": "GET one object, 8 conns",
    "create_c8": "CREATE, 8 conns",
    "update_c8": "UPDATE (merge PATCH), 8 conns",
    "delete_collection": "DELETE collection of CREATE's (items/s)",
    "list_all": "LIST {objects} (no limit), 1 conn",
    "list_all_pb": "LIST {objects} in protobuf, 1 conn",
    "list_all_meta_pb": "LIST {objects} as metadata-only protobuf (GC's), 1 conn",
    "list_paged": "LIST limit={limit}: 1 pass, 1 conn",
    "watch": "WATCH {watchers} x {events} @ {rate}/s",
    "watch_pb": "WATCH {watchers} x {events} @ {rate}/s in protobuf",
    "watch_meta_pb": "WATCH {watchers} x {events} @ {rate}/s as metadata-only protobuf",
    "rss_idle": "RSS idle",
    "rss_objects": "RSS with {objects} objects",
    "rss_watches": "RSS with {watchers} watches",
}
RATES = ("rps", "mb_s")
LATENCIES = ("p50_ms", "p99_ms", "pass_ms")


@dataclass(slots=True)
class Row:
    """One workload measured on one server configuration (backend "floor" for the floor)."""

    backend: str
    config: str
    workload: str
    figures: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class Target:
    """A figure the team tracks: which row, which check, and whether a --quick run can judge it."""

    workload: str
    text: str
    check: Callable[[Row], bool]
    backends: tuple[str, ...] = ("embedded", "etcd")
    full_size_only: bool = False


TARGETS: tuple[Target, ...] = (
    Target("get_c8", ">= 4,000 req/s", lambda r: r.figures["rps"] >= 4000),
    Target(
        "list_all",
        "p50 <= 35 ms (10,000)",
        lambda r: r.figures["p50_ms"] <= 35,
        full_size_only=True,
    ),
    Target(
        "watch",
        "p99 <= 50 ms, none lost/dup",
        lambda r: (
            r.figures["p99_ms"] <= 50
            and r.figures.get("sent", 100) >= 100
            and r.figures["lost"] == 0
            and r.figures["duplicated"] == 0
            and r.figures["watch_failed"] == 0
        ),
        full_size_only=True,
    ),
    Target("create_c8", ">= 1,000 req/s", lambda r: r.figures["rps"] >= 1000, backends=("etcd",)),
    Target("create_c8", ">= 1,200 req/s", lambda r: r.figures["rps"] >= 1200, backends=("embedded",)),
    Target(
        "rss_watches",
        "<= +40 MB for 1,000",
        lambda r: r.figures["delta_mb"] <= 40,
        full_size_only=True,
    ),
    Target(
        "rss_objects",
        "<= 2x encoded size",
        lambda r: r.figures["x_encoded"] <= 2.0,
        full_size_only=True,
    ),
)


def target_for(row: Row) -> Target | None:
    return next((t for t in TARGETS if t.workload == row.workload and row.backend in t.backends), None)


def judge(row: Row, full_size: bool) -> tuple[str, str]:
    """(target text, mark): PASS/FAIL, "n/a" for a quick run's too-small counts, "ERR" if it failed."""
    target = target_for(row)
    if target is None:
        return "", ""
    if row.error:
        return target.text, "ERR"
    if target.full_size_only and not full_size:
        return target.text, "n/a"
    try:
        return target.text, "PASS" if target.check(row) else "FAIL"
    except KeyError:
        return target.text, "?"


def floor_fraction(figure: str, value: float, floor: Row | None) -> float | None:
    """The share of the floor's speed this figure reaches (see the module docstring)."""
    if floor is None or floor.error or figure not in floor.figures:
        return None
    reference = floor.figures[figure]
    if not value or not reference or math.isnan(value) or math.isnan(reference):
        return None
    if figure in RATES:
        return value / reference
    if figure in LATENCIES:
        return reference / value
    return None


def number(value: float) -> str:
    """A figure with the digits that matter at its size ("nan" for a missing one)."""
    if math.isnan(value):
        return "nan"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(row: Row, figure: str, floor: Row | None) -> str:
    if figure not in row.figures:
        return ""
    value = row.figures[figure]
    fraction = floor_fraction(figure, value, floor)
    text = number(value)
    return f"{text} ({fraction:.0%})" if fraction is not None else text


def _other(row: Row, floor: Row | None, sizes: dict[str, Any]) -> str:
    """The column for what is not a rate or a latency quantile: MB/s, pass time, losses, memory."""
    f = row.figures
    if row.workload.startswith("list_all") and "mb_s" in f:
        return f"{_cell(row, 'mb_s', floor)} MB/s, {f.get('mb', 0):.1f} MB"
    if row.workload == "list_paged" and "pass_ms" in f:
        return f"pass {_cell(row, 'pass_ms', floor)} ms, {f.get('pages', 0):.0f} pages"
    if row.workload.startswith("watch") and "lost" in f:
        text = f"lost {f['lost']:.0f}, dup {f['duplicated']:.0f}"
        if f.get("runs", 1) > 1:
            text += f"; p99 of {f['runs']:.0f} runs {f['p99_min_ms']:.1f}-{f['p99_max_ms']:.1f}"
        if f.get("sent", sizes["events"]) < sizes["events"]:
            text += f", sent {f['sent']:.0f}/{sizes['events']}"
        return text + (f", {f['watch_failed']:.0f} failed" if f.get("watch_failed") else "")
    if row.workload == "delete_collection" and "items" in f:
        return f"{f['items']:,.0f} items in {f['seconds']:.2f} s"
    if row.workload == "rss_idle" and "mb" in f:
        return f"{f['mb']:.0f} MB"
    if row.workload == "rss_objects" and "mb" in f:
        return (
            f"{f['mb']:.0f} MB (+{f['delta_mb']:.0f} = {f['x_encoded']:.1f}x encoded {f['encoded_mb']:.1f})"
        )
    if row.workload == "rss_watches" and "peak_mb" in f:
        return f"{f['mb']:.0f} MB (+{f['delta_mb']:.0f}); fan-out peak +{f['peak_delta_mb']:.0f}"
    return ""


def label(workload: str, sizes: dict[str, Any]) -> str:
    return WORKLOADS.get(workload, workload).format(
        objects=f"{sizes['objects']:,}",
        limit=sizes["page_limit"],
        watchers=f"{sizes['watchers']:,}",
        events=sizes["events"],
        rate=f"{sizes['rate']:g}",
    )


def ordered(rows: Iterable[Row]) -> list[Row]:
    """Configurations in the order they ran (the floor last), workloads in WORKLOADS order."""
    rows = list(rows)
    groups: dict[tuple[str, str], int] = {}
    for row in rows:
        groups.setdefault((row.backend, row.config), len(groups))
    position = {key: i for i, key in enumerate(WORKLOADS)}
    return sorted(
        rows,
        key=lambda r: (r.backend == "floor", groups[r.backend, r.config], position.get(r.workload, -1)),
    )


def table(rows: Iterable[Row], sizes: dict[str, Any], full_size: bool) -> str:
    """Plain aligned text: one line per (backend, config, workload); the floor's own lines last."""
    rows = ordered(rows)
    floors = {r.workload: r for r in rows if r.backend == "floor"}
    header = ["backend", "config", "workload", "req/s", "p50 ms", "p99 ms", "other", "target", "ok"]
    lines: list[list[str]] = []
    for row in rows:
        floor = floors.get(row.workload) if row.backend != "floor" else None
        target, mark = judge(row, full_size) if row.backend != "floor" else ("", "")
        if row.error:
            cells = ["", "", "", f"ERROR: {row.error[:70]}"]
        else:
            cells = [
                _cell(row, "rps", floor),
                _cell(row, "p50_ms", floor),
                _cell(row, "p99_ms", floor),
                _other(row, floor, sizes),
            ]
        lines.append([row.backend, row.config, label(row.workload, sizes), *cells, target, mark])
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header))]
    right = {3, 4, 5}

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    out = [fmt(header).rstrip(), "  ".join("-" * w for w in widths)]
    previous = None
    for cells in lines:
        if previous is not None and cells[:2] != previous:
            out.append("")
        previous = cells[:2]
        out.append(fmt(cells).rstrip())
    return "\n".join(out)


def write_json(path: Path, rows: Iterable[Row], meta: dict[str, Any], full_size: bool) -> None:
    """The raw numbers (and the tools' own output lines) for later comparison."""
    records = []
    for row in rows:
        record = asdict(row)
        if row.backend != "floor":
            record["target"], record["ok"] = judge(row, full_size)
        records.append(record)
    path.write_text(json.dumps({"meta": meta, "rows": records}, indent=1, default=str) + "\n")
