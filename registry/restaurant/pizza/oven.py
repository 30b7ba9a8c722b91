"""GET pizzas/{name}/oven: the pizza's baking log as text, followed live on request (a rest.Connecter).

The log is read from the storage history of the pizza's key: a watch (of its namespace's pizzas, as
storage watches directories) from the revision it was created at replays every version since (etcd
keeps history until compaction, the embedded store its last `history_limit` revisions), and
baking_log.py compares consecutive versions. Nothing is kept in memory
between requests, so every worker and server tells the same log, also after a restart. When the start
of the history is compacted, the log starts at the oldest state still retained and says so first.

Without `follow` the log ends at the version current when the request came; with it, new lines follow
as the pizza changes, until it is deleted (the stream ends) or the client leaves (the server closes
this generator, which closes the storage watch).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

from apis.meta import errors
from apis.restaurant.oven_options import (
    OVEN_OPTION_FIELDS,
    OVEN_OPTIONS_KIND,
    OvenOptions,
    parse_oven_options,
)
from registry.generic.custom_subresources import Connecter, QueryParameter, SubresourceRequest
from registry.generic.storage_errors import interpret
from registry.generic.store import Store
from registry.restaurant.pizza.baking_log import BakingState, LogLine, baking_state, changes, created, resumed
from storage import interface as st

# Compactions racing the start of a log: after this many, the history is not worth chasing.
RESUME_ATTEMPTS = 3


class Oven(Connecter):
    kind = OVEN_OPTIONS_KIND
    parameters = tuple(QueryParameter(*field) for field in OVEN_OPTION_FIELDS)

    def __init__(self, pizzas: Store) -> None:
        self.pizzas = pizzas

    async def connect(self, request: SubresourceRequest) -> AsyncGenerator[bytes, None]:
        options = parse_oven_options(request.query, request.name)
        key = self.pizzas.key(request.namespace, request.name)
        try:
            current = await self.pizzas.storage.get(key)
        except st.StorageError as e:
            raise interpret(e, self.pizzas.resource, request.name) from e
        return self._log(self.pizzas.prefix(request.namespace), key, current, options)

    async def _log(
        self, directory: str, key: str, current: st.KeyValue, options: OvenOptions
    ) -> AsyncGenerator[bytes, None]:
        since = options.since(datetime.now(UTC))
        backlog: list[LogLine] | None = []
        async for line in self._lines(directory, key, current, options.follow):
            if line is None:  # caught up with the version current at the request: the history is told
                for old in _tail(backlog or [], options.tail_lines):
                    yield old.render(options.timestamps)
                backlog = None
            elif since is not None and ((at := line.at()) is None or at < since):
                continue
            elif backlog is not None:
                backlog.append(line)
            else:
                yield line.render(options.timestamps)

    async def _lines(
        self, directory: str, key: str, current: st.KeyValue, follow: bool
    ) -> AsyncGenerator[LogLine | None, None]:
        """The lines in order, None once the version `current` has been told. Without `follow` that is
        the end; with it, lines go on until the pizza is deleted. Storage watches directories, so this
        watches the namespace's pizzas and keeps the events of `key`."""
        after = current.create_revision - 1
        state: BakingState | None = None
        for _ in range(RESUME_ATTEMPTS):
            stream = self.pizzas.storage.watch(directory, after)
            try:
                async for event in stream:
                    if event.key != key:
                        continue  # another pizza, or a progress notice
                    if event.type == st.EventType.DELETED:
                        return
                    pizza = self._decode(event.value, event.revision)
                    if state is None:
                        yield created(pizza)
                    else:
                        for line in changes(state, pizza):
                            yield line
                    state = baking_state(pizza)
                    if event.revision == current.mod_revision:
                        yield None
                        if not follow:
                            return
                return
            except st.TooOldResourceVersion as e:
                # Start again from the oldest retained state, saying so.
                after = e.oldest
                try:
                    kv = await self.pizzas.storage.get(key, revision=after)
                except st.TooOldResourceVersion:
                    continue
                except st.NotFound:
                    return
                pizza = self._decode(kv.value, kv.mod_revision)
                yield resumed(pizza, after)
                state = baking_state(pizza)
                if kv.mod_revision >= current.mod_revision:
                    yield None
                    if not follow:
                        return
            finally:
                await stream.aclose()
        raise errors.gone(f"the history of {key} was compacted while it was being read")

    def _decode(self, value: bytes, revision: int) -> Any:
        return self.pizzas.codec.decode(value, revision)


def _tail(lines: list[LogLine], count: int | None) -> list[LogLine]:
    if count is None:
        return lines
    return lines[len(lines) - count :] if count else []
