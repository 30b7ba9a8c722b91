"""One object as the read paths hold it: encoded once per served version, decoded only on demand.

kube's cachingObject keeps, per object, the bytes each encoder produced so that a GET, a LIST and a
watch event fanned out to a thousand watchers serialize it once. Here the object is kept *as* those
bytes: the JSON of its storage version exactly as a GET in that version answers it (pruned, defaulted,
resourceVersion set), plus what list and watch filtering need (labels and selectable fields). Other
versions are encoded on first use and memoized; the hub object is decoded again only for the rare
callers that need it (Tables, admission, writes), so the cache holds bytes, not Python object graphs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from apis.runtime.codec import Codec

_NO_LABELS: Mapping[str, str] = {}


class StoredObject:
    """Immutable once built; every accessor returns fresh values or shared bytes, never shared dicts."""

    __slots__ = ("_encoded", "_hub", "codec", "fields", "key", "labels", "revision")

    def __init__(
        self,
        codec: Codec,
        key: str,
        revision: int,
        labels: Mapping[str, str],
        fields: dict[str, str],
        *,
        encoded: dict[str, bytes] | None = None,
        hub: Any = None,
    ) -> None:
        self.codec = codec
        self.key = key
        self.revision = revision
        self.labels = labels
        self.fields = fields
        self._encoded: dict[str, bytes] = encoded or {}
        # Kept only by objects that live for one request (read-through), where decoding again would
        # be wasted work; cached objects drop it so the cache holds bytes.
        self._hub = hub

    @classmethod
    def from_hub(
        cls, codec: Codec, key: str, hub: Any, fields: dict[str, str], *, keep_hub: bool
    ) -> StoredObject:
        """`hub` has metadata.resourceVersion set. With `keep_hub` the caller gives up `hub`."""
        revision = int(hub.metadata.get("resourceVersion") or 0)
        labels = hub.metadata.get("labels") or _NO_LABELS
        if keep_hub:
            return cls(codec, key, revision, dict(labels), fields, hub=hub)
        storage = codec.kind.storage_version
        encoded = {storage: orjson.dumps(codec.to_version(hub, storage))}
        return cls(codec, key, revision, dict(labels) if labels else _NO_LABELS, fields, encoded=encoded)

    @property
    def name(self) -> str:
        return self.fields.get("metadata.name", "")

    @property
    def namespace(self) -> str:
        return self.fields.get("metadata.namespace", "")

    def hub(self) -> Any:
        """A new hub object the caller may change."""
        if self._hub is not None:
            # Read-through objects hand their hub out once; later calls decode from bytes.
            hub, self._hub = self._hub, None
            self._encoded.setdefault(
                self.codec.kind.storage_version,
                orjson.dumps(self.codec.to_version(hub, self.codec.kind.storage_version)),
            )
            return hub
        storage = self.codec.kind.storage_version
        return self.codec.from_version(orjson.loads(self._encoded[storage]), storage)

    def json(self, version: str) -> bytes:
        """The object in `version`, as GET answers it; computed once per version."""
        encoded = self._encoded.get(version)
        if encoded is None:
            if self._hub is not None:
                encoded = orjson.dumps(self.codec.to_version(self._hub, version))
            else:
                encoded = orjson.dumps(self.codec.to_version(self.hub(), version))
            self._encoded[version] = encoded
        return encoded

    def versioned(self, version: str) -> dict[str, Any]:
        """The object in `version` as a dict (for Tables and metadata-only answers)."""
        if self._hub is not None:
            return self.codec.to_version(self._hub, version)
        return orjson.loads(self.json(version))

    def at_revision(self, revision: int) -> StoredObject:
        """The same state reported at another revision (a DELETED event carries the delete's)."""
        hub = self.hub()
        hub.metadata["resourceVersion"] = str(revision)
        return StoredObject.from_hub(self.codec, self.key, hub, self.fields, keep_hub=False)
