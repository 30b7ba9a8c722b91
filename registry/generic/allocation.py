"""Allocation at create: a number field unique across a resource, like a Service's clusterIP in kube.

A resource declares an `Allocation` (which field, which range, where the number keys live); its Store
then gives every created object a number: a free one chosen at random when the create asks for none,
the one it asks for otherwise (422 when outside the range or taken). As kube's BeginCreate in
pkg/registry/generic/registry/store.go, this happens after mutating admission and before validation
and validating admission, so both see the number.

Why one storage key per number, written in the create's own transaction (storage.interface companions)
rather than kube's one bitmap key: every concurrent create would contend on that one key, and a create
that failed after reserving would have to give the number back. Here the number key is written only
together with the object, so nothing is reserved before the object exists (no leak by construction),
and the transaction's "every key absent" compare settles races between workers and servers; a lost
race picks another number. The numbers taken are known from the resource's watch cache (each cached
object's field, kept up to date by `observe`) plus those this process has in flight; without a cache
they are listed from the number keys. The number key holds its owner (key and uid) and goes in the
transaction that finally removes the object. The keys live outside the group's key directory
(`/<group>/`), so the watch cache never reads them. Repairing what a crash or a direct write leaves
behind is registry/generic/allocation_repair.py.

Updates keep the number (an update that omits it keeps the stored one, as kube keeps an omitted
clusterIP) and may not change it (`field is immutable`).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from apis.meta import errors
from apis.meta.errors import GroupKind, StatusError
from apis.meta.field import FieldError, invalid
from apis.runtime.codec import Codec
from apis.runtime.kinds import HubObject
from apis.runtime.scale import read_path, write_path
from registry.generic.options import WriteOptions
from storage import interface as st

# Random draws before falling back to walking the range (only when it is nearly full).
_RANDOM_DRAWS = 32
_RANGE = re.compile(r"\s*([0-9]{1,18})\s*-\s*([0-9]{1,18})\s*")


@dataclass(frozen=True, slots=True)
class NumberRange:
    """An inclusive range of positive integers, written "first-last" (e.g. "1-9999")."""

    first: int
    last: int

    @classmethod
    def parse(cls, text: str) -> NumberRange:
        """Raises ValueError saying what is wrong, for a flag's start-up error."""
        match = _RANGE.fullmatch(text)
        if match is None:
            raise ValueError(f'invalid range "{text}": want FIRST-LAST, e.g. 1-9999')
        first, last = int(match[1]), int(match[2])
        if first < 1:
            raise ValueError(f'invalid range "{text}": the first number must be at least 1')
        if last < first:
            raise ValueError(f'invalid range "{text}": {last} is below {first}')
        return cls(first, last)

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and self.first <= number <= self.last

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


@dataclass(frozen=True, slots=True)
class Allocation:
    """What a resource declares: `field` a JSON path in the hub's shape (".spec.orderNumber"), the
    range numbers are taken from, the storage key directory of the number keys (outside `/<group>/`,
    registry.generic.keys.allocation_prefix), and the noun errors use ("order number")."""

    field: str
    range: NumberRange
    key_prefix: str
    noun: str = "number"

    @property
    def path(self) -> str:
        """The field as error messages name it (kube's field path: no leading dot)."""
        return self.field.removeprefix(".")


@dataclass(slots=True)
class Reservation:
    """The number a create is about to write; `chosen` when the server picked it (a lost race then
    means trying another, while a number the client asked for is a 422)."""

    number: int
    chosen: bool


def number_of(obj: Any, allocation: Allocation) -> Any:
    """The field's value in a hub object; None when unset."""
    found = read_path(obj, allocation.field)
    return found if isinstance(found, int | str | float | bool) else None


