"""--delete-collection-workers: kube's flag (pkg/server/options/etcd.go), as its own flag group.

kube's default is 1 (one goroutine). Here a worker is a coroutine waiting on storage, so the default
is higher: 64 deletes in flight overlap etcd's round trips and let it commit them together (10,000
pizzas on etcd, 2 cores: 4.4-4.7 s with 64, 5.0-6.1 s with 16), while one request still cannot
flood storage with writes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from registry.generic.delete_collection import DEFAULT_WORKERS
from server.flags import add_int


@dataclass(slots=True)
class DeleteCollectionOptions:
    delete_collection_workers: int = DEFAULT_WORKERS

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("deletion")
        add_int(
            g,
            "--delete-collection-workers",
            DeleteCollectionOptions().delete_collection_workers,
            "Number of workers spawned for DeleteCollection call. These are used to speed up namespace "
            "cleanup.",
        )

    def validate(self) -> list[str]:
        if self.delete_collection_workers < 1:
            return [f"--delete-collection-workers {self.delete_collection_workers} must be at least 1"]
        return []
