"""`python -m tests.bench --aggregated`: our server and the Go sample-apiserver behind one kube-aggregator.

Why: the main benchmark measures the server alone on a private etcd; users deploy it behind a
cluster's kube-aggregator, where the Go sample-apiserver is the reference. This mode starts that
deployment on loopback (tests/bench/cluster.py: etcd 3.6.8, kube-apiserver 1.36.2, both servers on
the cluster's etcd), loads both, measures each workload on both through the aggregator and directly
(tests/bench/aggregated_workloads.py) and prints one table of ratios against the team's targets
(tests/bench/aggregated_report.py). docs/performance.md ("Behind the aggregator") explains each row.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench import aggregated_report
from tests.bench.aggregated_setup import cpu_roles, deploy, load_both
from tests.bench.aggregated_workloads import measure_all, measure_scale, namespaces
from tests.bench.cluster import check_prerequisites, loopback_cluster, unpack_anchors
from tests.bench.cpu_probe import CpuProbe
from tests.bench.go_tools import ToolError, ensure_tools
from tests.bench.report import Row
from tests.bench.server_process import ServerCommand
from tests.bench.workloads import FULL, QUICK, Bench, Sizes

# One fan-out run per server and path in --quick; the full run keeps FULL's three (median p99).
QUICK_AGGREGATED: Sizes = dataclasses.replace(QUICK, watch_runs=1)
# --scale: the scale (100,000 objects, 10,000 watches), one run of each, bounded longer.
SCALE: Sizes = dataclasses.replace(
    FULL, objects=100_000, page_size=500, watchers=10_000, passes=1, watch_runs=1, watch_seconds=600
)


async def run(
    args: argparse.Namespace, workdir: Path, host: dict[str, Any]
) -> tuple[list[Row], dict[str, Any]]:
    """Everything between the prerequisites and the table; the cluster is always torn down."""
    check_prerequisites()
    sizes = SCALE if args.scale else QUICK_AGGREGATED if args.quick else FULL
    tools = await asyncio.to_thread(ensure_tools)
    anchors = await unpack_anchors()
    command = ServerCommand()
    if args.ref:
        command = await asyncio.to_thread(ServerCommand.from_ref, args.ref, workdir / "server-src")
    bench = Bench(tools=tools, sizes=sizes, workdir=workdir, skip_floor=True, command=command)
    meta: dict[str, Any] = {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": "aggregated",
        "quick": args.quick,
        "scale": args.scale,
        "server_args": list(args.server_arg),
        "sizes": sizes.as_dict(),
        "server": command.label,
        "anchors": {k: str(v) for k, v in dataclasses.asdict(anchors).items()},
        "host": host,
    }
    bench.progress(f"aggregated: work directory {workdir}; starting the loopback control plane")
    async with loopback_cluster(workdir / "cluster", anchors) as cluster:
        bench.progress(f"aggregated: kube-apiserver {cluster.apiserver_url}, etcd {cluster.etcd_url}")
        deployment = None
        try:
            deployment = await deploy(
                bench,
                cluster,
                command,
                namespaces(sizes.watch_runs),
                scale=args.scale,
                extra=tuple(args.server_arg),
            )
            bench.cpu_probe = CpuProbe(functools.partial(cpu_roles, deployment))
            await load_both(bench, deployment)
            await (measure_scale if args.scale else measure_all)(bench, deployment)
        finally:
            if deployment is not None:
                await asyncio.to_thread(deployment.server.stop)
    meta["seconds"] = round(time.monotonic() - bench.started, 1)
    return bench.rows, meta


def main(args: argparse.Namespace, host: dict[str, Any]) -> int:
    """Run, print the table, write the JSON; `host` is describe_host() of the main benchmark.

    Exit 0; 1 if a row failed; 2 when the tools or the shared harness are missing; 130 on Ctrl-C.
    """
    with tempfile.TemporaryDirectory(prefix="pizza-bench-aggregated-") as tmp:
        workdir = (args.keep or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            rows, meta = asyncio.run(run(args, workdir, host))
        except KeyboardInterrupt:
            print("interrupted; every process started was stopped", file=sys.stderr)
            return 130
        except ToolError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    records = aggregated_report.judged(rows, meta["sizes"], not args.quick)
    print(
        f"pizza-apiserver behind kube-aggregator vs Go sample-apiserver {meta['started']} "
        f"({'scale' if args.scale else 'quick' if args.quick else 'full'}, {host['cores']} cores"
        f"{', autogroup' if host['sched_autogroup'] else ''}, server from {meta['server']}, "
        f"tree {host['commit']}, {meta['seconds']:.0f} s"
        + (f", our server with {' '.join(meta['server_args'])}" if meta["server_args"] else "")
        + ")"
    )
    print(aggregated_report.table(records))
    print("ours vs Go: > 1 is better for us (rates ours/Go, latencies and memory Go/ours).")
    cpu = aggregated_report.cpu_table(rows)
    if cpu:
        print(cpu)
    note = aggregated_report.writer_note(rows)
    if note:
        print(f"writers: {note}")
    if args.json:
        aggregated_report.write_json(args.json, rows, records, meta)
    failed = any(r.error for r in rows) or any(r["ok"] == "ERR" for r in records)
    return 1 if failed else 0
