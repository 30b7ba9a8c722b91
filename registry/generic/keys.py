"""Storage key layout: /<resource>/[<namespace>/]<name> under the backend's prefix (DESIGN.md)."""

from __future__ import annotations


def object_key(resource: str, namespace: str, name: str) -> str:
    return f"/{resource}/{namespace}/{name}" if namespace else f"/{resource}/{name}"


def list_prefix(resource: str, namespace: str) -> str:
    """The directory holding a namespace's objects (or all of them); always ends in "/"."""
    return f"/{resource}/{namespace}/" if namespace else f"/{resource}/"
