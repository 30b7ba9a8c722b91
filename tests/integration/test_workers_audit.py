"""One audit log written by `--workers 2`: whole lines, no lost or doubled event, rotation shared.

Both workers append to the same `--audit-log-path`, as kube's log backend would if two apiservers
shared a file. The test drives both workers (checked from /proc, as tests/integration/test_workers.py
does) with many concurrent requests and a small `--audit-log-maxsize`, so the workers rotate the file
under each other's writes; then every line of every file parses, each request has exactly one
ResponseComplete event, and every auditID is unique.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

from tests.fixtures.server import start_server_process
from tests.integration.test_workers import identified_connections, stop

CONNECTIONS = 16
CREATES = 150
GETS = 1000
# Big enough to tear in two writes if an event were written in pieces (RequestResponse bodies).
POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: RequestResponse
    verbs: ["create", "get"]  # not the watches that find out which worker holds a connection
    resources:
      - group: restaurant.programming-kubernetes.info
        resources: ["toppings"]
  - level: None
"""


def read_log_lines(log: Path) -> list[str]:
    """Every line of the log and its rotated backups (gzipped or not), oldest file first."""
    files = [*sorted(log.parent.glob(f"{log.stem}-*{log.suffix}*")), log]
    lines: list[str] = []
    for path in files:
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        assert not data or data.endswith(b"\n"), f"{path.name} ends in a partial line"
        lines += data.decode().splitlines()
    return lines


async def drive(
    tmp_path: Path, audit_flags: list[str], creates: int, gets: int
) -> tuple[Path, list[tuple[str, str]]]:
    """A `--workers 2` server with `audit_flags`: `creates` POSTs then `gets` GETs over connections held
    by both workers, then a graceful stop (which flushes every worker's pending events). Returns the
    server's output file and (Audit-ID, method) per request made."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    flags = ["--workers", "2", "--audit-policy-file", str(policy), *audit_flags]
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", *flags)
    made: list[tuple[str, str]] = []
    try:
        async with identified_connections(proc, CONNECTIONS) as (opened, workers):
            assert {c.worker for c in opened} == set(workers), "the kernel put every connection on one worker"
            free: asyncio.Queue[Any] = asyncio.Queue()
            for connection in opened:
                free.put_nowait(connection)

            async def call(method: str, name: str) -> None:
                connection = await free.get()
                try:
                    api = connection.api
                    if method == "POST":
                        reply = await api.post(api.toppings_path(), api.topping(name))
                        assert reply.status == 201, reply
                    else:
                        reply = await api.get(api.toppings_path(name=name))
                        assert reply.status == 200, reply
                    made.append((reply.headers["Audit-ID"], method))
                finally:
                    free.put_nowait(connection)

            names = [f"t{i}" for i in range(creates)]
            await asyncio.gather(*(call("POST", name) for name in names))
            await asyncio.gather(*(call("GET", names[i % creates]) for i in range(gets)))
    finally:
        code = await asyncio.to_thread(stop, proc)
    assert code == 0, proc.log.read_text()[-3000:]
    assert len(made) == creates + gets
    return proc.log, made


def check_events(events: list[dict[str, Any]], made: list[tuple[str, str]]) -> None:
    """Each request made: one RequestReceived and one ResponseComplete event, of its verb; nothing else."""
    complete = [e for e in events if e["stage"] == "ResponseComplete"]
    received = [e for e in events if e["stage"] == "RequestReceived"]
    assert len(complete) == len(made)
    assert len(received) == len(made)
    assert len({e["auditID"] for e in complete}) == len(complete), "an auditID appears twice"
    assert {e["auditID"] for e in complete} == {audit_id for audit_id, _ in made}
    assert {e["auditID"] for e in received} == {audit_id for audit_id, _ in made}
    verbs = {audit_id: method for audit_id, method in made}
    for event in complete:
        assert {"POST": "create", "GET": "get"}[verbs[event["auditID"]]] == event["verb"]


async def test_two_workers_share_one_audit_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "audit.log"
    rotation = ["--audit-log-maxsize", "1", "--audit-log-compress"]
    _, made = await drive(tmp_path, ["--audit-log-path", str(log), *rotation], CREATES, GETS)
    events = [json.loads(line) for line in read_log_lines(log)]  # a torn or interleaved line fails here
    assert len(list(log.parent.glob("audit-*.log.gz"))) >= 2, "the log was never rotated"
    check_events(events, made)


async def test_two_workers_share_standard_output(tmp_path: Path) -> None:
    """`--audit-log-path -`: both workers' events on the one standard output (here a file the server's
    log lines also go to), each event a whole line."""
    output, made = await drive(tmp_path, ["--audit-log-path", "-"], CREATES // 3, GETS // 3)
    lines = output.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert not [line for line in lines if '"auditID"' in line and not line.startswith('{"kind":"Event"')]
    check_events(events, made)
