"""`--api-groups`: which of the installed API groups this server serves.

A flag group in the FLAG_GROUPS pattern of server/options.py (as server/authn/options.py): the
dataclass field is the flag's argparse dest, `add_flags` declares it, `validate` reports problems
without starting anything. Empty means every group installed through entry points
(server/installed.py), so installing a package that ships a group is enough to serve it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from registry.generic.installation import GroupInstallation
from server.flags import add_list
from server.installed import install_groups, installed_group_names
from storage.interface import Interface


@dataclass(slots=True)
class ApiGroupsOptions:
    api_groups: list[str] = field(default_factory=list)

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

    def validate(self) -> list[str]:
        installed = installed_group_names()
        return [
            f"--api-groups: {name!r} is not an installed API group (installed: {', '.join(installed)})"
            for name in self.api_groups
            if name not in installed
        ]

    def install(self, storage: Interface) -> list[GroupInstallation]:
        """The chosen groups installed over `storage` (what server/config.py builds the server from)."""
        return install_groups(storage, self.api_groups)
