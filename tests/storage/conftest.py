"""Runs every storage test against each backend: the conformance suite is the contract."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from storage.interface import Interface

PREFIX = "/registry/test.example.com"


@pytest.fixture(params=["embedded", "etcd"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Interface]:
    if request.param == "embedded":
        from storage.embedded import open_embedded

        backend = await open_embedded(tmp_path / "store.db", prefix=PREFIX)
    else:
        from storage.etcd import EtcdConfig, open_etcd

        etcd = request.getfixturevalue("etcd_server")
        # A fresh prefix per test keeps tests independent on one shared etcd.
        backend = await open_etcd(
            EtcdConfig(servers=[etcd.client_url], prefix=f"{PREFIX}/{request.node.name}")
        )
    try:
        yield backend
    finally:
        await backend.close()
