"""kube's WithCacheControl: every answer says `Cache-Control: no-cache, private` (all of it is behind
authentication) unless its handler chose another policy (an OpenAPI v3 document asked for by hash)."""

from __future__ import annotations

import asyncio

from tests.integration.conftest import READ_TIMEOUT, Api


async def test_every_kind_of_answer_is_no_cache_private(api: Api) -> None:
    answers = [
        await api.get("/apis"),
        await api.get(api.pizzas_path()),
        await api.get(api.pizzas_path(name="missing")),  # a Status error
        await api.get("/healthz"),
        await api.post(api.toppings_path(), {"kind": "nonsense"}),  # a 4xx from decoding
    ]
    assert [a.status for a in answers][:3] == [200, 200, 404]
    for answer in answers:
        assert answer.headers["Cache-Control"] == "no-cache, private", answer
    # A streamed answer: its headers go out before the handler returns.
    async with asyncio.timeout(READ_TIMEOUT):
        async with api.session.get(api.pizzas_path(), params={"watch": "1", "timeoutSeconds": "1"}) as watch:
            assert watch.status == 200
            assert watch.headers["Cache-Control"] == "no-cache, private"
            await watch.read()
