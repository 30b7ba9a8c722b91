"""`pizza-apiserver migrate-storage`, the real command as a subprocess, next to a running server.

Objects are put straight into the server's storage in v1alpha1 (what a release whose storage version
was v1alpha1 left behind), on both backends; the command runs while the test keeps writing through the
API, and afterwards every stored value must be v1beta1, with nothing lost and nothing resurrected.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from tests.fixtures.server import REPO
from tests.integration.conftest import GROUP, V1A1, V1B1, Api

# A loaded machine runs seven test suites at once: bound the command by this, generously.
COMMAND_TIMEOUT = 300.0
PIZZAS = f"/{GROUP}/pizzas/"
TOPPINGS = f"/{GROUP}/toppings/"
TOPPING_NAMES = ("salami", "mozzarella", "tomato")
OLD = 300


@dataclass
class Ran:
    code: int
    out: str
    err: str


async def start_command(api: Api, *flags: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server",
        "migrate-storage",
        *api.extra["storage_flags"],
        *flags,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


async def finish(process: asyncio.subprocess.Process, err_so_far: bytes = b"") -> Ran:
    async with asyncio.timeout(COMMAND_TIMEOUT):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), (err_so_far + err).decode())


async def read_until(process: asyncio.subprocess.Process, text: bytes) -> bytes:
    """The command's stderr up to the first line holding `text`."""
    assert process.stderr is not None
    seen = b""
    async with asyncio.timeout(COMMAND_TIMEOUT):
        while text not in seen:
            line = await process.stderr.readline()
            assert line, seen.decode()
            seen += line
    return seen


async def run_command(api: Api, *flags: str) -> Ran:
    return await finish(await start_command(api, *flags))


def v1alpha1_pizza(name: str, toppings: list[str] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": V1A1,
        "kind": "Pizza",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": "2019-05-01T10:00:00Z",
            "labels": {"stored": "v1alpha1"},
        },
    }
    if toppings is not None:
        body["spec"] = {"toppings": toppings}
    return body


async def store_v1alpha1(api: Api, count: int) -> dict[str, dict[str, Any]]:
    """`count` v1alpha1 pizzas and one v1alpha1 topping, written straight into the server's storage."""
    storage = api.extra["storage"]
    stored: dict[str, dict[str, Any]] = {}
    for i in range(count):
        name = f"old-{i:04d}"
        # Every third has no spec (v1alpha1's defaults fill it), the others a repeated topping.
        toppings = None if i % 3 == 0 else ["mozzarella", "tomato", "mozzarella"]
        stored[name] = v1alpha1_pizza(name, toppings)
        await storage.create(f"{PIZZAS}default/{name}", orjson.dumps(stored[name]))
    basil = {
        "apiVersion": V1A1,
        "kind": "Topping",
        "metadata": {"name": "basil", "uid": "u-basil"},
        "spec": {"cost": 0.5},
    }
    await storage.create(f"{TOPPINGS}basil", orjson.dumps(basil))
    return stored


async def raw_values(api: Api, prefix: str) -> dict[str, tuple[dict[str, Any], int]]:
    """Every stored object under `prefix`, read from storage itself: key → (JSON, mod_revision)."""
    page = await api.extra["storage"].list(prefix)
    return {kv.key: (orjson.loads(kv.value), kv.mod_revision) for kv in page.items}


def expected_toppings(toppings: list[str] | None) -> list[dict[str, Any]]:
    if toppings is None:  # v1alpha1's default
        return [
            {"name": "salami", "quantity": 1},
            {"name": "mozzarella", "quantity": 1},
            {"name": "tomato", "quantity": 1},
        ]
    return [{"name": "mozzarella", "quantity": 2}, {"name": "tomato", "quantity": 1}]


