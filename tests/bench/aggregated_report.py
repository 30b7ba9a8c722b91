"""`--aggregated`'s table: each workload on our server beside the Go sample-apiserver, and the ratio.

Why a table of its own (report.table is one server against the floor): here every line pairs two
servers. The ratio is always "how many times better we are": ours/Go for rates, Go/ours for
latencies and memory, so > 1 means we are better and one target reads ">= 1.5x" whatever the figure.
Targets apply to the path users take (through the aggregator); the direct rows show what the
aggregator's proxying costs each server. PASS/FAIL/n/a/ERR as report.judge marks them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.bench.aggregated_workloads import OTHER_GROUP, OTHER_SERVER
from tests.bench.report import Row, number

MAX_ERROR = 60


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the table: a workload on one path, with how to compare and judge it."""

    workload: str
    config: str
    label: str
    figure: str  # the figure the ratio compares
    rate: bool  # True: ours/Go; False (latency, memory): Go/ours
    minimum: float | None = None  # target: ratio >= minimum
    full_size_only: bool = False
    extra: Callable[[Row], bool] | None = None  # a further condition on our row (nothing lost)


def _none_lost(row: Row) -> bool:
    f = row.figures
    return f["lost"] == 0 and f["duplicated"] == 0 and f["watch_failed"] == 0 and f["write_errors"] == 0


def lines(sizes: dict[str, Any]) -> list[Line]:
    objects, watchers = f"{sizes['objects']:,}", f"{sizes['watchers']:,}"
    fanout = f"WATCH {watchers} x {sizes['events']} @ {sizes['rate']:g}/s"
    out: list[Line] = []
    for via in ("aggregator", "direct"):
        judged = via == "aggregator"

        def t(value: float, judged: bool = judged) -> float | None:
            return value if judged else None

        out += [
            Line("get_c1", via, "GET one object, 1 conn", "rps", True, t(1.5)),
            Line("get_c8", via, "GET one object, 8 conns", "rps", True, t(1.5)),
            Line("get_c64", via, "GET one object, 64 conns", "rps", True, t(1.5)),
            Line("create_c8", via, "CREATE, 8 conns", "rps", True, t(1.0)),
            Line("list_all", via, f"LIST {objects} (no limit), 1 conn", "p50_ms", False, t(1.5), True),
            Line("list_paged_c4", via, f"LIST limit={sizes['page_limit']}, 4 conns", "rps", True, t(1.5)),
            Line("watch", via, fanout, "p99_ms", False, t(1.0), True, _none_lost),
            # Protobuf beside JSON: metadata-only (the controller manager's informers) on both
            # servers; the kind's own messages on ours only (sample-apiserver answers 406).
            Line(
                "list_all_meta_pb", via, f"LIST {objects} metadata-only protobuf", "p50_ms", False, None, True
            ),
            Line("list_all_pb", via, f"LIST {objects} in protobuf (ours only)", "p50_ms", False, None, True),
            Line(
                "watch_meta_pb",
                via,
                f"{fanout} metadata-only protobuf",
                "p99_ms",
                False,
                None,
                True,
                _none_lost,
            ),
            Line(
                "watch_pb", via, f"{fanout} in protobuf (ours only)", "p99_ms", False, None, True, _none_lost
            ),
        ]
    for config, who in ((OTHER_GROUP, "the other group"), (OTHER_SERVER, "another server")):
        for conns in (1, 8):
            out.append(
                Line(
                    f"get_c{conns}",
                    config,
                    f"GET {conns} conn{'s' if conns > 1 else ''} while {who} writes 100/s",
                    "rps",
                    True,
                    0.8,
                )
            )
    out += [
        Line(
            "rss_objects",
            "shared etcd",
            f"RSS with {objects} objects (per worker)",
            "worker_mb",
            False,
            1.0,
            True,
        ),
        Line(
            "rss_watches",
            "aggregator",
            f"RSS with {watchers} watches (per worker)",
            "worker_mb",
            False,
            1.0,
            True,
        ),
    ]
    return out


