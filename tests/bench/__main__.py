"""`python -m tests.bench`: the comparative benchmark, embedded and etcd, against the aiohttp floor.

Starts pizza-apiserver as a subprocess per backend and configuration, loads the objects and drives
it with the Go load tools of ../shared/tools (built on first use), runs a minimal aiohttp HTTPS
server returning the same bytes as "the floor", and prints one table: each figure with the share of
the floor's speed it reaches, and the team's targets with PASS/FAIL. docs/performance.md explains
every row. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.go_tools import REPO, ToolError, ensure_tools
from tests.bench.report import Row, table, write_json
from tests.bench.server_process import ServerCommand, running_etcd, server_flags
from tests.bench.workloads import FULL, QUICK, Bench, bench_backend, configurations
from tests.fixtures.etcd import EtcdNotFound


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1,000 objects, 100 watchers x 20 events (~2 min)"
    )
    parser.add_argument("--backend", choices=("embedded", "etcd", "both"), default="both")
    parser.add_argument("--skip-floor", action="store_true", help="do not measure the aiohttp floor")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the raw numbers as JSON")
    parser.add_argument("--plot", type=Path, metavar="PATH.png", help="also draw a chart (needs '.[bench]')")
    parser.add_argument(
        "--ref",
        metavar="GIT_REF",
        help="measure this commit (exported with git archive) instead of the working tree, e.g. HEAD",
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work (data, logs) here and keep it")
    parser.add_argument(
        "--aggregated",
        action="store_true",
        help="our server and the Go sample-apiserver behind a loopback kube-aggregator on one etcd "
        "(needs ../shared; --backend, --skip-floor and --plot do not apply)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="with --aggregated: 100,000 objects and 10,000 watches, paging, fan-out and memory only "
        "(~20 min)",
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="with --aggregated: one more flag for our server (repeat it), e.g. --server-arg=--workers=1",
    )
    args = parser.parse_args(argv)
    if args.server_arg and not args.aggregated:
        parser.error("--server-arg goes with --aggregated")
    if args.scale and (not args.aggregated or args.quick):
        parser.error("--scale goes with --aggregated and not with --quick")
    return args


def _autogroup() -> bool | None:
    """Whether the kernel schedules each session as a group (None: no such setting here).

    The server runs in a session of its own (server_process.spawn) and the load tools in the
    bench's, so with autogroup on the kernel shares the cores between the two groups rather than
    between their threads, as for a server and a client started from two terminals. Measured on
    this machine (docs/performance.md): fan-out p99 median 41 ms over 14 runs with a session of its
    own against 35 ms in the client's; etcd GET at 8 connections 2,220-2,310 against 2,440-2,480.
    """
    with contextlib.suppress(OSError, ValueError):
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    return None


def describe_host() -> dict[str, Any]:
    """What the numbers depend on: cores, CPU, load when the run began, the commit measured."""
    cpu = ""
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    commit = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "sched_autogroup": _autogroup(),
        "loadavg_at_start": os.getloadavg(),
        "python": platform.python_version(),
        "commit": commit,
    }


async def run(args: argparse.Namespace, workdir: Path) -> tuple[list[Row], dict[str, Any]]:
    sizes = QUICK if args.quick else FULL
    tools = await asyncio.to_thread(ensure_tools)
    command = ServerCommand()
    if args.ref:
        command = await asyncio.to_thread(ServerCommand.from_ref, args.ref, workdir / "server-src")
    bench = Bench(tools=tools, sizes=sizes, workdir=workdir, skip_floor=args.skip_floor, command=command)
    meta: dict[str, Any] = {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "sizes": sizes.as_dict(),
        "server": command.label,
        "configurations": [(name, flags) for name, flags, _ in configurations(command)],
        "server_has_workers_flag": "--workers" in server_flags(command),
        "host": describe_host(),
    }
    bench.progress(f"work directory {workdir}; configurations {meta['configurations']}")
    if args.backend in ("embedded", "both"):
        await bench_backend(bench, "embedded", [])
    if args.backend in ("etcd", "both"):
        shutil.rmtree(workdir / "etcd-member", ignore_errors=True)  # never resume an earlier run's data
        with running_etcd(workdir / "etcd-member") as etcd_url:
            await bench_backend(bench, "etcd", ["--etcd-servers", etcd_url, "--etcd-prefix", "/registry"])
    meta["seconds"] = round(time.monotonic() - bench.started, 1)
    return bench.rows, meta


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.aggregated:
        from tests.bench.aggregated import main as aggregated_main

        return aggregated_main(args, describe_host())
    with tempfile.TemporaryDirectory(prefix="pizza-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            rows, meta = asyncio.run(run(args, workdir.resolve()))
        except KeyboardInterrupt:
            print("interrupted; every process started was stopped", file=sys.stderr)
            return 130
        except (ToolError, EtcdNotFound) as err:  # no load tools or no etcd: nothing to measure with
            print(f"error: {err}", file=sys.stderr)
            return 2
    sizes = meta["sizes"]
    full_size = not args.quick
    print(
        f"pizza-apiserver benchmark {meta['started']} ({'quick' if args.quick else 'full'}, "
        f"{meta['host']['cores']} cores{', autogroup' if meta['host']['sched_autogroup'] else ''}, "
        f"server from {meta['server']}, tree {meta['host']['commit']}, "
        f"{meta['seconds']:.0f} s)"
    )
    print(table(rows, sizes, full_size))
    print("(n%) = share of the floor's speed: rates server/floor, latencies floor/server.")
    if args.json:
        write_json(args.json, rows, meta, full_size)
    if args.plot:
        from tests.bench.plot import write_plot

        title = (
            f"pizza-apiserver ({meta['server']}) vs the aiohttp floor, {meta['started']}, "
            f"{meta['host']['cores']} cores"
        )
        write_plot(args.plot, rows, sizes, title + (" (quick)" if args.quick else ""))
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
