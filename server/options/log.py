"""`-v`: kube's log verbosity (0 is info; 4 and up is debug here, as request-level detail is in kube).

A FlagGroup in the FLAG_GROUPS pattern of server/options/__init__.py.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass


@dataclass(slots=True)
class LogOptions:
    verbosity: int = 0

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument_group("logs").add_argument(
            "-v",
            "--v",
            dest="verbosity",
            type=int,
            default=LogOptions().verbosity,
            metavar="Level",
            help="number for the log level verbosity (default %(default)s)",
        )

    def validate(self) -> list[str]:
        return ["-v can not be negative value"] if self.verbosity < 0 else []

    @property
    def level(self) -> int:
        return logging.DEBUG if self.verbosity >= 4 else logging.INFO
