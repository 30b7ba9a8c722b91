"""An informer: list, then watch from the list's resourceVersion, resuming and relisting as kube's reflector.

client-go's Reflector rules, kept here:
- a watch that ends (timeoutSeconds, a dropped connection, a server restart) is resumed from the last
  resourceVersion seen (events and bookmarks), so nothing is missed and nothing is listed again;
- a watch answered with 410 Gone (the server no longer has that revision) means events were lost:
  list again, and treat the difference from the local cache as events (objects gone → deleted);
- errors back off before retrying (doubling, capped), so a server that is down is not hammered.
The local cache (key → object as JSON) is what handlers and reconcilers read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

logger = logging.getLogger(__name__)

Obj = dict[str, Any]
# (event type "ADDED" | "MODIFIED" | "DELETED", the object, the previous state if any)
Handler = Callable[[str, Obj, Obj | None], None]
GONE = 410


def object_key(obj: Obj) -> str:
    """client-go's MetaNamespaceKeyFunc: namespace/name, or name for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


@dataclass
class Informer:
    """Lists and watches one resource of a custom group across all namespaces."""

    api: client.ApiClient
    group: str
    version: str
    plural: str
    handler: Handler
    watch_timeout: float = 300.0
    min_backoff: float = 0.2
    max_backoff: float = 30.0
    cache: dict[str, Obj] = field(default_factory=dict)
    resource_version: str = ""
    relists: int = 0  # how many lists ran (the first one included): a relist after 410 counts
    synced: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _watch: watch.Watch | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> None:
        """List and watch until `stop`; meant for its own thread."""
        objects = client.CustomObjectsApi(self.api)
        backoff = self.min_backoff
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list(objects)
                    need_list = False
                self._watch_once(objects)
                backoff = self.min_backoff
            except ApiException as err:
                if err.status == GONE:
                    logger.info(
                        "%s: watch from %s expired (410), relisting", self.plural, self.resource_version
                    )
                    need_list = True
                    continue
                logger.warning("%s: %s; retrying in %.1fs", self.plural, err.reason or err, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
                if self._stop.is_set():
                    break
                logger.warning("%s: %s; retrying in %.1fs", self.plural, err, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            if self._watch is not None:
                self._watch.stop()  # unblocks the read of the open watch

    def _list(self, objects: client.CustomObjectsApi) -> None:
        listed: Obj = objects.list_cluster_custom_object(self.group, self.version, self.plural)  # type: ignore[assignment]
        self.relists += 1
        fresh = {object_key(item): item for item in listed.get("items", [])}
        old = self.cache
        self.cache = fresh
        self.resource_version = listed["metadata"]["resourceVersion"]
        # The difference from what was known is delivered as events (client-go's Replace).
        for key, previous in old.items():
            if key not in fresh:
                self.handler("DELETED", previous, previous)
        for key, obj in fresh.items():
            known = old.get(key)
            if known is None:
                self.handler("ADDED", obj, None)
            elif _rv(known) != _rv(obj):
                self.handler("MODIFIED", obj, known)
        self.synced.set()

    def _watch_once(self, objects: client.CustomObjectsApi) -> None:
        w = watch.Watch()
        with self._lock:
            if self._stop.is_set():
                return
            self._watch = w
        try:
            stream = w.stream(
                objects.list_cluster_custom_object,
                self.group,
                self.version,
                self.plural,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=int(self.watch_timeout),
                _request_timeout=self.watch_timeout + 30,
            )
            for event in stream:
                if self._stop.is_set():
                    break
                self._apply(event["type"], event["raw_object"])
        finally:
            with self._lock:
                self._watch = None

    def _apply(self, kind: str, obj: Obj) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        key = object_key(obj)
        previous = self.cache.get(key)
        if kind == "DELETED":
            self.cache.pop(key, None)
        else:
            self.cache[key] = obj
        if rv:
            self.resource_version = rv
        self.handler(kind, obj, previous)


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
