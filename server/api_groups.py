"""`--api-groups`: which of the installed API groups this server serves, and the groups' own flags.

A flag group in the FLAG_GROUPS pattern of server/options.py (as server/authn/options.py): the
dataclass field is the flag's argparse dest, `add_flags` declares it, `validate` reports problems
without starting anything. Empty means every group installed through entry points
(server/installed.py), so installing a package that ships a group is enough to serve it.

A group may declare flags of its own (registry/generic/group_flags.py); each installed group's are
listed in a help section named for the group, collected as text in `group_flags` (flag name → text),
parsed by the group's own parser in `validate` (a refused value is a start-up error) and handed to
its installer by `install`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from registry.generic.group_flags import InstallerWithFlags, flags_of
from registry.generic.installation import GroupInstallation
from server.flags import add_duration, add_list
from server.installed import install_groups, installed_group_names, installed_groups
from storage.interface import Interface


class GroupFlagValue(argparse.Action):
    """Collects every group flag into one dict (`group_flags`), keyed by the flag's name."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given = dict(getattr(namespace, self.dest, None) or {})
        given[self.metavar_name] = str(values)
        setattr(namespace, self.dest, given)

    @property
    def metavar_name(self) -> str:
        return self.option_strings[0].removeprefix("--")


@dataclass(slots=True)
class ApiGroupsOptions:
    api_groups: list[str] = field(default_factory=list)
    # The groups' own flags as given (flag name → text); the rest take their defaults.
    group_flags: dict[str, str] = field(default_factory=dict)
    # kube's default for its Service IP and node port repair loops.
    allocation_repair_interval: float = 180.0

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("api groups")
        add_list(
            g,
            "--api-groups",
            [],
            "Comma-separated API groups to serve, among those installed in this Python environment "
            "(entry points 'pizza_apiserver.api_groups'). Empty serves every installed group: "
            + ", ".join(installed_group_names())
            + ".",
        )
        add_duration(
            g,
            "--allocation-repair-interval",
            180.0,
            "How often the numbers allocated at create (a group's declared fields) are repaired: "
            "number keys no object holds are freed, missing ones written again.",
        )
        for name, installer in installed_groups().items():
            flags = flags_of(installer)
            if not flags:
                continue
            section = parser.add_argument_group(f"{name} flags")
            for flag in flags:
                section.add_argument(
                    flag.option,
                    action=GroupFlagValue,
                    dest="group_flags",
                    default=argparse.SUPPRESS,
                    metavar=flag.metavar,
                    help=f'{flag.help} (default "{flag.default}")',
                )

    def validate(self) -> list[str]:
        installed = installed_group_names()
        problems = [
            f"--api-groups: {name!r} is not an installed API group (installed: {', '.join(installed)})"
            for name in self.api_groups
            if name not in installed
        ]
        if self.allocation_repair_interval <= 0:
            problems.append("--allocation-repair-interval must be greater than 0")
        for installer in installed_groups().values():
            if isinstance(installer, InstallerWithFlags):
                try:
                    installer.parse(self.group_flags)
                except ValueError as err:
                    problems.append(str(err))
        return problems

    def install(self, storage: Interface) -> list[GroupInstallation]:
        """The chosen groups installed over `storage` (what server/config.py builds the server from)."""
        return install_groups(storage, self.api_groups, self.group_flags)
