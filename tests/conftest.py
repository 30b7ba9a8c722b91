"""Fixtures shared by every test folder live in tests/fixtures/ and are loaded here."""

pytest_plugins = ["tests.fixtures.embedded", "tests.fixtures.etcd", "tests.fixtures.server"]
