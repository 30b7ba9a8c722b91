"""One object as the read paths hold it: encoded once per served version, decoded only on demand.

kube's cachingObject keeps, per object, the bytes each encoder produced so that a GET, a LIST and a
watch event fanned out to a thousand watchers serialize it once. Here the object is kept *as* those
bytes: the JSON of its storage version exactly as a GET in that version answers it (pruned, defaulted,
resourceVersion set), plus what list and watch filtering need (labels and selectable fields). Other
versions are encoded on first use and memoized; the hub object is decoded again only for the rare
callers that need it (Tables, admission, writes), so the cache holds bytes, not Python object graphs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from apis.runtime.codec import Codec

_NO_LABELS: Mapping[str, str] = {}
_NO_FIELDS: Mapping[str, str] = {}
# How many encodings `StoredObject.encoded` has made (memo misses), for the tests that prove a
# watch event fanned out to many watchers is encoded once per version and format.
_encodings_made = 0


def encodings_made() -> int:
    return _encodings_made


def _dumps(data: Any) -> bytes:
    """orjson.dumps, copied to an exact-size bytes object: orjson hands back its whole output buffer
    (4 KiB for a 500-byte object, measured with orjson 3.13), which a cache keeping 10,000 objects
    for hours must not hold on to."""
    return memoryview(orjson.dumps(data)).tobytes()


class StoredObject:
    """Immutable once built; every accessor returns fresh values or shared bytes, never shared dicts.

    Sized for the cache (10,000 objects should cost about twice their encoded size): the storage
    version's bytes in a slot of their own, other versions in a dict made on first use, and the
    selectable fields kept as the key, the namespace and (rarely any) extra fields, namespaces interned.
    """

    __slots__ = (
        "_encoded",
        "_hub",
        "_json",
        "_other",
        "codec",
        "extra",
        "key",
        "labels",
        "namespace",
    )

    def __init__(
        self,
        codec: Codec,
        key: str,
        labels: Mapping[str, str],
        fields: dict[str, str],
        *,
        encoded: bytes | None = None,
        hub: Any = None,
    ) -> None:
        self.codec = codec
        self.key = key
        self.labels = labels
        rest = dict(fields)
        # The name is the key's last segment (kept once, in the key).
        rest.pop("metadata.name", None)
        namespace = rest.pop("metadata.namespace", None)
        # None for a cluster-scoped kind, which has no metadata.namespace field to select on.
        self.namespace = sys.intern(namespace) if namespace is not None else None
        self.extra: Mapping[str, str] = rest or _NO_FIELDS
        # The storage version's JSON (None only while a read-through object still holds its hub).
        self._json = encoded
        self._other: dict[str, bytes] | None = None
        # Other encodings (protobuf per version, metadata only), made on first use and kept.
        self._encoded: dict[str, bytes] | None = None
        # Kept only by objects that live for one request (read-through), where decoding again would
        # be wasted work; cached objects drop it so the cache holds bytes.
        self._hub = hub

    @classmethod
    def from_hub(
        cls, codec: Codec, key: str, hub: Any, fields: dict[str, str], *, keep_hub: bool
    ) -> StoredObject:
        """`hub` has metadata.resourceVersion set. With `keep_hub` the caller gives up `hub`."""
        labels = hub.metadata.get("labels")
        labels = dict(labels) if labels else _NO_LABELS
        if keep_hub:
            return cls(codec, key, labels, fields, hub=hub)
        encoded = _dumps(codec.view(hub, codec.kind.storage_version))
        return cls(codec, key, labels, fields, encoded=encoded)

    @property
    def name(self) -> str:
        return self.key.rpartition("/")[2]

    @property
    def fields(self) -> dict[str, str]:
        """The selectable fields, as field selectors see them (built per call: selectors are rare)."""
        fields = {"metadata.name": self.name}
        if self.namespace is not None:
            fields["metadata.namespace"] = self.namespace
        if self.extra:
            fields.update(self.extra)
        return fields

    def hub(self) -> Any:
        """A new hub object the caller may change."""
        storage = self.codec.kind.storage_version
        if self._hub is not None:
            # Read-through objects hand their hub out once; later calls decode from bytes.
            hub, self._hub = self._hub, None
            if self._json is None:
                self._json = _dumps(self.codec.to_version(hub, storage))
            return hub
        assert self._json is not None
        return self.codec.from_version(orjson.loads(self._json), storage)

    def json(self, version: str) -> bytes:
        """The object in `version`, as GET answers it; computed once per version."""
        if version == self.codec.kind.storage_version and self._json is not None:
            return self._json
        if self._other is not None and (encoded := self._other.get(version)) is not None:
            return encoded
        hub = self._hub if self._hub is not None else self.hub()
        encoded = _dumps(self.codec.to_version(hub, version))
        if version == self.codec.kind.storage_version:
            self._json = encoded
        else:
            if self._other is None:
                self._other = {}
            self._other[version] = encoded
        return encoded

    def encoded(self, key: str, make: Callable[[StoredObject], bytes]) -> bytes:
        """Another encoding of the object (`key` names format and version), made by `make` once.

        kube's cachingObject memoizes every encoder's output per object; here the JSON is kept
        eagerly (every client reads it) and any other format only once a client asked for it, so a
        server whose clients all speak JSON holds nothing more."""
        encoded = self._encoded.get(key) if self._encoded is not None else None
        if encoded is None:
            global _encodings_made
            _encodings_made += 1
            encoded = make(self)
            if self._encoded is None:
                self._encoded = {}
            self._encoded[key] = encoded
        return encoded

    def versioned(self, version: str) -> dict[str, Any]:
        """The object in `version` as a dict (for Tables and metadata-only answers)."""
        if self._hub is not None:
            return self.codec.to_version(self._hub, version)
        return orjson.loads(self.json(version))

    def at_revision(self, revision: int) -> StoredObject:
        """The same state reported at another revision (a DELETED event carries the delete's).

        Only metadata.resourceVersion differs, so the JSON is stamped again rather than decoded to a
        hub and encoded back: every watch cache does this once per deleted object, and a
        deletecollection of 10,000 made that a visible share of its time (5 µs instead of 32 µs)."""
        data = orjson.loads(self.json(self.codec.kind.storage_version))
        data["metadata"]["resourceVersion"] = str(revision)
        return StoredObject(self.codec, self.key, self.labels, self.fields, encoded=_dumps(data))