def is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(eq=False)
class Allocator:
    """One resource's allocation at run time: what is taken, choosing, checking, and the companion
    keys a create writes and a delete removes. One per Store, shared by its requests."""

    allocation: Allocation
    codec: Codec
    storage: st.Interface
    # What the watch cache holds: object key → its number, and how many objects hold each number.
    _held: dict[str, int] = field(default_factory=dict)
    _holders: Counter[int] = field(default_factory=Counter)
    # Numbers of creates under way in this process, and numbers written but not seen in the cache yet.
    _in_flight: Counter[int] = field(default_factory=Counter)
    _recent: set[int] = field(default_factory=set)
    # Whether `_held` reflects a filled cache (set by `reset`, when the cache is (re)filled).
    observing: bool = False
    # The storage version's path to the field when that version has it (a deleted object's stored
    # JSON is read without decoding then), else None.
    _storage_path: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        parts = tuple(self.allocation.path.split("."))
        schema: Any = self.codec.kind.versions[self.codec.kind.storage_version].schema
        for part in parts:
            schema = (schema.get("properties") or {}).get(part) if isinstance(schema, dict) else None
        self._storage_path = parts if schema else None

    # --- the watch cache's view (registry.generic.cache.resource_cache.ObjectObserver) --------

    def seen(self, key: str, hub: Any) -> None:
        """An object of the cache now holds what `hub` says (read off the hub the cache decoded)."""
        self.gone(key)
        number = number_of(hub, self.allocation)
        if is_number(number):
            self._held[key] = number
            self._holders[number] += 1
            self._recent.discard(number)

    def gone(self, key: str) -> None:
        """The object at `key` no longer holds a number."""
        previous = self._held.pop(key, None)
        if previous is not None:
            self._holders[previous] -= 1
            if self._holders[previous] <= 0:
                del self._holders[previous]

    def filled(self, present: Callable[[str], object]) -> None:
        """The cache was (re)filled, each of its objects `seen`: forget the keys no longer there."""
        for key in [key for key in self._held if present(key) is None]:
            self.gone(key)
        self.observing = True

    def holds(self, number: int) -> bool:
        """Whether a cached object holds `number` (for repair and tests)."""
        return number in self._holders

    # --- create --------------------------------------------------------------------------------

    async def reserve(self, obj: HubObject, *, cached: bool, excluded: set[int]) -> Reservation:
        """The number `obj` is created with, set on it: checked when it asks for one, else chosen
        among the free ones (`excluded`: lost in a race by this request). `cached`: the watch cache
        is filled and serving, so `observe`'s view may be used; otherwise the number keys are read."""
        allocation = self.allocation
        asked = number_of(obj, allocation)
        if asked is not None:
            if not is_number(asked):
                raise self._invalid(obj, asked, "must be an integer")
            if asked not in allocation.range:
                raise self._invalid(obj, asked, self._not_in_range(asked))
            # Whether it is free is the create's compare to say: the cache may be a moment behind.
            self._in_flight[asked] += 1
            return Reservation(asked, chosen=False)
        number = self._choose((*await self._taken(cached), excluded))
        if number is None and cached:
            # The cache may not show a release yet: the number keys have the last word on "full".
            number = self._choose((*await self._taken(False), excluded))
        if number is None:
            raise errors.internal_error(f"failed to allocate {_article(allocation.noun)}: range is full")
        self._in_flight[number] += 1
        write_path(obj, allocation.field, number)
        return Reservation(number, chosen=True)

    def done(self, reservation: Reservation, *, written: bool) -> None:
        """The create is over: the number is no longer in flight (and, when written, taken until the
        cache shows it)."""
        self._in_flight[reservation.number] -= 1
        if self._in_flight[reservation.number] <= 0:
            del self._in_flight[reservation.number]
        if written and self.observing:
            self._recent.add(reservation.number)

    def unset(self, obj: HubObject) -> None:
        """Forget a number the server chose, before choosing another."""
        write_path(obj, self.allocation.field, None)

    def sync_decoded(self, obj: HubObject, write: WriteOptions) -> None:
        """Put a chosen number into the request's decoded data too, when its version has the field at
        the same path: the decoded data then still equals the object and schema validation is not
        run a second time for a number that is in range (registry/generic/validation.as_decoded)."""
        decoded = write.decoded
        if decoded is None or decoded.errors:
            return
        data: Any = decoded.data
        version = write.version or self.codec.kind.storage_version
        schema: Any = self.codec.kind.versions[version].schema
        *parents, last = self.allocation.path.split(".")
        for part in parents:
            schema = (schema.get("properties") or {}).get(part) if isinstance(schema, dict) else None
            data = data.get(part) if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(schema, dict) and last in (schema.get("properties") or {}):
            data[last] = number_of(obj, self.allocation)

    def companions(self, key: str, obj: HubObject, number: int) -> dict[str, bytes]:
        """The number key a create writes with the object."""
        return {self.number_key(number): owner_value(key, obj.metadata.get("uid", ""))}

    def number_key(self, number: int) -> str:
        return f"{self.allocation.key_prefix}{number}"

    async def check_free(self, obj: HubObject, number: int) -> None:
        """A dry run's check of an asked-for number against storage (a real create's compare does it)."""
        try:
            await self.storage.get(self.number_key(number))
        except st.NotFound:
            return
        raise self.taken(obj, number)

    async def _taken(self, cached: bool) -> tuple[Container[int], ...]:
        """The sets of taken numbers, not merged: merging the cache's 10,000 into one set would cost
        every create more than choosing does."""
        if cached and self.observing:
            return self._holders, self._in_flight, self._recent
        listed = await self.storage.list(self.allocation.key_prefix)
        numbers = {number_in_key(kv.key, self.allocation.key_prefix) for kv in listed.items}
        return {n for n in numbers if n is not None}, self._in_flight

    def _choose(self, taken: tuple[Container[int], ...]) -> int | None:
        """A random free number: a few random draws, then (a nearly full range) a walk over it."""
        span = self.allocation.range

        def free(number: int) -> bool:
            return not any(number in numbers for numbers in taken)

        for _ in range(_RANDOM_DRAWS):
            number = random.randint(span.first, span.last)
            if free(number):
                return number
        left = [n for n in range(span.first, span.last + 1) if free(n)]
        return random.choice(left) if left else None

    # --- errors, in kube's words for a Service IP ----------------------------------------------

    def taken(self, obj: HubObject, number: int) -> StatusError:
        noun = self.allocation.noun
        return self._invalid(
            obj, number, f"failed to allocate {noun} {number}: provided {noun} is already allocated"
        )

    def _not_in_range(self, number: int) -> str:
        noun = self.allocation.noun
        return (
            f"failed to allocate {noun} {number}: the provided {noun} ({number}) is not in the valid range. "
            f"The range of valid {noun}s is {self.allocation.range}"
        )

    def _invalid(self, obj: HubObject, value: Any, detail: str) -> StatusError:
        return errors.invalid(
            GroupKind(self.codec.group, self.codec.kind.kind),
            obj.metadata.get("name") or "",
            [invalid(self.allocation.path, value, detail)],
        )

    # --- update and delete ---------------------------------------------------------------------

    def keep_on_update(self, obj: HubObject, old: HubObject) -> None:
        """An update that omits the number keeps the stored one (a PUT or apply of a manifest
        written before the number was allocated)."""
        previous = number_of(old, self.allocation)
        if previous is not None and number_of(obj, self.allocation) is None:
            write_path(obj, self.allocation.field, previous)

    def validate_update(self, obj: HubObject, old: HubObject) -> list[FieldError]:
        value, previous = number_of(obj, self.allocation), number_of(old, self.allocation)
        if value == previous and type(value) is type(previous):
            return []
        return [invalid(self.allocation.path, value, "field is immutable")]

    def released_with(self, kv: st.KeyValue) -> Mapping[str, bytes]:
        """storage.interface.Companions: the number key deleted with this stored object, while it
        still names the object as its owner."""
        number, uid = self.stored_number(kv)
        if not is_number(number):
            return {}
        return {self.number_key(number): owner_value(kv.key, uid)}

    def stored_number(self, kv: st.KeyValue) -> tuple[Any, str]:
        """(number, uid) of a stored object; its JSON is read without decoding when it is in the
        storage version and that version has the field."""
        data = orjson.loads(kv.value)
        if self._storage_path is not None and data.get("apiVersion") == self.codec.api_version(
            self.codec.kind.storage_version
        ):
            value: Any = data
            for part in self._storage_path:
                value = value.get(part) if isinstance(value, dict) else None
            return value, (data.get("metadata") or {}).get("uid", "")
        obj = self.codec.decode(kv.value, kv.mod_revision)
        return number_of(obj, self.allocation), obj.metadata.get("uid", "")


def owner_value(key: str, uid: str) -> bytes:
    """What a number key holds: the storage key and uid of the object holding the number."""
    return orjson.dumps({"owner": key, "uid": uid})


def number_in_key(key: str, prefix: str) -> int | None:
    """The number a number key is for (None for a key that is not one)."""
    rest = key[len(prefix) :] if key.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
