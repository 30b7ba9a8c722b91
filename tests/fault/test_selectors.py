"""Selectors with control characters: 400 with apimachinery's message, quoted as Go's %q quotes.

apimachinery's lexer (pkg/labels/selector.go) ends a token at a NUL byte and treats a NUL where a
token starts as the end of the input; every other control character is part of a token and fails
label validation. The messages print the bad value with Go's %q (``"b\\x01"``), not JSON's.
"""

from __future__ import annotations

import pytest

from tests.fixtures.server import RunningServer

TOPPINGS = "/apis/restaurant.programming-kubernetes.info/v1beta1/toppings"
LABEL_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a=b\x01", f'unable to parse requirement: values[0][a]: Invalid value: "b\\x01": {LABEL_RULE}'),
        ("a=b\x7f", f'unable to parse requirement: values[0][a]: Invalid value: "b\\x7f": {LABEL_RULE}'),
        ("a=b\x00c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b,\x00", "found '', expected: identifier after ','"),
    ],
)
async def test_control_characters_in_a_label_selector_are_400(
    embedded_server: RunningServer, selector: str, message: str
) -> None:
    async with embedded_server.session() as api:
        r = await api.get(TOPPINGS, params={"labelSelector": selector})
        body = await r.json()
    assert r.status == 400, body
    assert (body["kind"], body["reason"]) == ("Status", "BadRequest")
    assert body["message"].startswith(message), body["message"]
