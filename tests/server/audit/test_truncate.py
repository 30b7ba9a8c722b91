"""kube's truncate plugin: oversized events lose their objects, hopeless ones are dropped, batches split."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.audit.backend import TruncateBackend, TruncateConfig
from server.audit.log_backend import LogBackend, RotatingFile


class BatchLog:
    """A real backend (not a mock) that keeps each batch it is given, to see how batches were cut."""

    def __init__(self, inner: LogBackend) -> None:
        self.inner = inner
        self.batch_sizes: list[int] = []

    async def start(self) -> None:
        await self.inner.start()

    async def process(self, events: Sequence[dict[str, Any]]) -> bool:
        self.batch_sizes.append(len(events))
        return await self.inner.process(events)

    async def shutdown(self) -> None:
        await self.inner.shutdown()


def event(audit_id: str, level: str = "RequestResponse", payload: int = 0) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level,
        "auditID": audit_id,
        "stage": "ResponseComplete",
        "requestURI": "/apis/x",
        "verb": "create",
        "user": {"username": "admin"},
        "requestReceivedTimestamp": "2024-05-01T10:20:30.000000Z",
        "stageTimestamp": "2024-05-01T10:20:30.500000Z",
    }
    if payload:
        ev["requestObject"] = {"data": "r" * payload}
        ev["responseObject"] = {"data": "s" * payload}
    return ev


async def test_truncate_and_split(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "audit.log"
    log = BatchLog(LogBackend(RotatingFile(path)))
    small = event("small")
    size = len(orjson.dumps(small))
    backend = TruncateBackend(log, TruncateConfig(max_event_size=size + 100, max_batch_size=2 * size + 300))
    big = event("big", payload=500)
    hopeless = {**event("hopeless", level="Metadata"), "requestURI": "/" + "x" * 500}
    assert await backend.process([small, big, hopeless, event("s2"), event("s3")])
    await backend.shutdown()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["auditID"] for e in lines] == ["small", "big", "s2", "s3"]
    truncated = lines[1]
    assert "requestObject" not in truncated and "responseObject" not in truncated
    assert truncated["annotations"] == {"audit.k8s.io/truncated": "true"}
    assert "requestObject" in big  # the caller's event is not changed
    # A Metadata event has no objects to drop: too large is too large.
    assert "event is too large even after truncating" in caplog.text and 'id="hopeless"' in caplog.text
    # Batches are cut so each stays under the batch limit.
    assert log.batch_sizes == [2, 2]
