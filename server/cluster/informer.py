"""client-go's shared informer, reduced to what admission needs: a local copy of one cluster resource.

LIST, then WATCH from the list's resourceVersion with bookmarks; a watch that ends (server timeout,
dropped connection) resumes from the last resourceVersion seen; a 410 Expired/Gone (the cluster
compacted past it) relists, as client-go's reflector does. Errors back off (800 ms doubling to 30 s,
client-go's reflector backoff) and are retried forever; `synced` is set after the first complete LIST
(client-go's HasSynced), which readiness and admission wait for. Runs as one task on the event loop,
over the async ClusterClient, so nothing blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import Any

from server.cluster.client import ClusterClient, ClusterError

logger = logging.getLogger(__name__)

INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0
# client-go's reflector asks for a watch timeout in [5, 10) minutes so watches are spread.
MIN_WATCH_TIMEOUT = 300


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410): relist."""


class Informer:
    """A cache of every object at `path` (a collection URL), keyed by name (namespaced objects: ns/name)."""

    def __init__(self, client: ClusterClient, path: str, *, watch_timeout: int = MIN_WATCH_TIMEOUT) -> None:
        self.client = client
        self.path = path
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._items: dict[str, dict[str, Any]] = {}
        self._listeners: list[Callable[[], None]] = []
        self._watch_timeout = watch_timeout
        self._task: asyncio.Task[None] | None = None

    # --- reading ----------------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        return self._items.get(key)

    def items(self) -> list[dict[str, Any]]:
        return list(self._items.values())

    def on_change(self, listener: Callable[[], None]) -> None:
        """Called (synchronously, on the loop) after every change to the cache, including relists."""
        self._listeners.append(listener)

    async def wait_synced(self, timeout: float) -> bool:
        """kube's WaitForReady: True once synced, False if still not after `timeout` seconds."""
        if self.synced.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.synced.wait()
        return self.synced.is_set()

    # --- running ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer {self.path}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        backoff = INITIAL_BACKOFF
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
                backoff = INITIAL_BACKOFF  # a watch that ended normally: resume at once
            except WatchExpired:
                logger.info(
                    "watch of %s expired at resourceVersion %s; relisting", self.path, self.resource_version
                )
                need_list = True
            except (ClusterError, ValueError) as err:
                if isinstance(err, ClusterError) and err.status in (410,):
                    need_list = True
                    continue
                logger.warning("informer for %s: %s; retrying in %.1fs", self.path, err, backoff)
                await asyncio.sleep(backoff * (1 + random.random() * 0.1))
                backoff = min(backoff * 2, MAX_BACKOFF)

    async def _list(self) -> None:
        answer = await self.client.get(self.path, params={"resourceVersion": ""})
        items = answer.get("items") or []
        self._items = {_key(item): item for item in items if isinstance(item, dict)}
        self.resource_version = str((answer.get("metadata") or {}).get("resourceVersion", ""))
        self.synced.set()
        self._notify()

    async def _watch(self) -> None:
        timeout = random.randint(self._watch_timeout, 2 * self._watch_timeout - 1)
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        async for event in self.client.watch(self.path, params):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code")
                if code in (410,) or obj.get("reason") in ("Expired", "Gone"):
                    raise WatchExpired()
                raise ClusterError(f"watch {self.path}: {obj.get('message', obj)}", int(code or 0))
            rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            if kind in ("ADDED", "MODIFIED"):
                self._items[_key(obj)] = obj
            elif kind == "DELETED":
                self._items.pop(_key(obj), None)
            elif kind != "BOOKMARK":
                continue
            if rv:
                self.resource_version = rv
            if kind != "BOOKMARK":
                self._notify()

    def _notify(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a listener's bug must not stop the cache
                logger.exception("informer listener for %s failed", self.path)


def _key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = str(metadata.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


class SharedInformers:
    """One informer per collection path, shared by every plugin that needs it (client-go's factory)."""

    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self._informers: dict[str, Informer] = {}

    def informer(self, path: str) -> Informer:
        if path not in self._informers:
            self._informers[path] = Informer(self.client, path)
        return self._informers[path]

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    @property
    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self._informers.values())

    async def wait_synced(self, timeout: float) -> bool:
        results = await asyncio.gather(*(i.wait_synced(timeout) for i in self._informers.values()))
        return all(results)

    async def stop(self) -> None:
        for informer in self._informers.values():
            await informer.stop()
