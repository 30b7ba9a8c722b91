"""BanFlunder reads Fischers through the Fischer Store the server caches, not a store of its own.

sample-apiserver's plugin reads an informer's lister; here the Fischer Store's read path is answered by
the watch cache the server attaches to every store of an installation (attach_watch_cache), so the
plugin must hold that very Store. Over a real embedded store, below HTTP.
"""

from __future__ import annotations

import pytest

from apis.meta.errors import StatusError
from apis.meta.user import ANONYMOUS
from apis.wardle.install import Fischer, Flunder
from registry.generic.admission import Attributes, Operation
from registry.generic.installation import attach_watch_cache
from registry.wardle.admission import BanFlunder
from registry.wardle.install import install
from storage.embedded import EmbeddedStorage


def creating(name: str) -> Attributes:
    flunder = Flunder(metadata={"name": name, "namespace": "default"})
    return Attributes(
        Operation.CREATE,
        "wardle.example.com",
        "v1beta1",
        "flunders",
        "",
        "Flunder",
        "default",
        name,
        flunder,
        None,
        ANONYMOUS,
        dry_run=False,
    )


async def test_ban_flunder_reads_the_cached_fischer_store(embedded_storage: EmbeddedStorage) -> None:
    installation = install(embedded_storage)
    [ban] = installation.mutating
    assert isinstance(ban, BanFlunder) and ban.fischers is installation.stores["fischers"]
    feed = attach_watch_cache(installation)
    feed.start()
    try:
        assert await feed.wait_ready(10)
        assert ban.fischers.cache is not None
        await ban.fischers.create(Fischer(metadata={"name": "strict"}, disallowed_flunders=["evil"]))
        with pytest.raises(StatusError) as denied:
            await ban.admit(creating("evil"))
        assert denied.value.code == 403
        await ban.admit(creating("good"))
    finally:
        await feed.stop()
