"""The log backend: lumberjack-style rotation (size, backups, age, gzip), formats, and a served pipeline."""

from __future__ import annotations

import gzip
import json
import os
import re
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from server.audit.backend import IgnoreErrorsBackend
from server.audit.event import event_string
from server.audit.log_backend import FORMAT_LEGACY, LogBackend, RotatingFile
from server.audit.options import AuditOptions
from server.audit.pipeline import AuditPipeline, build_audit
from server.audit.policy import parse_policy

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"
BACKUP_NAME = re.compile(r"^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log(\.gz)?$")


def lines_of(log: RotatingFile) -> list[str]:
    """Every line, oldest first, across backups (plain or gzipped) and the current file."""
    out: list[str] = []
    for path in [*reversed(log.backups()), log.path]:
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        out += data.decode().splitlines()
    return out


def line(i: int) -> bytes:
    return f"line {i:03d} ".encode().ljust(99, b"x") + b"\n"  # 100 bytes


def test_rotation_by_size_keeps_max_backups(tmp_path: Path) -> None:
    log = RotatingFile(tmp_path / "logs" / "audit.log", max_bytes=1000, max_backups=2)
    for i in range(35):
        log.write(line(i))
    log.close()
    backups = log.backups()
    assert len(backups) == 2
    assert all(BACKUP_NAME.match(p.name) for p in backups)
    # 10 lines fill a file; older files beyond two backups are gone, the newest 15 lines remain in order.
    assert all(p.stat().st_size <= 1000 for p in [*backups, log.path])
    assert lines_of(log) == [line(i).decode().rstrip("\n") for i in range(10, 35)]
    assert os.stat(log.path).st_mode & 0o777 == 0o600