def describe(row: Row | None, workload: str) -> str:
    """One server's figures for a line, as text."""
    if row is None:
        return "-"
    if row.error:
        return "ERROR: " + row.error[:MAX_ERROR]
    f = row.figures
    if workload.startswith("get_") or workload == "create_c8":
        return f"{number(f['rps'])}/s p50 {number(f['p50_ms'])} p99 {number(f['p99_ms'])} ms"
    if workload.startswith("list_all"):
        return f"p50 {number(f['p50_ms'])} p99 {number(f['p99_ms'])} ms"
    if workload == "list_paged_c4":
        return f"{number(f['rps'])} pages/s p99 {number(f['p99_ms'])} ms"
    if workload.startswith("watch"):
        text = f"p50 {number(f['p50_ms'])} p99 {number(f['p99_ms'])} ms"
        text += f", lost {f['lost']:.0f} dup {f['duplicated']:.0f}"
        if f.get("runs", 1) > 1:
            text += f" ({f['runs']:.0f} runs, p99 {number(f['p99_min_ms'])}-{number(f['p99_max_ms'])})"
        return text + (f", {f['watch_failed']:.0f} failed" if f.get("watch_failed") else "")
    if workload.startswith("rss_"):
        if "supervisor_mb" not in f:
            text = f"{number(f['mb'])} MB"
        else:
            workers = "+".join(number(f[f"worker{i}_mb"]) for i in range(int(f["workers"])))
            text = f"{number(f['mb'])} MB = {number(f['supervisor_mb'])} sup. + {workers} workers"
        return text + (f" (+{number(f['delta_mb'])})" if "delta_mb" in f else "")
    return ""


def _ratio(line: Line, ours: Row | None, go: Row | None) -> float | None:
    if not ours or not go or ours.error or go.error:
        return None
    a, b = ours.figures.get(line.figure), go.figures.get(line.figure)
    if not a or not b:
        return None
    return a / b if line.rate else b / a


def _cross(
    rows: dict[tuple[str, str, str], Row], side: str, config: str, workload: str
) -> tuple[str, float | None]:
    """A reads-beside-writes cell: with/without, and their ratio."""
    alone = rows.get((side, "alone", workload))
    beside = rows.get((side, config, workload))
    if alone is None or beside is None:
        return "-", None
    if alone.error or beside.error:
        return "ERROR: " + (alone.error or beside.error)[:MAX_ERROR], None
    ratio = beside.figures["rps"] / alone.figures["rps"]
    return f"{number(beside.figures['rps'])}/s vs {number(alone.figures['rps'])} alone = {ratio:.2f}", ratio


def judged(rows: Iterable[Row], sizes: dict[str, Any], full_size: bool) -> list[dict[str, Any]]:
    """Every line's cells, ratio, target and mark: what the table prints and the JSON keeps."""
    index = {(r.backend, r.config, r.workload): r for r in rows}
    out = []
    measured = {(r.config, r.workload) for r in index.values()}
    for line in lines(sizes):
        if (line.config, line.workload) not in measured:
            continue  # a mode that does not measure it (--scale)
        record: dict[str, Any] = {"workload": line.workload, "path": line.config, "label": line.label}
        if line.config in (OTHER_GROUP, OTHER_SERVER):
            record["ours"], ratio = _cross(index, "ours", line.config, line.workload)
            record["go"], go_ratio = _cross(index, "go", line.config, line.workload)
            record["ratio_text"] = f"{ratio:.2f}" if ratio else ""
            if ratio and go_ratio:
                record["ratio_text"] += f" (Go {go_ratio:.2f})"
            failed = ratio is None
            ours = index.get(("ours", line.config, line.workload))
        else:
            ours = index.get(("ours", line.config, line.workload))
            go = index.get(("go", line.config, line.workload))
            record["ours"], record["go"] = describe(ours, line.workload), describe(go, line.workload)
            ratio = _ratio(line, ours, go)
            record["ratio_text"] = (
                f"{ratio:.2f}x {line.figure.removesuffix('_ms').removesuffix('_mb')}" if ratio else ""
            )
            failed = ratio is None
        record["ratio"] = ratio
        record["target"], record["ok"] = "", ""
        if line.minimum is not None:
            what = "ours w/ / w/o" if line.config in (OTHER_GROUP, OTHER_SERVER) else "x Go"
            record["target"] = f">= {line.minimum:g} {what}" if what != "x Go" else f">= {line.minimum:g}x Go"
            if failed:
                record["ok"] = "ERR"
            elif line.full_size_only and not full_size:
                record["ok"] = "n/a"
            else:
                good = ratio is not None and ratio >= line.minimum
                if good and line.extra is not None and ours is not None:
                    good = line.extra(ours)
                record["ok"] = "PASS" if good else "FAIL"
        out.append(record)
    return out


