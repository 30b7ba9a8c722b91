"""`server.flags.argument_group` finds argparse's help sections through argparse's private list
(`ArgumentParser._action_groups`). These fail when a Python moves that list: flags would still parse
(the fallback makes a section of their own), but `--help` would show a section twice."""

from __future__ import annotations

import argparse

from server.flags import argument_group
from server.options import build_parser


def test_a_flag_joins_the_existing_section_of_that_title() -> None:
    parser = argparse.ArgumentParser()
    generic = parser.add_argument_group("generic")
    assert argument_group(parser, "generic") is generic
    assert argument_group(parser, "caching") is not generic


def test_workers_is_listed_among_the_generic_flags_in_one_section() -> None:
    text = build_parser().format_help()
    assert text.count("\ngeneric:\n") == 1
    generic = text.split("\ngeneric:\n", 1)[1].split("\n\n", 1)[0]
    assert "--workers" in generic