async def test_migrates_every_object_while_the_server_serves_and_writes_continue(storage_api: Api) -> None:
    api = storage_api
    await api.create_toppings(*TOPPING_NAMES)
    stored = await store_v1alpha1(api, OLD)

    # The codec reads what an older release stored: v1alpha1's defaults, then converted to v1beta1.
    r = await api.get(api.pizzas_path(name="old-0000"))
    assert (r.status, r.body["apiVersion"], r.body["spec"]["toppings"]) == (
        200,
        V1B1,
        expected_toppings(None),
    )
    r = await api.get(api.pizzas_path(name="old-0001"))
    assert r.body["spec"]["toppings"] == expected_toppings(["mozzarella", "tomato", "mozzarella"])
    assert r.body["metadata"]["uid"] == stored["old-0001"]["metadata"]["uid"]

    # Writes that go on during the migration, from its first page on: new pizzas in both versions,
    # labels and deletions on old ones ahead of the command's cursor (last keys first), which race
    # its compare-and-swap or take objects away from under it.
    created: list[str] = []
    labelled: list[str] = []
    deleted: list[str] = []
    stop_writing = asyncio.Event()

    async def keep_writing() -> None:
        i = 0
        while not stop_writing.is_set() and i < OLD // 2:
            version = "v1alpha1" if i % 2 else "v1beta1"
            toppings = ["tomato"] if version == "v1alpha1" else [{"name": "tomato", "quantity": 1}]
            await api.create_pizza(f"new-{i:04d}", toppings, version)
            created.append(f"new-{i:04d}")
            old = f"old-{OLD - 1 - 2 * i:04d}"
            if i % 4 == 3:
                r = await api.delete(api.pizzas_path(name=old))
                assert r.status == 200, r
                deleted.append(old)
            else:
                r = await api.patch(
                    api.pizzas_path(name=old),
                    {"metadata": {"labels": {"during": str(i)}}},
                    "application/merge-patch+json",
                )
                assert r.status == 200, r
                labelled.append(old)
            i += 1

    process = await start_command(api, "--page-size", "5")
    seen = await read_until(process, b"continue point")
    writer = asyncio.create_task(keep_writing())
    try:
        ran = await finish(process, seen)
    finally:
        stop_writing.set()
        await writer
    print(ran.out, f"{len(created)} pizzas created while the command ran", sep="\n")

    assert ran.code == 0, ran
    assert "to restaurant.programming-kubernetes.info/v1beta1" in ran.out, ran
    # Not a terminal: plain log lines, each with the continue point.
    assert re.search(r"\d+/\d+ objects, \d+/s, ETA \d+:\d\d:\d\d, pizzas\.", ran.err), ran.err
    assert "continue point /" in ran.err

    pizzas = await raw_values(api, PIZZAS)
    toppings = await raw_values(api, TOPPINGS)
    assert {value["apiVersion"] for value, _ in [*pizzas.values(), *toppings.values()]} == {V1B1}
    names = {key.rsplit("/", 1)[1] for key in pizzas}
    assert names == (set(stored) - set(deleted)) | set(created)  # nothing lost, nothing resurrected
    assert sorted(key.rsplit("/", 1)[1] for key in toppings) == ["basil", *sorted(TOPPING_NAMES)]
    assert toppings[f"{TOPPINGS}basil"][0]["spec"] == {"cost": 0.5}

    for name, old in stored.items():
        if name in deleted:
            continue
        value, revision = pizzas[f"{PIZZAS}default/{name}"]
        assert value["spec"]["toppings"] == expected_toppings(old.get("spec", {}).get("toppings")), name
        assert value["metadata"]["uid"] == old["metadata"]["uid"]
        assert value["metadata"]["creationTimestamp"] == "2019-05-01T10:00:00Z"
        assert value["metadata"]["labels"]["stored"] == "v1alpha1"
        # The server sees the command's writes (its watch cache follows the other process's commits).
        r = await api.get(api.pizzas_path(name=name))
        assert r.body["metadata"]["resourceVersion"] == str(revision), name
    for name in labelled:
        assert "during" in pizzas[f"{PIZZAS}default/{name}"][0]["metadata"]["labels"], name
    # Every old object the writes did not reach was rewritten by the command itself.
    rewritten = int(
        re.search(rf"pizzas\.{re.escape(GROUP)}: \d+ objects examined, rewrote (\d+)", ran.out)[1]
    )
    assert OLD - len(labelled) - len(deleted) <= rewritten <= OLD, ran.out
    assert created, "the writes went on while the command ran"


