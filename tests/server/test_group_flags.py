"""A group's own flags (registry/generic/group_flags.py): listed in --help in the group's section,
refused before start-up when their parser refuses them, handed to the installer otherwise."""

from __future__ import annotations

import subprocess
import sys

import pytest

from registry.generic.allocation import NumberRange
from server.options import build_parser, parse_args
from tests.fixtures.server import REPO

RESTAURANT = "restaurant.programming-kubernetes.info"


def test_the_help_has_a_section_for_the_group() -> None:
    text = build_parser().format_help()
    section = text.split(f"\n{RESTAURANT} flags:\n", 1)[1].split("\n\n", 1)[0]
    assert "--order-numbers range" in section
    assert '(default "1-999999")' in " ".join(section.split())
    assert "--allocation-repair-interval" in text


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("9-1", '--order-numbers: invalid range "9-1": 1 is below 9'),
        ("abc", '--order-numbers: invalid range "abc": want FIRST-LAST, e.g. 1-9999'),
        ("0-5", '--order-numbers: invalid range "0-5": the first number must be at least 1'),
    ],
)
def test_a_bad_value_is_a_problem_naming_the_flag(value: str, problem: str) -> None:
    assert parse_args(["--order-numbers", value]).validate() == [problem]


def test_the_installer_gets_the_parsed_value() -> None:
    options = parse_args(["--order-numbers=5-7"])
    assert options.validate() == []
    assert options.groups.group_flags == {"order-numbers": "5-7"}
    from registry.restaurant.install import install

    assert install.parse(options.groups.group_flags) == {"order-numbers": NumberRange(5, 7)}
    assert install.parse({}) == {"order-numbers": NumberRange(1, 999999)}


def test_the_server_refuses_to_start_with_a_bad_value(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "server", "--data-dir", str(tmp_path), "--order-numbers", "9-1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert 'error: --order-numbers: invalid range "9-1": 1 is below 9' in result.stderr
    assert not (tmp_path / "storage.db").exists()
