"""Workers never outlive their supervisor, even when they cannot act on it themselves.

A worker stops when its pipe to the supervisor closes, but only if its event loop runs. The kernel's
PR_SET_PDEATHSIG, set by each worker through libc's ``prctl`` (ctypes, ``server/supervisor.py``), kills
it regardless: here the workers are stopped (SIGSTOP), so nothing but that signal can end them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from tests.fixtures.server import start_server_process
from tests.integration.test_workers import worker_pids

GONE_TIMEOUT = 15.0


def _alive(pid: int) -> bool:
    """Running or stopped; a zombie (waiting for a reaper that may be slow) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + GONE_TIMEOUT
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


async def test_stopped_workers_die_with_a_killed_supervisor(tmp_path: Path) -> None:
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", "--workers", "2")
    workers = worker_pids(proc.process.pid)
    try:
        assert len(workers) == 2
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        proc.process.kill()
        await asyncio.to_thread(proc.process.wait, 10)
        assert await asyncio.to_thread(_wait_gone, workers) == []
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.stop()
