"""`--workers`: how many server processes share the port (server/supervisor.py).

A FlagGroup in the FLAG_GROUPS pattern of server/options/__init__.py. Its flag is listed with the "generic"
ones, where it has always been shown, so `--help` reads as before.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from server.flags import add_int, argument_group


@dataclass(slots=True)
class WorkersOptions:
    workers: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        add_int(
            argument_group(parser, "generic"),
            "--workers",
            WorkersOptions().workers,
            "The number of server processes serving --secure-port, each a full API server with its own "
            "watch cache, as N kube-apiserver replicas over one storage; the kernel spreads connections "
            "between them (SO_REUSEPORT). With the embedded storage they share its file. 1 serves from a "
            "single process. Defaults to the number of usable CPU cores.",
        )

    def validate(self) -> list[str]:
        return [f"--workers {self.workers} must be at least 1"] if self.workers < 1 else []
