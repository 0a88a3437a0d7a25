# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures for every test."""

import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def _collect_garbage_per_module():
    """Frees each test module's reference cycles at its end, so that an elaboratable it
    made and never elaborated fails that module (its last test's teardown) rather than
    whichever later test the garbage collector happens to run in (pyproject.toml,
    ``filterwarnings``)."""
    yield
    gc.collect()
