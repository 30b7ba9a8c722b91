"""The storage migration engine over a real embedded store: the races the command must survive, made
to happen deterministically (a write or a delete between the listing and the rewrite)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson
import pytest

from apis.restaurant.install import PIZZA_KIND, TOPPING_KIND
from apis.runtime.codec import Codec
from apis.wardle.install import FISCHER_KIND
from registry.generic import storage_migration as sm
from storage.embedded import EmbeddedStorage

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = Codec(GROUP, PIZZA_KIND)
KEY = f"/{GROUP}/pizzas/default/old"


def v1alpha1_pizza(**labels: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "Pizza",
            "metadata": {"name": "old", "namespace": "default", "uid": str(uuid.uuid4()), "labels": labels},
            "spec": {"toppings": ["tomato", "tomato"]},
        }
    )


def stored(raw: bytes) -> Any:
    return orjson.loads(raw)


async def test_a_write_after_the_listing_is_kept_not_overwritten(embedded_storage: EmbeddedStorage) -> None:
    await embedded_storage.create(KEY, v1alpha1_pizza())
    [listed] = (await embedded_storage.list(f"/{GROUP}/pizzas/")).items
    # The server (still writing v1alpha1 bytes, as an older replica would) changes it after the listing.
    await embedded_storage.guaranteed_update(KEY, lambda _: _value(v1alpha1_pizza(menu="classic")))

    outcome, why, _ = await sm.rewrite(
        embedded_storage, sm.Target(PIZZAS), listed, rewrite_all=False, dry_run=False
    )

    assert (outcome, why) == (sm.Outcome.REWRITTEN, "")
    now = stored((await embedded_storage.get(KEY)).value)
    assert now["apiVersion"] == f"{GROUP}/v1beta1"
    assert now["metadata"]["labels"] == {"menu": "classic"}  # re-read, not the stale listed bytes
    assert now["spec"]["toppings"] == [{"name": "tomato", "quantity": 2}]


async def test_an_object_deleted_after_the_listing_is_gone_not_recreated(
    embedded_storage: EmbeddedStorage,
) -> None:
    await embedded_storage.create(KEY, v1alpha1_pizza())
    [listed] = (await embedded_storage.list(f"/{GROUP}/pizzas/")).items
    await embedded_storage.delete(KEY)

    outcome, _, _ = await sm.rewrite(
        embedded_storage, sm.Target(PIZZAS), listed, rewrite_all=False, dry_run=False
    )

    assert outcome is sm.Outcome.GONE
    assert (await embedded_storage.list(f"/{GROUP}/pizzas/")).items == []


async def test_stopping_between_pages_leaves_a_continue_point_that_resumes_exactly(
    embedded_storage: EmbeddedStorage,
) -> None:
    for i in range(10):
        await embedded_storage.create(f"{KEY}-{i}", v1alpha1_pizza())
    pages: list[sm.PageDone] = []
    stop = asyncio.Event()

    def stop_after_first(page: sm.PageDone) -> None:
        pages.append(page)
        stop.set()  # as SIGINT does: the page under way finishes, no other starts

    first = await sm.migrate(
        embedded_storage, sm.plan([PIZZAS])[0], page_size=3, stop=stop, on_page=stop_after_first
    )
    assert not first.complete and first.examined == 3 and pages[-1].last_key == f"{KEY}-2"

    [resumed] = sm.plan([PIZZAS], pages[-1].last_key)
    assert await sm.count(embedded_storage, resumed) == 7
    rest = await sm.migrate(embedded_storage, resumed, page_size=3)
    assert rest.complete and rest.outcomes[sm.Outcome.REWRITTEN] == 7


def test_plan_orders_resources_by_key_and_skips_what_a_continue_point_passed() -> None:
    codecs = [PIZZAS, Codec(GROUP, TOPPING_KIND), Codec("wardle.example.com", FISCHER_KIND)]
    assert [t.prefix for t in sm.plan(codecs)] == [
        f"/{GROUP}/pizzas/",
        f"/{GROUP}/toppings/",
        "/wardle.example.com/fischers/",
    ]
    resumed = sm.plan(codecs, f"/{GROUP}/toppings/basil")
    assert [(t.prefix, t.after) for t in resumed] == [
        (f"/{GROUP}/toppings/", f"/{GROUP}/toppings/basil"),
        ("/wardle.example.com/fischers/", None),
    ]
    with pytest.raises(ValueError, match="not a key of any resource being migrated"):
        sm.plan(codecs, f"/{GROUP}/pizzasx/a")


async def _value(raw: bytes) -> bytes:
    return raw
