"""Rewrite stored objects in their kind's storage version: the engine of `pizza-apiserver migrate-storage`.

Why it exists: the codec reads stored bytes in any served version, so objects an older release wrote
(say v1alpha1) keep working only while that version is served. Before a release drops a version, every
object must be rewritten in the storage version; this does it straight through `storage.Interface` and
the kind's codec, for any group, with the server running:

- each object is rewritten by `guaranteed_update`, i.e. compare-and-swap on its mod_revision: a write
  by the server in between makes the swap fail and the object is re-read, re-decoded and retried; an
  object deleted in between is simply gone (counted, not an error);
- nothing but the encoding changes: no admission, no validation, no managedFields or generation bump
  (the hub object decoded from the old bytes is what is encoded), as kube's storage version migrator's
  no-op update leaves an object's content alone;
- an object whose bytes would not change (already encoded as the server writes it today) is left alone,
  as kube's GuaranteedUpdate skips a write with identical bytes, so `rewrite_all` re-encodes only what
  differs (objects written before a default or a pruning rule existed, for instance);
- resources and keys are visited in key order, one list page at a time, so "every key up to K is done"
  is a complete record of progress: K is the continue point a later run resumes after.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import orjson

from apis.runtime.codec import Codec, DecodeError
from registry.generic.keys import resource_prefix
from storage import interface as st

# Objects rewritten at once within a page: lets the embedded store's group commit and etcd's pipelining
# work, while bounding what one run adds to the server's load.
CONCURRENCY = 8


class Outcome(enum.Enum):
    REWRITTEN = "rewritten"  # written in the storage version (with dry_run: would be)
    CURRENT = "current"  # already stored as the server writes it: left alone
    GONE = "gone"  # deleted while the migration ran
    FAILED = "failed"  # cannot be decoded (corrupt, or a version no longer served)


@dataclass(frozen=True, slots=True)
class Target:
    """One resource to migrate, and where in it to start."""

    codec: Codec
    # Resume after this key (a continue point inside this resource); None: from the first key.
    after: str | None = None

    @property
    def prefix(self) -> str:
        return resource_prefix(self.codec.group, self.codec.kind.resource)

    @property
    def name(self) -> str:
        """kubectl's `<resource>.<group>`."""
        return f"{self.codec.kind.resource}.{self.codec.group}"

    @property
    def storage_api_version(self) -> str:
        return self.codec.api_version(self.codec.kind.storage_version)


@dataclass
class Tally:
    """What happened to the objects of one resource."""

    outcomes: dict[Outcome, int] = field(default_factory=lambda: dict.fromkeys(Outcome, 0))
    failures: list[tuple[str, str]] = field(default_factory=list)  # (key, why)
    # Every key of the resource was examined (False: stopped between pages).
    complete: bool = False
    # Compare-and-swaps lost to a concurrent write, each followed by a re-read and a retry.
    conflicts: int = 0

    @property
    def examined(self) -> int:
        return sum(self.outcomes.values())

    def add(self, outcome: Outcome) -> None:
        self.outcomes[outcome] += 1


@dataclass(frozen=True, slots=True)
class PageDone:
    """Reported after each page: every key of `target` up to `last_key` is done."""

    target: Target
    last_key: str
    objects: int
    tally: Tally


def plan(codecs: Sequence[Codec], continue_from: str | None = None) -> list[Target]:
    """The resources in key order, the ones a continue point has passed left out.

    Resource prefixes are directories ("/g/pizzas/"), so a key either lies under a prefix or sorts
    entirely before or after all of its keys: one key is enough to say where a run stopped.
    """
    targets = sorted((Target(codec) for codec in codecs), key=lambda t: t.prefix)
    if continue_from is None:
        return targets
    if not any(continue_from.startswith(t.prefix) for t in targets):
        raise ValueError(f"{continue_from!r} is not a key of any resource being migrated")
    planned = []
    for target in targets:
        if continue_from.startswith(target.prefix):
            planned.append(Target(target.codec, continue_from))
        elif target.prefix > continue_from:
            planned.append(target)
    return planned


async def count(storage: st.Interface, target: Target) -> int:
    """How many objects `target` has left to examine (one list of one key: the backend counts)."""
    start = target.after + "\x00" if target.after is not None else None
    page = await storage.list(target.prefix, start_key=start, limit=1)
    return len(page.items) + page.remaining


async def migrate(
    storage: st.Interface,
    target: Target,
    *,
    page_size: int,
    rewrite_all: bool = False,
    dry_run: bool = False,
    stop: asyncio.Event | None = None,
    on_page: Callable[[PageDone], None] = lambda _: None,
) -> Tally:
    """Rewrite the objects of one resource, page by page, until done or `stop` is set between pages.

    Each page is listed at the store's revision of that moment (not pinned to the first page's), so a
    long run never hits a compacted revision; objects created behind the cursor meanwhile were written
    by the server, hence already in the storage version.
    """
    tally = Tally()
    start = target.after + "\x00" if target.after is not None else None
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(kv: st.KeyValue) -> None:
        async with limit:
            outcome, why, tries = await rewrite(storage, target, kv, rewrite_all=rewrite_all, dry_run=dry_run)
        tally.add(outcome)
        tally.conflicts += max(0, tries - 1)
        if why:
            tally.failures.append((kv.key, why))

    while stop is None or not stop.is_set():
        page = await storage.list(target.prefix, start_key=start, limit=page_size)
        if page.items:
            await asyncio.gather(*(one(kv) for kv in page.items))
            on_page(PageDone(target, page.items[-1].key, len(page.items), tally))
        if not page.more or not page.items:
            tally.complete = True
            break
        start = page.items[-1].key + "\x00"
    return tally


async def rewrite(
    storage: st.Interface, target: Target, kv: st.KeyValue, *, rewrite_all: bool, dry_run: bool
) -> tuple[Outcome, str, int]:
    """Rewrite one object (listed as `kv`) in the storage version: the outcome, why if it failed, and
    how many times the object was read (more than once after a conflict)."""
    codec = target.codec
    if not rewrite_all and _api_version(kv.value) == target.storage_api_version:
        return Outcome.CURRENT, "", 1
    if dry_run:
        try:
            encoded = reencode(codec, kv)
        except DecodeError as err:
            return Outcome.FAILED, str(err), 1
        return (Outcome.CURRENT if encoded == kv.value else Outcome.REWRITTEN), "", 1

    wrote = False
    tries = 0

    async def update(current: st.KeyValue | None) -> bytes:
        nonlocal wrote, tries
        tries += 1
        assert current is not None  # guaranteed_update raises NotFound instead
        if not rewrite_all and _api_version(current.value) == target.storage_api_version:
            wrote = False  # the server rewrote it meanwhile
            return current.value
        encoded = reencode(codec, current)
        wrote = encoded != current.value
        return encoded

    try:
        await storage.guaranteed_update(kv.key, update)
    except st.NotFound:
        return Outcome.GONE, "", tries
    except DecodeError as err:
        return Outcome.FAILED, str(err), tries
    return (Outcome.REWRITTEN if wrote else Outcome.CURRENT), "", tries


def reencode(codec: Codec, kv: st.KeyValue) -> bytes:
    """The bytes the server would store for this object today: decoded from whatever version it was
    written in (pruned and defaulted in that version), converted through the hub, encoded in the storage
    version."""
    return codec.encode(codec.decode(kv.value, kv.mod_revision))


def _api_version(raw: bytes) -> str:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    return str(data.get("apiVersion", "")) if isinstance(data, dict) else ""
