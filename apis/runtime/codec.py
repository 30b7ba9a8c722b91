"""Moves objects of one kind between their wire/storage forms and the hub.

Every path in or out of the server goes through here, so defaulting happens in exactly the places
KEP-575 names: on decoding a request (after pruning), after mutating admission (the handler calls
`redefault`), and on reading from storage — in the version the bytes were written in, which is how
objects stored by an older release (another served version) are still read correctly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from apis.runtime.kinds import HubObject, KindInfo
from apis.schema.defaults import apply_defaults
from apis.schema.prune import prune


class DecodeError(ValueError):
    """Stored bytes that cannot be read back as this kind (corrupt, or a version no longer served)."""


@dataclass(frozen=True, slots=True)
class Codec:
    group: str
    kind: KindInfo

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}"

    def version_of(self, api_version: str) -> str | None:
        """The served version named by `api_version`, or None when it is not one of this group's."""
        group, _, version = api_version.rpartition("/")
        if group != self.group or version not in self.kind.versions:
            return None
        return version

    def to_version(self, hub: HubObject, version: str) -> dict[str, Any]:
        return self._typed(version, self.kind.versions[version].from_hub(hub))

    def view(self, hub: HubObject, version: str) -> dict[str, Any]:
        """`to_version` for a caller that only reads the result, or pops top-level metadata keys:
        every other value is `hub`'s own, not a copy (encoding, validating, indexing a create's
        object copied it four times). Neither side may be changed while the other is in use."""
        versioned = self.kind.versions[version]
        return self._typed(version, (versioned.from_hub_view or versioned.from_hub)(hub))

    def _typed(self, version: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": self.api_version(version), "kind": self.kind.kind, **body}

    def from_version(self, data: dict[str, Any], version: str) -> HubObject:
        """A pruned and defaulted versioned dict → hub."""
        return self.kind.versions[version].to_hub(data)

    def default(self, data: dict[str, Any], version: str) -> None:
        apply_defaults(data, self.kind.versions[version].schema)

    def redefault(self, hub: HubObject, version: str) -> HubObject:
        """Apply `version`'s defaults again, e.g. to fields a mutating admission plugin removed."""
        data = self.to_version(hub, version)
        self.default(data, version)
        return self.from_version(data, version)

    # --- storage ---------------------------------------------------------------------------------

    def encode(self, hub: HubObject) -> bytes:
        """Hub → storage-version JSON. resourceVersion is never stored: it is the key's mod_revision."""
        data = self.view(hub, self.kind.storage_version)
        data["metadata"].pop("resourceVersion", None)
        data["metadata"].pop("selfLink", None)
        return orjson.dumps(data)

    def decode(self, raw: bytes, resource_version: int) -> HubObject:
        """Storage bytes (in any served version) → hub with metadata.resourceVersion set."""
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise DecodeError(f"stored object is not valid JSON: {e}") from e
        if not isinstance(data, dict):
            raise DecodeError("stored object is not a JSON object")
        version = self.version_of(str(data.get("apiVersion", "")))
        if version is None or data.get("kind") != self.kind.kind:
            raise DecodeError(
                f"stored object has apiVersion {data.get('apiVersion')!r}, kind {data.get('kind')!r}"
            )
        schema = self.kind.versions[version].schema
        prune(data, schema)
        apply_defaults(data, schema)
        metadata = data.setdefault("metadata", {})
        metadata["resourceVersion"] = str(resource_version)
        return self.from_version(data, version)
