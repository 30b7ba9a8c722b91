"""Content negotiation: which representation the client asked for (Accept) and sent (Content-Type).

kubectl asks for Tables with `application/json;as=Table;v=v1;g=meta.k8s.io,...,application/json`
and metadata-only clients (the garbage collector) for `as=PartialObjectMetadata`; the first
acceptable entry in preference order wins, and an Accept header with nothing we can produce is 406.
client-go's metadata informers put kube's protobuf first
(`application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;...`):
protobuf is served for the meta types and for the kinds whose group generated messages; a Table
has no protobuf message in kube, so `protobuf;as=Table` falls through to the next entry.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from apis.meta import errors

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")


@dataclass(frozen=True, slots=True)
class MediaRange:
    type: str
    params: dict[str, str]
    q: float


@dataclass(frozen=True, slots=True)
class Output:
    """What to send: a media type, and optionally an object transform (`as=`) in a meta version."""

    media: str = JSON
    transform: str = ""
    transform_version: str = ""

    @property
    def content_type(self) -> str:
        # kube answers protobuf without the `as=` parameters (handlers/responsewriters: the
        # serializer's media type), whatever the Accept said.
        if not self.transform or self.media == PROTOBUF:
            return self.media
        return f"{self.media};as={self.transform};v={self.transform_version};g={META_GROUP}"


def parse_accept(header: str) -> list[MediaRange]:
    ranges: list[MediaRange] = []
    for index, part in enumerate(header.split(",")):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for piece in pieces[1:]:
            name, _, value = piece.partition("=")
            params[name.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        ranges.append(MediaRange(pieces[0].lower(), params, q - index * 1e-9))
    return sorted((r for r in ranges if r.q > 0), key=lambda r: -r.q)


def _media_for(range_type: str) -> str | None:
    if range_type in (JSON, "application/*", "*/*"):
        return JSON
    if range_type in (YAML, "application/yml", "text/yaml"):
        return YAML
    if range_type == PROTOBUF:
        return PROTOBUF
    return None


@functools.lru_cache(maxsize=256)
def negotiate_output(
    accept: str | None,
    *,
    allow_transforms: tuple[str, ...] = TRANSFORMS,
    protobuf: bool = False,
    no_protobuf: str = "",
) -> Output:
    """Pick the representation; `allow_transforms` narrows `as=` to what the endpoint can produce.

    `protobuf`: the endpoint can write kube protobuf (else protobuf entries are skipped).
    `no_protobuf` names the kind's Go-style type (`*v1alpha1.Flunder`) when its group generated no
    protobuf messages: a plain protobuf entry is then skipped, and when nothing else is acceptable
    the 406 says what kube's protobuf serializer says of such an object.

    Memoized: a client sends the same few Accept headers on every request, and parsing them was a
    measurable part of a GET. (A 406 is raised, never cached.)"""
    if not accept:
        return Output()
    skipped_protobuf = False
    for r in parse_accept(accept):
        media = _media_for(r.type)
        if media is None or (media == PROTOBUF and not protobuf):
            continue
        transform = r.params.get("as", "")
        if not transform:
            if media == PROTOBUF and no_protobuf:
                skipped_protobuf = True
                continue
            return Output(media)
        if media == PROTOBUF and transform == "Table":
            continue
        group, version = r.params.get("g", ""), r.params.get("v", "")
        if transform in allow_transforms and group == META_GROUP and version in META_VERSIONS:
            return Output(media, transform, version)
    if skipped_protobuf:
        raise errors.not_acceptable(
            f"object {no_protobuf} does not implement the protobuf marshalling interface "
            "and cannot be encoded to a protobuf message"
        )
    served = f"{JSON}, {YAML}, {PROTOBUF}" if protobuf else f"{JSON}, {YAML}"
    raise errors.not_acceptable(
        f"only the following media types are accepted: {served}, "
        f"{JSON};as=Table;v=v1;g={META_GROUP}, {JSON};as=PartialObjectMetadata;v=v1;g={META_GROUP}"
    )


@functools.lru_cache(maxsize=64)
def error_media(accept: str) -> str:
    """The media type of an error answer (kube's ErrorNegotiated): the first Accept entry without
    `as=`/`g=`/`v=` (errors are never transformed) that can be written, else JSON. So client-go's
    metadata client, whose only plain entry is `application/json`, gets its errors in JSON; a
    client asking plain protobuf gets a protobuf Status. YAML errors stay JSON, as they always were here."""
    for r in parse_accept(accept):
        media = _media_for(r.type)
        if media is None or "as" in r.params or "g" in r.params or "v" in r.params:
            continue
        return PROTOBUF if media == PROTOBUF else JSON
    return JSON


def body_media_type(content_type: str | None, accepted: tuple[str, ...]) -> str:
    """The media type of a request body, or 415 naming what this endpoint accepts."""
    media = (content_type or JSON).split(";", 1)[0].strip().lower()
    if media == "text/yaml":
        media = YAML
    if media not in accepted:
        raise errors.unsupported_media_type(", ".join(accepted))
    return media
