"""The API groups installed in this Python environment, found through entry points.

A group is a distribution's entry point in the `pizza_apiserver.api_groups` group (pyproject.toml's
`[project.entry-points."pizza_apiserver.api_groups"]`): its name is the API group, its value the
installer, `storage -> GroupInstallation` (registry/<group>/install.py), or an InstallerWithFlags
when the group has flags of its own (registry/generic/group_flags.py). So server/ names no group, and a
fork or a separate package adds one without touching it; `--api-groups` chooses among them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points

from registry.generic.group_flags import InstallerWithFlags
from registry.generic.installation import GroupInstallation
from storage.interface import Interface

ENTRY_POINT_GROUP = "pizza_apiserver.api_groups"

Installer = Callable[[Interface], GroupInstallation]


def installed_group_names() -> list[str]:
    """The installed groups' names, without importing them (for flag help and validation)."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def installed_groups() -> dict[str, Installer]:
    """Every installed group by name, in name order (so the served order does not depend on which
    distribution was installed first). Loading imports the group's registry package."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    return {ep.name: ep.load() for ep in found}


def install_groups(
    storage: Interface, names: Iterable[str] = (), flag_values: Mapping[str, str] | None = None
) -> list[GroupInstallation]:
    """Install the named groups over `storage` (every installed group when `names` is empty), each
    group with flags given its values from `flag_values` (flag name → text; defaults otherwise).

    An unknown name or a refused flag value is a ValueError; `--api-groups` validation reports both
    before start-up.
    """
    installers = installed_groups()
    chosen = list(dict.fromkeys(names)) or list(installers)
    unknown = [name for name in chosen if name not in installers]
    if unknown:
        raise ValueError(f"API groups not installed: {', '.join(unknown)}")
    installations = [_install(installers[name], storage, flag_values or {}) for name in chosen]
    for name, installation in zip(chosen, installations, strict=True):
        if installation.group.group != name:
            raise ValueError(f"entry point {name!r} installs the group {installation.group.group!r}")
    return installations


def _install(installer: Installer, storage: Interface, flag_values: Mapping[str, str]) -> GroupInstallation:
    if isinstance(installer, InstallerWithFlags):
        return installer(storage, installer.parse(flag_values))
    return installer(storage)
