"""`--watch-cache`: serve reads and watches from memory (registry/generic/cache/) or from storage.

A FlagGroup in the FLAG_GROUPS pattern of server/options/__init__.py.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from server.flags import add_bool


@dataclass(slots=True)
class WatchCacheOptions:
    watch_cache: bool = True

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        add_bool(
            parser.add_argument_group("caching"),
            "--watch-cache",
            WatchCacheOptions().watch_cache,
            "Enable the watch cache: lists, gets and watches are served from memory kept current by one "
            "storage watch per resource. false reads through to storage on every request.",
        )

    def validate(self) -> list[str]:
        return []
