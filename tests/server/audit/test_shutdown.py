"""No audit event is lost on graceful shutdown: buffered batches, and requests still running at the stop."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"


async def test_buffered_log_is_flushed_on_shutdown(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    flags = {"audit_log_mode": "batch", "audit_log_batch_max_size": 400, "audit_log_batch_max_wait": 30.0}
    async with audited([{"level": "Metadata"}], **flags) as a:
        ids = []
        for _ in range(25):
            async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
                assert response.status == 200
                ids.append(response.headers["Audit-ID"])
        # Neither 400 events nor 30 s: everything is still in the buffer.
        assert a.events() == []
    events = a.events()
    assert len(events) == 50
    assert [(e["auditID"], e["stage"]) for e in events] == [
        (i, s) for i in ids for s in ("RequestReceived", "ResponseComplete")
    ]


async def test_request_running_at_shutdown_still_completes_in_the_log(
    audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    # The client leaves mid-stream (the response closes first), then the server stops while the
    # handler is still waiting.
    async with (
        audited([{"level": "Metadata"}], audit_log_mode="batch") as a,
        session.get(f"{a.url(PIZZAS)}?watch=1&hang=1", ssl=tls["admin"]) as response,
    ):
        audit_id = response.headers["Audit-ID"]
        assert (await response.content.readline()).startswith(b'{"type":"ADDED"')
    events = a.events()
    assert [(e["auditID"], e["stage"]) for e in events] == [
        (audit_id, "RequestReceived"),
        (audit_id, "ResponseStarted"),
        (audit_id, "ResponseComplete"),
    ]
    assert events[2]["responseStatus"] == {"metadata": {}, "code": 200}


async def test_shutdown_is_idempotent_and_late_events_are_reported(
    tmp_path: Path, audited: Any, caplog: Any
) -> None:
    async with audited([{"level": "Metadata"}], audit_log_mode="batch") as a:
        pipeline = a.pipeline
    await pipeline.shutdown()  # a second call is harmless
    late = {"level": "Metadata", "auditID": "late", "stage": "ResponseComplete", "user": {}, "verb": "get"}
    late["requestReceivedTimestamp"] = "2024-05-01T10:20:30.000000Z"
    assert await pipeline.backend.process([late]) is True  # never fails a request...
    assert "audit buffer shut down" in caplog.text  # ...but the loss is in the server log
    assert 'id="late"' in caplog.text
