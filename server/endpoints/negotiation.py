"""Content negotiation: which representation the client asked for (Accept) and sent (Content-Type).

kubectl asks for Tables with `application/json;as=Table;v=v1;g=meta.k8s.io,...,application/json`
and metadata-only clients (the garbage collector) for `as=PartialObjectMetadata`; the first
acceptable entry in preference order wins, and an Accept header with nothing we can produce is 406.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from apis.meta import errors

JSON = "application/json"
YAML = "application/yaml"
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
        if not self.transform:
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
    return None


@functools.lru_cache(maxsize=256)
def negotiate_output(accept: str | None, *, allow_transforms: tuple[str, ...] = TRANSFORMS) -> Output:
    """Pick the representation; `allow_transforms` narrows `as=` to what the endpoint can produce.

    Memoized: a client sends the same few Accept headers on every request, and parsing them was a
    measurable part of a GET. (A 406 is raised, never cached.)"""
    if not accept:
        return Output()
    for r in parse_accept(accept):
        media = _media_for(r.type)
        if media is None:
            continue
        transform = r.params.get("as", "")
        if not transform:
            return Output(media)
        group, version = r.params.get("g", ""), r.params.get("v", "")
        if transform in allow_transforms and group == META_GROUP and version in META_VERSIONS:
            return Output(media, transform, version)
    raise errors.not_acceptable(
        f"only the following media types are accepted: {JSON}, {YAML}, "
        f"{JSON};as=Table;v=v1;g={META_GROUP}, {JSON};as=PartialObjectMetadata;v=v1;g={META_GROUP}"
    )


def body_media_type(content_type: str | None, accepted: tuple[str, ...]) -> str:
    """The media type of a request body, or 415 naming what this endpoint accepts."""
    media = (content_type or JSON).split(";", 1)[0].strip().lower()
    if media == "text/yaml":
        media = YAML
    if media not in accepted:
        raise errors.unsupported_media_type(", ".join(accepted))
    return media
