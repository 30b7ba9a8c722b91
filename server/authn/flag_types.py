"""Flag value types shared by the authentication and authorization flag groups (pflag semantics).

They live here rather than in `server.options` because that module imports the flag groups, and a
group importing it back would be circular.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from server.duration import format_duration, parse_duration

_TRUE = frozenset({"1", "t", "true"})
_FALSE = frozenset({"0", "f", "false"})


class CommaList(argparse.Action):
    """pflag's StringSlice: comma separated, repeatable; the first use replaces the default."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        items = [v.strip() for v in str(values or "").split(",") if v.strip()]
        current = getattr(namespace, self.dest)
        earlier: list[str] = [] if current is self.default else current
        setattr(namespace, self.dest, [*earlier, *items])


def go_bool(text: str) -> bool:
    """strconv.ParseBool, as pflag parses `--flag=value`."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"strconv.ParseBool: parsing {text!r}: invalid syntax")


def add_bool(group: argparse._ArgumentGroup, flag: str, default: bool | None, text: str) -> None:
    """`--flag` means true; `--flag=false` turns it off."""
    shown = "" if default is None else f" (default {str(default).lower()})"
    group.add_argument(
        flag, type=go_bool, nargs="?", const=True, default=default, metavar="true|false", help=text + shown
    )


def add_path(group: argparse._ArgumentGroup, flag: str, text: str) -> None:
    group.add_argument(flag, type=Path, default=None, metavar="string", help=text)


def add_list(group: argparse._ArgumentGroup, flag: str, default: list[str], text: str) -> None:
    shown = f" (default {','.join(default)})" if default else ""
    group.add_argument(flag, action=CommaList, default=default, metavar="strings", help=text + shown)


def add_duration(group: argparse._ArgumentGroup, flag: str, default: float, text: str) -> None:
    group.add_argument(
        flag,
        type=_duration,
        default=default,
        metavar="duration",
        help=f"{text} (default {format_duration(default)})",
    )


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
