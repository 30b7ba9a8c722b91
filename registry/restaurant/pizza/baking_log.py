"""The baking log of a pizza: one line per change of its baking state between consecutive versions.

The baking state is what the oven cares about: how many to bake (spec.replicas), how many are baked
(status.replicas) and whether deletion started (metadata.deletionTimestamp). Lines are derived from
stored versions only, so every worker and server, before and after a restart, tells the same log.
A line's time is the pizza's creationTimestamp for "created", else the newest managedFields time of
the version that made the change (every write stamps its manager's entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class BakingState:
    spec_replicas: int | None
    status_replicas: int | None
    deleting: bool

    def describe(self) -> str:
        text = f"spec.replicas={_count(self.spec_replicas)} status.replicas={_count(self.status_replicas)}"
        return text + (", deletion started" if self.deleting else "")


@dataclass(frozen=True, slots=True)
class LogLine:
    time: str  # RFC 3339, as stored
    text: str

    def render(self, timestamps: bool) -> bytes:
        return (f"{self.time} {self.text}\n" if timestamps else f"{self.text}\n").encode()

    def at(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.time)
        except ValueError:
            return None


def _count(value: int | None) -> str:
    return "unset" if value is None else str(value)


def baking_state(pizza: Any) -> BakingState:
    status = pizza.status
    return BakingState(
        spec_replicas=pizza.spec.replicas,
        status_replicas=status.replicas if status is not None else None,
        deleting=bool(pizza.metadata.get("deletionTimestamp")),
    )


def written_at(pizza: Any) -> str:
    """The newest managedFields time of this version (the write that made it), else its creation."""
    times = [entry.get("time") or "" for entry in pizza.metadata.get("managedFields") or ()]
    return max(times, default="") or str(pizza.metadata.get("creationTimestamp") or "")


def created(pizza: Any) -> LogLine:
    state = baking_state(pizza)
    return LogLine(
        str(pizza.metadata.get("creationTimestamp") or ""),
        f"created: spec.replicas={_count(state.spec_replicas)}",
    )


def resumed(pizza: Any, revision: int) -> LogLine:
    """The first line when the history before `revision` was compacted away."""
    state = baking_state(pizza).describe()
    return LogLine(
        written_at(pizza), f"history before revision {revision} is compacted; oldest retained state: {state}"
    )


def changes(old: BakingState, pizza: Any) -> list[LogLine]:
    """The lines for going from `old` to the version `pizza`, in a fixed order."""
    new = baking_state(pizza)
    time = written_at(pizza)
    lines = []
    if new.spec_replicas != old.spec_replicas:
        lines.append(
            LogLine(
                time, f"spec.replicas changed: {_count(old.spec_replicas)} -> {_count(new.spec_replicas)}"
            )
        )
    if new.status_replicas != old.status_replicas:
        lines.append(
            LogLine(
                time,
                f"status.replicas changed: {_count(old.status_replicas)} -> {_count(new.status_replicas)}",
            )
        )
    if new.deleting and not old.deleting:
        lines.append(LogLine(time, "deletion started"))
    return lines