def writer_note(rows: Iterable[Row]) -> str:
    """The rate each 100/s writer really reached (a slower one makes its GET ratio look better)."""
    parts = []
    for row in rows:
        if row.config == "writer":
            reached = f"{row.figures['rps']:.0f}/s" if not row.error else f"ERROR {row.error[:MAX_ERROR]}"
            reader = row.workload.removeprefix("writes_beside_")
            parts.append(f"{row.backend} writing beside {reader}'s GETs: {reached}")
    return "; ".join(parts)


def table(records: list[dict[str, Any]]) -> str:
    header = ["workload", "path", "ours", "Go sample-apiserver", "ours vs Go", "target", "ok"]
    cells = [
        [r["label"], r["path"], r["ours"], r["go"], r["ratio_text"], r["target"], r["ok"]] for r in records
    ]
    widths = [max(len(x[i]) for x in [header, *cells]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    previous = None
    for record, row in zip(records, cells, strict=True):
        group = record["path"]
        if previous is not None and group != previous:
            out.append("")
        previous = group
        out.append(fmt(row))
    return "\n".join(out)


def write_json(path: Path, rows: list[Row], records: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """The raw rows (the tools' own output lines included), the judged lines and the run's facts."""
    document = {"meta": meta, "lines": records, "rows": [asdict(r) for r in rows]}
    path.write_text(json.dumps(document, indent=1, default=str) + "\n")


CPU_WORKLOADS = (
    ("get_c1", "GET, 1 conn"),
    ("get_c8", "GET, 8 conns"),
    ("get_c64", "GET, 64 conns"),
    ("create_c8", "CREATE, 8 conns"),
)
CPU_ROLES = ("client", "aggregator", "etcd", "server")


def cpu_table(rows: Iterable[Row]) -> str:
    """µs of CPU per request by process (cpu_probe), and the best ratio a free server could reach.

    "ceiling" is Go's whole path over ours without our server: the ratio our side would show if
    our server cost nothing and the two cores were the only bound (true at 8 and 64 connections,
    where both are busy; at 1 connection latency bounds the rate instead).
    """
    index = {(r.backend, r.config, r.workload): r for r in rows}
    out = []
    for via in ("aggregator", "direct"):
        for workload, label in CPU_WORKLOADS:
            ours, go = index.get(("ours", via, workload)), index.get(("go", via, workload))
            if ours is None or go is None or "cpu_us" not in ours.detail or "cpu_us" not in go.detail:
                continue
            cells = []
            for name, row in (("ours", ours), ("Go", go)):
                cpu = row.detail["cpu_us"]
                parts = " + ".join(f"{role} {cpu.get(role, 0.0):.0f}" for role in CPU_ROLES)
                cells.append(f"{name} {sum(cpu.get(r, 0.0) for r in CPU_ROLES):.0f} = {parts}")
            ours_cpu, go_cpu = ours.detail["cpu_us"], go.detail["cpu_us"]
            without_server = sum(ours_cpu.get(r, 0.0) for r in CPU_ROLES if r != "server")
            ceiling = sum(go_cpu.get(r, 0.0) for r in CPU_ROLES) / without_server if without_server else 0.0
            out.append(f"{label:<16} {via:<10}  {cells[0]};  {cells[1]};  ceiling {ceiling:.2f}x")
    if not out:
        return ""
    return "CPU µs per request by process (client = loadgen):\n" + "\n".join(out)
