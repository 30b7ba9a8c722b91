"""Installs wardle.example.com: a Store per kind with sample-apiserver's strategies, and BanFlunder.

sample-apiserver's strategies prepare nothing and check names only as path segments (PlainStrategy);
Flunders are validated on create only (its ValidateUpdate returns no errors), Fischers never.
"""

from __future__ import annotations

from apis.runtime.codec import Codec
from apis.wardle.install import FISCHER_KIND, FLUNDER_KIND, GROUP
from apis.wardle.validation import validate_flunder
from registry.generic.installation import GroupInstallation
from registry.generic.store import Store
from registry.generic.strategy import PlainStrategy
from registry.wardle.admission import BanFlunder
from storage.interface import Interface


def install(storage: Interface) -> GroupInstallation:
    flunders = Store(Codec(GROUP.group, FLUNDER_KIND), PlainStrategy(True, validate_flunder), storage)
    fischers = Store(Codec(GROUP.group, FISCHER_KIND), PlainStrategy(False), storage)
    return GroupInstallation(
        group=GROUP,
        stores={FLUNDER_KIND.resource: flunders, FISCHER_KIND.resource: fischers},
        mutating=(BanFlunder(fischers),),
    )
