"""A write whose answer from etcd is lost is a 504 Timeout ("outcome unknown"), never a 503.

kube's etcd3 store leaves such a write to the request's deadline (504 `Timeout`); 503 with
Retry-After tells the client the write surely did not happen, and a client that retries a create
that in fact committed then gets 409 AlreadyExists. A proxy between the server and a real etcd drops
etcd's responses (the write reaches etcd), or refuses connections (nothing reaches etcd).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.fault.blackhole_proxy import blackhole_proxy
from tests.fixtures.etcd import EtcdMember
from tests.fixtures.objects import topping
from tests.fixtures.server import running_server

TOPPINGS = "/apis/restaurant.programming-kubernetes.info/v1beta1/toppings"
BOUND = 60.0


async def test_lost_answer_is_a_timeout_and_refused_connection_a_503(
    etcd_server: EtcdMember, tmp_path: Path
) -> None:
    async with blackhole_proxy(etcd_server.client_url) as proxy:
        flags = (
            f"--etcd-servers={proxy.url}",
            f"--etcd-prefix=/registry/fault/{os.getpid()}/{id(proxy)}",
            "--request-timeout=4s",
            "--watch-cache=false",
        )
        async with running_server(tmp_path / "data", *flags) as server, server.session() as api:
            async with asyncio.timeout(BOUND):
                r = await api.post(TOPPINGS, json=topping("before", 1.5))
                assert r.status == 201, await r.text()

                # The create reaches etcd and commits; its answer is lost.
                proxy.drop_responses()
                r = await api.post(TOPPINGS, json=topping("lost-answer", 1.5))
                body = await r.json()
                assert r.status == 504, body
                assert (body["kind"], body["reason"], body["code"]) == ("Status", "Timeout", 504)
                assert "outcome is unknown" in body["message"]
                assert "Retry-After" not in r.headers

                await proxy.heal()
                # It was applied: which is why 503 ("did not happen") would have misled the client.
                r = await api.get(f"{TOPPINGS}/lost-answer")
                assert r.status == 200, await r.text()
                r = await api.post(TOPPINGS, json=topping("lost-answer", 1.5))
                assert (r.status, (await r.json())["reason"]) == (409, "AlreadyExists")

                # Nothing can reach etcd: the write surely did not happen. Cutting the links races
                # with gRPC noticing it: a write put on the dying connection before the channel sees
                # the cut may have been sent, and 504 is the honest answer for it. A read first lets
                # the channel fail over to "connection refused" (a read is retried, then 503).
                await proxy.refuse()
                r = await api.get(f"{TOPPINGS}/before")
                assert r.status == 503, await r.text()
                r = await api.post(TOPPINGS, json=topping("never-sent", 1.5))
                body = await r.json()
                assert r.status == 503, body
                assert body["reason"] == "ServiceUnavailable"
                assert r.headers["Retry-After"] == "1"

                await proxy.heal()
                r = await api.get(f"{TOPPINGS}/never-sent")
                assert r.status == 404, await r.text()
