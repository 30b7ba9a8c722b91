"""Flags of an API group's own: a group declares them next to its installer, the server shows them.

An installer (registry/<group>/install.py, found through entry points by server/installed.py) is a
plain `storage -> GroupInstallation` function for most groups. A group with settings wraps its
installer in `InstallerWithFlags`: the server then lists the group's flags in `--help` in a section of
their own, parses and validates their values before starting anything (a bad value is a start-up
error naming the flag), and calls the installer with the parsed values. Called with the storage alone
(tests, tools), it installs with the defaults, so a plain call keeps working for every installer.

Only the text → value parsing is the group's: the flag's spelling, help and default are shown as
kube's pflag shows them (server/api_groups.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from registry.generic.installation import GroupInstallation
from storage.interface import Interface


@dataclass(frozen=True, slots=True)
class GroupFlag:
    """`--<name>`: its default as written on a command line, its help, and `parse` (text → the value
    the installer gets; raising ValueError with a message refuses it)."""

    name: str
    default: str
    help: str
    parse: Callable[[str], Any] = str
    metavar: str = "string"

    @property
    def option(self) -> str:
        return f"--{self.name}"


@dataclass(frozen=True, slots=True)
class InstallerWithFlags:
    """An installer with flags: `install(storage, values)`, values by flag name ("order-numbers")."""

    flags: tuple[GroupFlag, ...]
    install: Callable[[Interface, Mapping[str, Any]], GroupInstallation]

    def __call__(self, storage: Interface, values: Mapping[str, Any] | None = None) -> GroupInstallation:
        return self.install(storage, values if values is not None else self.parse({}))

    def parse(self, given: Mapping[str, str]) -> dict[str, Any]:
        """Every flag's value: the given text (by flag name), else the default, parsed. Raises
        ValueError naming the flag for a value its parser refuses."""
        values: dict[str, Any] = {}
        for flag in self.flags:
            text = given.get(flag.name, flag.default)
            try:
                values[flag.name] = flag.parse(text)
            except ValueError as err:
                raise ValueError(f"{flag.option}: {err}") from None
        return values


def flags_of(installer: object) -> tuple[GroupFlag, ...]:
    """The flags an installer declares (none for a plain function)."""
    return installer.flags if isinstance(installer, InstallerWithFlags) else ()
