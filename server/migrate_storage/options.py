"""The flags of `pizza-apiserver migrate-storage` beyond the server's own.

The command takes every server flag too (server/options.py), so an operator runs it with the flags the
server runs with: same storage, same prefix, same `--api-groups`. These are only what a migration adds.
A FlagGroup as in server/authn/options.py: field names are the argparse dests.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from server.flags import add_bool, add_int

DEFAULT_PAGE_SIZE = 100


@dataclass(slots=True)
class MigrationOptions:
    all: bool = False
    dry_run: bool = False
    continue_from: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("migration")
        add_bool(
            g,
            "--all",
            False,
            "Re-encode every stored object, not only those stored in another version than the storage "
            "version; an object is written only when its bytes change (e.g. stored before a default or a "
            "pruning rule existed).",
        )
        add_bool(
            g, "--dry-run", False, "Read and decode everything, count what would be rewritten, write nothing."
        )
        g.add_argument(
            "--continue",
            dest="continue_from",
            metavar="key",
            default=None,
            help="Resume an interrupted run after this key (the continue point the interrupted run printed).",
        )
        add_int(
            g,
            "--page-size",
            DEFAULT_PAGE_SIZE,
            "Objects listed from storage at a time; the continue point advances a page at a time.",
        )

    def validate(self) -> list[str]:
        problems = []
        if self.page_size < 1:
            problems.append(f"--page-size {self.page_size} must be at least 1")
        if self.continue_from is not None and not self.continue_from.startswith("/"):
            problems.append(f"--continue {self.continue_from!r} is not a storage key (they start with '/')")
        return problems