async def test_an_interrupted_run_prints_its_continue_point_and_resumes_there(storage_api: Api) -> None:
    api = storage_api
    stored = await store_v1alpha1(api, 400)

    process = await start_command(api, "--page-size", "4")
    seen = await read_until(process, b"continue point")
    process.send_signal(signal.SIGINT)  # stops after the page under way
    first = await finish(process, seen)

    assert first.code == 130, first
    match = re.search(r"--continue=(\S+)", first.err)
    assert match, first.err
    point = match.group(1)
    pizzas = await raw_values(api, PIZZAS)
    done = {key: value for key, (value, _) in pizzas.items() if key <= point}
    left = {key: value for key, (value, _) in pizzas.items() if key > point}
    assert {value["apiVersion"] for value in done.values()} == {V1B1}
    assert left and {value["apiVersion"] for value in left.values()} == {V1A1}, "it stopped early"

    second = await run_command(api, "--page-size", "50", f"--continue={point}")

    assert second.code == 0, second
    # The second run starts after the continue point: it examines only what was left.
    assert f"pizzas.{GROUP}: {len(left)} objects examined, rewrote {len(left)} to {V1B1}" in second.out
    assert f"toppings.{GROUP}: 1 objects examined, rewrote 1 to {V1B1}" in second.out
    pizzas = await raw_values(api, PIZZAS)
    assert len(pizzas) == len(stored)
    assert {value["apiVersion"] for value, _ in pizzas.values()} == {V1B1}


async def test_dry_run_writes_nothing_and_undecodable_objects_are_reported(storage_api: Api) -> None:
    api = storage_api
    await store_v1alpha1(api, 12)
    broken = {
        "apiVersion": f"{GROUP}/v0",
        "kind": "Pizza",
        "metadata": {"name": "broken", "namespace": "default"},
    }
    await api.extra["storage"].create(f"{PIZZAS}default/broken", orjson.dumps(broken))
    before = await raw_values(api, PIZZAS)

    dry = await run_command(api, "--dry-run")

    assert dry.code == 1, dry  # an object that cannot be decoded is a failure
    assert f"pizzas.{GROUP}: 13 objects examined, would rewrite 12 to {V1B1}" in dry.out, dry
    assert "1 failed" in dry.out
    assert f"error: {PIZZAS}default/broken: stored object has apiVersion '{GROUP}/v0'" in dry.err
    assert await raw_values(api, PIZZAS) == before  # bytes and revisions untouched

    await api.extra["storage"].delete(f"{PIZZAS}default/broken")
    real = await run_command(api)
    again = await run_command(api, "--all")

    assert real.code == 0, real
    assert f"pizzas.{GROUP}: 12 objects examined, rewrote 12 to {V1B1}" in real.out
    # Everything is now stored exactly as the server writes it: --all finds nothing to change.
    assert again.code == 0, again
    assert f"pizzas.{GROUP}: 12 objects examined, rewrote 0 to {V1B1}, 12 already current" in again.out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--page-size=0"], "error: --page-size 0 must be at least 1"),
        (["--continue=/nowhere.example.com/x/y"], "is not a key of any resource being migrated"),
    ],
)
async def test_bad_flags_are_refused(storage_api: Api, flags: list[str], message: str) -> None:
    ran = await run_command(storage_api, *flags)
    assert ran.code == 2, ran
    assert message in ran.err