def test_existing_file_is_appended_then_rotated(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_bytes(line(0) * 5)
    log = RotatingFile(path, max_bytes=1000)
    log.write(line(1))
    log.close()
    assert path.read_bytes() == line(0) * 5 + line(1)
    log = RotatingFile(path, max_bytes=650)  # 600 + 100 would pass the limit: rotate first
    log.write(line(2))
    log.close()
    assert path.read_bytes() == line(2)
    assert [p.read_bytes() for p in log.backups()] == [line(0) * 5 + line(1)]


def test_writers_sharing_a_file_follow_each_others_rotation(tmp_path: Path) -> None:
    """Two writers on one path (as --workers N has): rotation is decided by the file's real size and
    a writer whose file was rotated away by the other appends to the new file, never to the backup."""
    path = tmp_path / "audit.log"
    first, second = RotatingFile(path, max_bytes=1000), RotatingFile(path, max_bytes=1000)
    for i in range(25):
        (first if i % 2 else second).write(line(i))
    first.close()
    second.close()
    assert all(p.stat().st_size == 1000 for p in first.backups())
    assert path.stat().st_size == 500
    assert lines_of(first) == [line(i).decode().rstrip("\n") for i in range(25)]


def test_oversized_write_is_refused(tmp_path: Path) -> None:
    log = RotatingFile(tmp_path / "audit.log", max_bytes=50)
    with pytest.raises(OSError, match="write length 100 exceeds maximum file size 50"):
        log.write(line(0))


def test_compress_and_max_age(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    old = (datetime.now(UTC) - timedelta(days=30)).strftime("%Y-%m-%dT%H-%M-%S.%f")[:-3]
    stale = tmp_path / f"audit-{old}.log"
    stale.write_bytes(b"ancient\n")
    unrelated = tmp_path / "other-2020-01-01T00-00-00.000.log"
    unrelated.write_bytes(b"not ours\n")
    log = RotatingFile(path, max_bytes=300, max_age_days=7, compress=True)
    for i in range(7):
        log.write(line(i))
    log.close()
    backups = log.backups()
    assert not stale.exists()  # older than --audit-log-maxage
    assert unrelated.exists()
    assert len(backups) == 2 and all(p.name.endswith(".log.gz") for p in backups)
    assert lines_of(log) == [line(i).decode().rstrip("\n") for i in range(7)]


async def test_legacy_format(tmp_path: Path) -> None:
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": "id-1",
        "stage": "ResponseComplete",
        "requestURI": "/apis/x?watch=1",
        "verb": "watch",
        "user": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        "impersonatedUser": {"username": "alice", "groups": ["chefs"]},
        "sourceIPs": ["10.0.0.1", "127.0.0.1"],
        "userAgent": "kubectl/v1.31",
        "objectRef": {"resource": "pizzas", "namespace": "default"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": "2024-05-01T10:20:30.120000Z",
        "stageTimestamp": "2024-05-01T10:20:31.000000Z",
    }
    assert event_string(event) == (
        '2024-05-01T10:20:30.12Z AUDIT: id="id-1" stage="ResponseComplete" ip="10.0.0.1" method="watch" '
        'user="admin" groups="\\"system:masters\\",\\"system:authenticated\\"" as="alice" '
        'asgroups="\\"chefs\\"" user-agent="kubectl/v1.31" namespace="default" uri="/apis/x?watch=1" '
        'response="200"'
    )
    bare = {**event, "user": {}, "objectRef": None, "sourceIPs": []}
    del bare["impersonatedUser"], bare["responseStatus"]
    assert event_string(bare).endswith(
        'ip="<unknown>" method="watch" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" '
        'user-agent="kubectl/v1.31" namespace="<none>" uri="/apis/x?watch=1" response="<deferred>"'
    )
    backend = LogBackend(RotatingFile(tmp_path / "audit.log"), FORMAT_LEGACY)
    assert await backend.process([event])
    await backend.shutdown()
    assert (tmp_path / "audit.log").read_text() == event_string(event) + "\n"


async def test_failed_write_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    event = {"level": "Metadata", "auditID": "big", "stage": "ResponseComplete", "user": {}, "verb": "get"}
    event |= {"requestReceivedTimestamp": "2024-05-01T10:20:30.000000Z", "requestURI": "/" + "x" * 200}
    backend = LogBackend(RotatingFile(tmp_path / "audit.log", max_bytes=100))
    assert await backend.process([event]) is False
    assert await IgnoreErrorsBackend(backend).process([event]) is True  # mode "blocking"
    await backend.shutdown()
    assert "Error in audit plugin 'log' affecting 1 audit events: write length" in caplog.text
    assert 'id="big"' in caplog.text


async def test_served_pipeline_rotates_and_loses_nothing(
    tmp_path: Path, audit_app: Any, serve: Any, tls: dict[str, ssl.SSLContext], session: ClientSession
) -> None:
    """Real requests through the chain into a log that rotates every few events; all of them survive."""
    log = RotatingFile(tmp_path / "audit.log", max_bytes=2500)
    policy = parse_policy(b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    pipeline = AuditPipeline(policy, IgnoreErrorsBackend(LogBackend(log)))
    await pipeline.start()
    ids = []
    async with serve(audit_app(pipeline)) as server:
        for _ in range(20):
            async with session.get(str(server.make_url(PIZZAS)), ssl=tls["admin"]) as response:
                assert response.status == 200
                ids.append(response.headers["Audit-ID"])
    await pipeline.shutdown()
    events = [json.loads(text) for text in lines_of(log)]
    assert len(log.backups()) >= 3
    assert [(e["auditID"], e["stage"]) for e in events] == [
        (i, stage) for i in ids for stage in ("RequestReceived", "ResponseComplete")
    ]


async def test_stdout(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    pipeline = await build_audit(AuditOptions(audit_policy_file=policy, audit_log_path="-"))
    assert pipeline is not None
    event = {"kind": "Event", "auditID": "to-stdout", "stage": "ResponseComplete", "level": "Metadata"}
    assert await pipeline.backend.process([event])
    await pipeline.shutdown()
    out = capfdbinary.readouterr().out
    assert json.loads(out.decode().strip().splitlines()[-1]) == event
