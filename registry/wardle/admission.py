"""BanFlunder (sample-apiserver's admission plugin): no Flunder may be created under a name that any
Fischer lists in `disallowedFlunders`.

Like the original, which reads an informer's lister, it never lists storage per request: it reads the
Fischer Store's read path, which the watch cache answers from memory (a consistent read: a Fischer
created just before is seen). It admits (mutating phase) and handles CREATE only, as the original.
"""

from __future__ import annotations

from dataclasses import dataclass

from apis.wardle.install import GROUP_NAME
from registry.generic.admission import Attributes, Operation, deny
from registry.generic.options import ListOptions
from registry.generic.store import Store


@dataclass(frozen=True)
class BanFlunder:
    fischers: Store
    name: str = "BanFlunder"

    def handles(self, operation: Operation) -> bool:
        return operation is Operation.CREATE

    async def admit(self, attrs: Attributes) -> None:
        if attrs.group != GROUP_NAME or attrs.kind != "Flunder":
            return
        name = attrs.object.metadata.get("name")
        for fischer in (await self.fischers.read_list("", ListOptions())).items:
            if name in fischer.hub().disallowed_flunders:
                raise deny(attrs, "this name may not be used, please change the resource name")
