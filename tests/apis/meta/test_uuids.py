"""Audit IDs: version-4 UUID text, unique, and never shared with a forked worker."""

from __future__ import annotations

import os
import uuid

from apis.meta.uuids import new_uuid


def test_ids_are_random_uuids_in_text_form() -> None:
    ids = [new_uuid() for _ in range(3000)]  # more than one batch
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (str(parsed), parsed.version, parsed.variant) == (text, 4, uuid.RFC_4122)


def test_a_forked_child_does_not_repeat_the_parents_ids() -> None:
    new_uuid()  # a batch is loaded, with IDs left in it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, new_uuid().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_id = pipe.read()
    os.waitpid(pid, 0)
    assert uuid.UUID(child_id).version == 4
    assert child_id != new_uuid()
