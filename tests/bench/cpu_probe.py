"""CPU seconds each process of a deployment spent during one measured workload, per request.

Why: on two cores shared by the load tool, kube-aggregator, etcd and the server under test, a
rate through the aggregator is bounded by the CPU every request costs all of them together, not
by the server alone. Measuring each process's share (utime + stime from /proc, the load tool's from
RUSAGE_CHILDREN) shows what bounds a ratio: if the aggregator, etcd and the client cost X µs per
request on our side and the whole Go path costs Y, no server of ours can reach more than Y / X
while the machine is saturated.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# role -> the pids whose CPU counts for it (re-read at every sample: workers may come and go)
Roles = Callable[[str], dict[str, list[int]]]


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of one process (0 once it is gone): fields 14 and 15 of /proc/PID/stat."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children_cpu_seconds() -> float:
    """CPU of this process's waited-for children: the load tool a measurement ran."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuProbe:
    """Samples each role's CPU for one backend; `per_request` turns two samples into µs/request."""

    def __init__(self, roles: Roles) -> None:
        self._roles = roles

    def sample(self, backend: str) -> dict[str, float]:
        seconds = {
            role: sum(process_cpu_seconds(pid) for pid in pids) for role, pids in self._roles(backend).items()
        }
        seconds["client"] = children_cpu_seconds()
        return seconds

    @staticmethod
    def per_request(before: dict[str, float], after: dict[str, float], requests: float) -> dict[str, float]:
        if requests <= 0:
            return {}
        return {role: (after[role] - before.get(role, 0.0)) * 1e6 / requests for role in after}
