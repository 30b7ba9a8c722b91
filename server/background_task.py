"""A long-running task owned by one object (a reloader, a watcher), started once and stopped at shutdown.

The owners only say what runs; starting twice, stopping twice and stopping what never started are
all harmless, so shutdown code can stop everything it might have started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


class BackgroundTask:
    __slots__ = ("_name", "_run", "_task")

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """Cancel the task and wait until it has ended."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def check_every(
    interval: float, check: Callable[[], Awaitable[object]], log: logging.Logger, failure: str
) -> None:
    """Run `check` every `interval` seconds until cancelled; a failing check is logged as `failure`.

    A check that raises must not end the checking for the rest of the server's lifetime.
    """
    while True:
        await asyncio.sleep(interval)
        try:
            await check()
        except Exception:
            log.exception(failure)
