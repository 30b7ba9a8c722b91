"""Runs every storage test against each backend: the conformance suite is the contract."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from storage.interface import Interface

PREFIX = "/registry/test.example.com"


@pytest.fixture(params=["embedded", "embedded-worker", "etcd"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Interface]:
    lock = None
    if request.param == "embedded":
        from storage.embedded import open_embedded

        backend = await open_embedded(tmp_path / "store.db", prefix=PREFIX)
    elif request.param == "embedded-worker":
        # As a worker of `--workers N`: the lock handed over by a supervisor, the change feed on.
        from storage.embedded import StoreLock, open_embedded

        lock = StoreLock.claim(tmp_path / "store.db")
        backend = await open_embedded(tmp_path / "store.db", prefix=PREFIX, lock=lock)
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
        if lock is not None:
            lock.release()
