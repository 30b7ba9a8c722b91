"""The work queue's client-go rules: dedup, one worker per key, per-key exponential backoff."""

from __future__ import annotations

import threading
import time

import pytest

from controller.workqueue import ExponentialBackoff, ShutDown, WorkQueue

WAIT = 10.0  # generous bound on any blocking get in these tests


def test_a_key_added_many_times_is_queued_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a", "b", "c"):
        queue.add(key)
    assert len(queue) == 3
    assert [queue.get(WAIT) for _ in range(3)] == ["a", "b", "c"]
    with pytest.raises(TimeoutError):
        queue.get(0.05)


def test_a_key_added_while_processing_waits_for_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get(WAIT) == "a"
    queue.add("a")  # an event while a worker holds it
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker
    with pytest.raises(TimeoutError):
        queue.get(0.05)
    queue.done("a")
    assert len(queue) == 1  # requeued once, for both adds
    assert queue.get(WAIT) == "a"
    queue.done("a")
    assert len(queue) == 0


def test_no_two_workers_ever_hold_one_key() -> None:
    queue: WorkQueue[int] = WorkQueue()
    holding: set[int] = set()
    overlaps: list[int] = []
    processed: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                key = queue.get()
            except ShutDown:
                return
            with lock:
                if key in holding:
                    overlaps.append(key)
                holding.add(key)
            time.sleep(0.001)  # widen the window a second worker would have to take the key
            with lock:
                holding.discard(key)
                processed.append(key)
            queue.done(key)

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for thread in workers:
        thread.start()
    for round_ in range(200):
        queue.add(round_ % 3)
    queue.shut_down()
    for thread in workers:
        thread.join(WAIT)
    assert not any(thread.is_alive() for thread in workers)
    assert overlaps == []
    assert set(processed) == {0, 1, 2}


def test_retries_back_off_exponentially_per_key_and_forget_resets() -> None:
    backoff: ExponentialBackoff[str] = ExponentialBackoff(base=0.01, cap=0.05)
    queue: WorkQueue[str] = WorkQueue(backoff)
    assert [queue.add_rate_limited("a") for _ in range(4)] == [0.01, 0.02, 0.04, 0.05]
    assert queue.num_requeues("a") == 4
    assert queue.add_rate_limited("b") == 0.01  # per key
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    assert queue.add_rate_limited("a") == 0.01


def test_a_rate_limited_key_arrives_after_its_delay_once() -> None:
    queue: WorkQueue[str] = WorkQueue(ExponentialBackoff(base=0.2))
    queue.add_rate_limited("a")
    queue.add_after("a", 0.2)
    assert len(queue) == 0  # not yet
    assert queue.get(WAIT) == "a"
    queue.done("a")
    with pytest.raises(TimeoutError):
        queue.get(0.3)  # the two delayed adds were one


def test_shut_down_drains_then_stops_workers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add_after("later", 60)
    queue.shut_down()
    queue.add("b")  # refused
    assert queue.get(WAIT) == "a"
    with pytest.raises(ShutDown):
        queue.get(WAIT)
