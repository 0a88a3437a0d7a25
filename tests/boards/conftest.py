"""Fixtures shared by the board tests."""

import click
import pytest


@pytest.fixture
def boards_cli():
    """A click group with the board commands (``build``, ``flash``) of ``rtrig``."""
    from rtrig.host.cli_boards import register

    @click.group()
    def cli():
        pass
    register(cli)
    return cli


def pytest_configure(config):
    # pytest-xdist defines this mark; declared here too so a run without xdist does
    # not warn about it (test_boards.py groups the variants of one die).
    config.addinivalue_line(
        "markers", "xdist_group(name): run in one pytest-xdist worker under --dist loadgroup")
