"""The API groups this server serves: adding a group is one line here.

Each entry takes the storage backend and returns a GroupInstallation (registry/<group>/install.py).
This is the composition root, the only place in server/ that names a group.
"""

from __future__ import annotations

from collections.abc import Callable

from registry.generic.installation import GroupInstallation
from registry.restaurant.install import install as restaurant
from storage.interface import Interface

INSTALLERS: tuple[Callable[[Interface], GroupInstallation], ...] = (restaurant,)
