"""/metrics of `--workers 2` reports the whole server, whichever worker answers the scrape.

Requests go over connections held by both workers (found from /proc, as in test_workers.py); after
each round every connection scrapes, so both workers answer: each scrape must show every request
made so far (counters and histogram counts summed over the workers), and so never goes backwards.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.server import start_server_process
from tests.integration.test_workers import Connection, identified_connections, stop

CONNECTIONS = 8
ROUNDS = 4
GETS_PER_CONNECTION = 10
SETTLE_POLLS = 60  # x 0.5 s: a loaded machine may run the workers' timers late
GET_SERIES = {"verb": "GET", "resource": "toppings", "scope": "resource", "code": "200"}


def samples(text: str, name: str, wanted: dict[str, str]) -> list[float]:
    return [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in wanted.items())
    ]


async def scrape(connection: Connection) -> str:
    reply = await connection.api.get("/metrics")
    assert reply.status == 200, reply
    return reply.text


async def test_metrics_sum_every_worker(tmp_path: Path) -> None:
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", "--workers", "2")
    try:
        port = int(proc.url.rsplit(":", 1)[1])
        async with identified_connections(proc, CONNECTIONS) as (opened, workers):
            assert {c.worker for c in opened} == set(workers), "the kernel put every connection on one worker"
            api = opened[0].api
            assert (await api.post(api.toppings_path(), api.topping("salami"))).status == 201

            async def gets(connection: Connection) -> None:
                for _ in range(GETS_PER_CONNECTION):
                    got = await connection.api.get(connection.api.toppings_path(name="salami"))
                    assert got.status == 200, got

            made = 0
            for _ in range(ROUNDS):
                await asyncio.gather(*(gets(c) for c in opened))
                made += CONNECTIONS * GETS_PER_CONNECTION
                answered: set[int] = set()
                for connection in opened:
                    text = await scrape(connection)
                    assert samples(text, "apiserver_request_total", GET_SERIES) == [made]
                    duration = {k: v for k, v in GET_SERIES.items() if k != "code"}
                    assert samples(text, "apiserver_request_duration_seconds_count", duration) == [made]
                    assert samples(
                        text, "apiserver_request_duration_seconds_bucket", {**duration, "le": "+Inf"}
                    ) == [made]
                    created = {"verb": "POST", "resource": "toppings", "code": "201"}
                    assert samples(text, "apiserver_request_total", created) == [1]
                    # One series per request kind, summed over workers (never one per worker).
                    for kind in ("readOnly", "mutating"):
                        inflight = samples(
                            text, "apiserver_current_inflight_requests", {"request_kind": kind}
                        )
                        assert len(inflight) == 1 and inflight[0] >= 0
                    answered.add(connection.worker)
                assert answered == set(workers), "one worker answered every scrape"
            # Idle, the in-flight gauge falls back (each worker rolls its own window every second,
            # scraped or not): only the scrape itself may still be seen, on the worker answering it.
            settled = False
            for _ in range(SETTLE_POLLS):
                text = await scrape(opened[0])
                readonly = samples(text, "apiserver_current_inflight_requests", {"request_kind": "readOnly"})
                mutating = samples(text, "apiserver_current_inflight_requests", {"request_kind": "mutating"})
                if readonly[0] <= 1 and mutating == [0]:
                    settled = True
                    break
                await asyncio.sleep(0.5)
            assert settled, f"in-flight gauge stuck at {readonly} / {mutating}"
            # Every request and scrape went over the connection identified at the start (identify
            # fails if one was replaced), so over the worker it names.
            await asyncio.gather(*(c.identify(port, workers) for c in opened))
    finally:
        code = await asyncio.to_thread(stop, proc)
    assert code == 0, proc.log.read_text()[-3000:]
