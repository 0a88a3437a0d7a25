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
