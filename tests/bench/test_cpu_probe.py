"""The benchmark's CPU accounting: /proc figures move with real work, and the report's arithmetic."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.bench.aggregated_report import cpu_table
from tests.bench.cpu_probe import CpuProbe, children_cpu_seconds, process_cpu_seconds
from tests.bench.report import Row


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_process_cpu_grows_with_its_work() -> None:
    before = process_cpu_seconds(os.getpid())
    _burn(0.3)
    assert process_cpu_seconds(os.getpid()) - before >= 0.2
    assert process_cpu_seconds(2**22 + 7) == 0.0  # no such process: nothing, not an error


def test_a_waited_for_child_counts_as_the_client() -> None:
    before = children_cpu_seconds()
    code = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert children_cpu_seconds() - before >= 0.2


def test_samples_become_microseconds_per_request() -> None:
    probe = CpuProbe(lambda backend: {"server": [os.getpid()]})
    before = probe.sample("ours")
    _burn(0.2)
    per_request = probe.per_request(before, probe.sample("ours"), 1000)
    assert per_request["server"] >= 150  # ≥ 0.15 s over 1,000 requests
    assert set(per_request) == {"server", "client"}
    assert probe.per_request(before, before, 0) == {}


def _row(backend: str, via: str, cpu: dict[str, float]) -> Row:
    return Row(backend, via, "get_c8", figures={"rps": 1.0, "requests": 1.0}, detail={"cpu_us": cpu})


def test_the_ceiling_is_go_whole_path_over_ours_without_our_server() -> None:
    ours = {"client": 100.0, "aggregator": 300.0, "etcd": 100.0, "server": 500.0}
    go = {"client": 100.0, "aggregator": 300.0, "etcd": 100.0, "server": 300.0}
    text = cpu_table([_row("ours", "aggregator", ours), _row("go", "aggregator", go)])
    assert "GET, 8 conns" in text
    assert "ours 1000 = client 100 + aggregator 300 + etcd 100 + server 500" in text
    assert "ceiling 1.60x" in text  # (100 + 300 + 100 + 300) / (100 + 300 + 100)
    assert cpu_table([_row("ours", "aggregator", ours)]) == ""  # no Go row: nothing to compare
