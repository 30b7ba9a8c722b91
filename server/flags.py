"""Flag value types and adders with pflag's semantics, shared by every flag group.

The flags are declared by `server.options` and by the groups it collects (authentication,
authorization, audit); they all parse and print values the same way, so the behaviour lives here once.
This module imports no flag group, so any of them can use it without an import cycle.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from server.duration import format_duration, parse_duration

# Exactly what Go's strconv.ParseBool accepts (pflag parses `--flag=value` with it): no other casing.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


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
        # argparse stores the default object itself, so identity tells a first use from a repeat.
        earlier: list[str] = [] if current is self.default else current
        setattr(namespace, self.dest, [*earlier, *items])


def go_bool(text: str) -> bool:
    """strconv.ParseBool, with its error text."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def duration_value(text: str) -> float:
    """A Go duration ("1m30s") in seconds; the argparse `type` of every duration flag."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_bool(group: argparse._ArgumentGroup, flag: str, default: bool | None, text: str) -> None:
    """`--flag` means true; `--flag=false` turns it off.

    As pflag, the help names the default only when it is true (false is a bool's zero value); a None
    default means "decided later", which the help text itself must explain.
    """
    shown = " (default true)" if default else ""
    group.add_argument(
        flag, type=go_bool, nargs="?", const=True, default=default, metavar="true|false", help=text + shown
    )


def add_path(group: argparse._ArgumentGroup, flag: str, text: str) -> None:
    group.add_argument(flag, type=Path, default=None, metavar="string", help=text)


def add_int(group: argparse._ArgumentGroup, flag: str, default: int, text: str) -> None:
    group.add_argument(flag, type=int, default=default, metavar="int", help=f"{text} (default {default})")


def add_list(group: argparse._ArgumentGroup, flag: str, default: list[str], text: str) -> None:
    shown = f" (default {','.join(default)})" if default else ""
    group.add_argument(flag, action=CommaList, default=default, metavar="strings", help=text + shown)


def add_duration(group: argparse._ArgumentGroup, flag: str, default: float, text: str) -> None:
    group.add_argument(
        flag,
        type=duration_value,
        default=default,
        metavar="duration",
        help=f"{text} (default {format_duration(default)})",
    )


def argument_group(parser: argparse.ArgumentParser, title: str) -> argparse._ArgumentGroup:
    """The help section called `title`, created if missing: a flag group may list a flag among
    another group's (--workers among the generic flags, where it has always been shown).

    argparse keeps its sections in a private list; were it gone, the flag gets a section of its own
    with the same title instead of failing the parser."""
    for group in getattr(parser, "_action_groups", ()):
        if getattr(group, "title", None) == title:
            return group
    return parser.add_argument_group(title)
