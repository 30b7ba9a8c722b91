"""The generated protobuf messages of a group's kinds, found from the group's one declaration.

A group declares `GroupInfo.protobuf`, the package under which `python -m apis.proto.generate` wrote
`<version>/generated_pb2.py` for every served version (apis/runtime/proto_schema.py); a kind's
messages there are named as the kind and its list kind. Serving looks them up per request, so the
answer is cached; the module is imported on first use, so a server whose clients never ask for
protobuf never loads it.
"""

from __future__ import annotations

import functools
import importlib

from google.protobuf.message import Message

from apis.runtime.kinds import GroupInfo, KindInfo


def proto_messages(group: GroupInfo, version: str, kind: str) -> tuple[type[Message], type[Message]] | None:
    """The message of `kind` in `version` of `group` and the message of its list, or None when the
    group declares no protobuf or does not serve the kind in that version."""
    info = group.kind_named(kind)
    return None if info is None else kind_messages(group, version, info)


def kind_messages(
    group: GroupInfo, version: str, info: KindInfo
) -> tuple[type[Message], type[Message]] | None:
    """proto_messages for a kind already at hand (a request's scope): no search of the group's kinds."""
    if group.protobuf is None or version not in info.versions:
        return None
    return _messages(group.protobuf, version, info.kind, info.list_kind)


@functools.cache
def _messages(package: str, version: str, kind: str, list_kind: str) -> tuple[type[Message], type[Message]]:
    """Raises ImportError/AttributeError when the group declares messages it has not generated: a
    server that would otherwise refuse protobuf for a kind it says it has."""
    module = importlib.import_module(f"{package}.{version}.generated_pb2")
    return getattr(module, kind), getattr(module, list_kind)
