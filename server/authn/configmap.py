"""The cluster's settings for extension servers: ConfigMap kube-system/extension-apiserver-authentication.

kube-apiserver publishes there the client CA (`client-ca-file`) and the front-proxy settings
(`requestheader-client-ca-file`, `requestheader-allowed-names`, `requestheader-username-headers`,
`-uid-headers`, `-group-headers`, `-extra-headers-prefix`; the lists as JSON strings). Like
k8s.io/apiserver's ConfigMapCAController and RequestHeaderAuthRequestController, this reads it once at
start and then watches it, so a rotated CA takes effect without a restart. A key that is missing or
does not parse keeps its previous value (kube logs and keeps serving with what it had).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from server.authn.ca_bundle import EMPTY_BUNDLE, CABundle
from server.authn.requestheader import RequestHeaderConfig, RequestHeaderNames
from server.background_task import BackgroundTask
from server.cluster.client import ClusterClient, ClusterError

logger = logging.getLogger(__name__)

NAMESPACE = "kube-system"
NAME = "extension-apiserver-authentication"
COLLECTION_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
OBJECT_PATH = f"{COLLECTION_PATH}/{NAME}"

CLIENT_CA_KEY = "client-ca-file"
REQUESTHEADER_CA_KEY = "requestheader-client-ca-file"
_NAME_KEYS = {
    "allowed_names": "requestheader-allowed-names",
    "username": "requestheader-username-headers",
    "uid": "requestheader-uid-headers",
    "group": "requestheader-group-headers",
    "extra_prefixes": "requestheader-extra-headers-prefix",
}
# client-go reflectors ask for server-side timeouts of 5-10 minutes so watches are renewed regularly.
MIN_WATCH_TIMEOUT = 300
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 30.0
MIN_WATCH_DURATION = 1.0  # a watch that ends sooner counts as a failure (no hot loop against a broken server)


@dataclass(frozen=True, slots=True)
class ClusterAuthentication:
    """What the ConfigMap says; `request_header` is None until it names a request-header CA."""

    client_ca: CABundle = EMPTY_BUNDLE
    request_header: RequestHeaderConfig | None = None


def parse(data: Mapping[str, str], previous: ClusterAuthentication) -> ClusterAuthentication:
    client_ca = _bundle(data, CLIENT_CA_KEY, previous.client_ca)
    earlier = previous.request_header
    ca = _bundle(data, REQUESTHEADER_CA_KEY, earlier.ca if earlier else EMPTY_BUNDLE)
    if not ca.certs:
        return ClusterAuthentication(client_ca, None)
    try:
        lists = {field: _string_list(data.get(key, "")) for field, key in _NAME_KEYS.items()}
    except ValueError as err:
        logger.warning("keeping the previous request-header settings: %s", err)
        if earlier is None:
            return ClusterAuthentication(client_ca, None)
        return ClusterAuthentication(client_ca, RequestHeaderConfig(ca, earlier.allowed_names, earlier.names))
    allowed = lists.pop("allowed_names")
    return ClusterAuthentication(client_ca, RequestHeaderConfig(ca, allowed, RequestHeaderNames(**lists)))


def _bundle(data: Mapping[str, str], key: str, previous: CABundle) -> CABundle:
    if not data.get(key):
        return previous
    try:
        return CABundle.parse(data[key].encode(), key)
    except ValueError as err:
        logger.warning("keeping the previous %s: %s", key, err)
        return previous


def _string_list(text: str) -> tuple[str, ...]:
    """kube's deserializeStrings: empty means none; otherwise a JSON list of strings."""
    if not text:
        return ()
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a JSON list of strings, got {text!r}")
    return tuple(value)


class ConfigMapWatcher:
    """Holds the current `ClusterAuthentication`, kept current by a watch; `on_change` after each change."""

    __slots__ = ("_client", "_current", "_events", "_on_change", "_resource_version", "_watching")

    def __init__(self, client: ClusterClient, on_change: Callable[[], Awaitable[None]] | None = None) -> None:
        self._client = client
        self._on_change = on_change
        self._current = ClusterAuthentication()
        self._resource_version = ""
        self._events = 0  # watch events handled so far: tells a working watch from a failing one
        self._watching = BackgroundTask("watch-extension-apiserver-authentication", self._run)

    @property
    def current(self) -> ClusterAuthentication:
        return self._current

    def set_on_change(self, on_change: Callable[[], Awaitable[None]]) -> None:
        self._on_change = on_change

    async def load(self) -> ClusterAuthentication:
        """GET the ConfigMap (raises ClusterError); kube's RunOnce at start."""
        configmap = await self._client.get(OBJECT_PATH)
        await self._apply(configmap, notify=False)
        return self._current

    def start(self) -> None:
        self._watching.start()

    async def stop(self) -> None:
        await self._watching.stop()

    async def _run(self) -> None:
        delay = INITIAL_RETRY_DELAY
        while True:
            started, seen = time.monotonic(), self._events
            try:
                if not self._resource_version:
                    await self._relist()
                await self._watch()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the watch must outlive any failure; log and come back
                logger.warning("watching configmap %s/%s failed: %s", NAMESPACE, NAME, err)
            if self._events > seen:
                delay = INITIAL_RETRY_DELAY  # the watch worked for a while: failures start over
            if self._resource_version and (
                self._events > seen or time.monotonic() - started >= MIN_WATCH_DURATION
            ):
                continue  # a healthy watch ended (the server's timeout): renew it at once
            # A failure, or a watch that ended at once: back off, as client-go's reflector does.
            await asyncio.sleep(delay * (1 + random.random() * 0.2))
            delay = min(delay * 2, MAX_RETRY_DELAY)

    async def _relist(self) -> None:
        try:
            configmap = await self._client.get(OBJECT_PATH)
        except ClusterError as err:
            if err.status != 404:
                raise
            logger.warning("configmap %s/%s not found; keeping the current settings", NAMESPACE, NAME)
            listing = await self._client.get(COLLECTION_PATH, {"fieldSelector": f"metadata.name={NAME}"})
            self._resource_version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
            return
        await self._apply(configmap, notify=True)

    async def _watch(self) -> None:
        params = {
            "fieldSelector": f"metadata.name={NAME}",
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(MIN_WATCH_TIMEOUT * (1 + random.random()))),
        }
        async for event in self._client.watch(COLLECTION_PATH, params):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                # 410 Expired (our resourceVersion is too old) or another failure: start over with a GET.
                self._resource_version = ""
                raise ClusterError(f"watch ended: {obj.get('message')}", int(obj.get("code") or 0))
            self._events += 1
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if kind in ("ADDED", "MODIFIED"):
                await self._apply(obj, notify=True)
            elif rv:
                self._resource_version = str(rv)  # BOOKMARK, or DELETED: kube keeps the last content

    async def _apply(self, configmap: Mapping[str, object], *, notify: bool) -> None:
        metadata = configmap.get("metadata") or {}
        if isinstance(metadata, Mapping):
            self._resource_version = str(metadata.get("resourceVersion") or "")
        data = configmap.get("data") or {}
        updated = parse(data if isinstance(data, Mapping) else {}, self._current)
        if updated == self._current:
            return
        self._current = updated
        logger.info("loaded authentication settings from configmap %s/%s", NAMESPACE, NAME)
        if notify and self._on_change is not None:
            await self._on_change()
