"""Copying decoded JSON values (dicts, lists, scalars) without copy.deepcopy's generic machinery.

Conversions copy metadata on every read and write so they never alias their input; for JSON data a
plain recursive copy is several times faster than deepcopy (no memo, no dispatch on type) and gives
the same result, since strings, numbers, booleans and None are immutable.
"""

from __future__ import annotations

from typing import Any


def copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_json(v) for v in value]
    if isinstance(value, dict):  # e.g. a dict subclass from a decoder: copy as a plain dict
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
