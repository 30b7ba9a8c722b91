"""Short constructors for structural schemas, so a kind's declaration reads like its Go type.

Each returns a plain schema dict; `extra` carries anything else the schema language has (`default`,
`enum`, `x-kubernetes-list-type`, ...), spelled as in OpenAPI.
"""

from __future__ import annotations

from typing import Any


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def array(items: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": items, **extra}


def struct(description: str, /, **properties: dict[str, Any]) -> dict[str, Any]:
    """An object with these properties (none: an empty struct, e.g. a status not used yet)."""
    return {"type": "object", "description": description, "properties": properties}
