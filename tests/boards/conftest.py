# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures shared by the board tests."""

import click
import pytest


@pytest.fixture
def boards_cli():
    """A click group with the board commands (``build``, ``flash``) of ``rtrig``."""
    from rtrig.host.cli.boards import build_cmd, flash_cmd

    @click.group()
    def cli():
        pass
    cli.add_command(build_cmd)
    cli.add_command(flash_cmd)
    return cli


def pytest_configure(config):
    # pytest-xdist defines this mark; declared here too so a run without xdist does
    # not warn about it (test_boards.py groups the variants of one die).
    config.addinivalue_line(
        "markers", "xdist_group(name): run in one pytest-xdist worker under --dist loadgroup")
