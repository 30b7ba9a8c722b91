"""`pizza-apiserver migrate-storage [server flags] [--all] [--dry-run] [--continue KEY] [--page-size N]`.

Rewrites every stored object of the served groups whose encoding is not its kind's storage version
(registry/generic/storage_migration.py does the work), while the server keeps running: on etcd as one
more client, on the embedded store as one more process that joined it (storage/embedded.py). It takes
the server's own flags so it reads the same storage, prefix and groups the server serves.

Exit status: 0 when everything is in the storage version, 1 when some objects failed (listed) or the
storage failed, 2 for bad flags, 130 when interrupted (SIGINT/SIGTERM: the page under way is finished
first). Whenever it stops early it prints the continue point to resume from.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from registry.generic import storage_migration as sm
from server.config import open_storage
from server.migrate_storage.options import MigrationOptions
from server.migrate_storage.progress import Progress
from server.options import Options, build_parser, options_from
from storage.interface import StorageError

logger = logging.getLogger("pizza-apiserver.migrate-storage")

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def parse(argv: Sequence[str]) -> tuple[Options, MigrationOptions]:
    parser = build_parser()
    parser.prog = "pizza-apiserver migrate-storage"
    parser.description = (
        "Rewrite every stored object that is not encoded in its kind's storage version, with the "
        "server running. Give it the flags the server runs with (storage, --etcd-prefix, --api-groups)."
    )
    parser.epilog = None
    MigrationOptions.add_flags(parser)
    values: dict[str, Any] = vars(parser.parse_args(argv))
    migration = MigrationOptions(**{f.name: values.pop(f.name) for f in dataclasses.fields(MigrationOptions)})
    return options_from(values).complete(), migration


def main(argv: Sequence[str]) -> int:
    options, migration = parse(argv)
    problems = options.validate() + migration.validate()
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    logging.basicConfig(
        level=options.logs.level,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    return asyncio.run(run(options, migration, out=sys.stdout, err=sys.stderr))


@dataclass
class Finished:
    target: sm.Target
    tally: sm.Tally


async def run(options: Options, migration: MigrationOptions, *, out: TextIO, err: TextIO) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # A maintenance client: it must not compact (the server does) and must not claim the store.
    storage_options = dataclasses.replace(
        options, etcd=dataclasses.replace(options.etcd, etcd_compaction_interval=0.0)
    )
    try:
        storage = await open_storage(storage_options, join=True)
    except StorageError as error:
        print(f"error: {error}", file=err)
        return EXIT_FAILED
    progress: Progress | None = None
    finished: list[Finished] = []
    try:
        codecs = [store.codec for group in options.groups.install(storage) for store in group.stores.values()]
        try:
            targets = sm.plan(codecs, migration.continue_from)
        except ValueError as error:
            print(f"error: --continue {error}", file=err)
            return EXIT_USAGE
        total = sum([await sm.count(storage, target) for target in targets])
        logger.info(
            "%s %d objects of %s",
            "checking" if migration.dry_run else "migrating",
            total,
            ", ".join(t.name for t in targets),
        )
        progress = Progress(total, err, interactive=err.isatty())
        progress.continue_point = migration.continue_from
        for target in targets:
            tally = await sm.migrate(
                storage,
                target,
                page_size=migration.page_size,
                rewrite_all=migration.all,
                dry_run=migration.dry_run,
                stop=stop,
                on_page=progress.page,
            )
            finished.append(Finished(target, tally))
            if not tally.complete:
                break
    except StorageError as error:
        if progress is not None:
            progress.finish()
        _report(finished, migration, out, err)
        print(f"error: storage failed: {error}", file=err)
        _print_continue(progress.continue_point if progress else migration.continue_from, err)
        return EXIT_FAILED
    finally:
        await storage.close()
    progress.finish()
    failed = _report(finished, migration, out, err)
    complete = len(finished) == len(targets) and all(f.tally.complete for f in finished)
    if not complete:
        print("migrate-storage: interrupted", file=err)
        _print_continue(progress.continue_point, err)
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else 0


def _report(finished: list[Finished], migration: MigrationOptions, out: TextIO, err: TextIO) -> int:
    """One line per resource on stdout, failures on stderr; returns how many objects failed."""
    verb = "would rewrite" if migration.dry_run else "rewrote"
    failed = 0
    for item in finished:
        counts = item.tally.outcomes
        print(
            f"{item.target.name}: {item.tally.examined} objects examined, {verb} "
            f"{counts[sm.Outcome.REWRITTEN]} to {item.target.storage_api_version}, "
            f"{counts[sm.Outcome.CURRENT]} already current, {counts[sm.Outcome.GONE]} deleted meanwhile, "
            f"{counts[sm.Outcome.FAILED]} failed, {item.tally.conflicts} conflicts retried",
            file=out,
        )
        for key, why in item.tally.failures:
            print(f"error: {key}: {why}", file=err)
        failed += counts[sm.Outcome.FAILED]
    out.flush()
    return failed


def _print_continue(point: str | None, err: TextIO) -> None:
    if point is None:
        print("nothing was done yet; run it again as it was", file=err)
    else:
        print(f"to resume, run it again with the same flags and --continue={point}", file=err)
    err.flush()
