# SPDX-License-Identifier: BSD-2-Clause
"""The pytest plugin's rig: the ``rtrig_session`` fixture, one rig for the whole test
session, from ``--rtrig-port``, ``--rtrig-sim`` or labgrid's ``--lg-env``
(:mod:`rtrig.host.integrations.pytest_plugin`)."""

import contextlib
import os

import pytest


def lg_env(config):
    """Does this run take its rig from labgrid (``--lg-env`` or ``LG_ENV``)?"""
    if not config.pluginmanager.hasplugin("labgrid"):
        return False
    return bool(getattr(config.option, "lg_env", None) or os.environ.get("LG_ENV"))


def _no_rig(message):
    pytest.fail(f"rtrig: {message}", pytrace=False)


def _message(e):
    hint = getattr(e, "hint", None)
    return f"{e}" + (f" (hint: {hint})" if hint else "")


def _captures_dir(config, tmp_path_factory):
    d = config.getoption("rtrig_captures")
    if not d:
        return tmp_path_factory.getbasetemp() / "rtrig"
    return (config.invocation_params.dir / d).resolve()


def _labgrid_rig(request, folder):
    """The labgrid target's ``RtrigDriver``, its captures going to ``folder``."""
    from ...errors import RtrigError
    target = request.getfixturevalue("target")
    problem = None
    try:
        from . import labgrid_driver  # noqa: F401
        drv = target.get_driver("RtrigDriver")
    except RtrigError as e:
        problem = _message(e)
    except Exception as e:          # labgrid's own errors: no driver, place busy …
        problem = f"labgrid target '{target.name}' gives no rig: {type(e).__name__}: {e}"
    if problem:
        _no_rig(problem)
    drv.captures = folder
    return drv


@pytest.fixture(scope="session")
def rtrig_session(request, tmp_path_factory):
    """The session's rig: a :class:`~rtrig.host.api.RigAPI` (or labgrid's
    ``RtrigDriver``, which offers the same calls). Opened on first use, closed at the
    end of the test session. A rig that cannot be had is an error of the tests that
    need it, not a failure."""
    from ...errors import RtrigError
    from ...units import parse_frequency
    cfg = request.config
    folder = _captures_dir(cfg, tmp_path_factory)
    if lg_env(cfg):
        yield _labgrid_rig(request, folder)
        return
    port, sim = cfg.getoption("rtrig_port"), cfg.getoption("rtrig_sim")
    if not port and not sim:
        _no_rig("no rig given: use --rtrig-port PORT, --rtrig-sim, or labgrid's --lg-env")
    if port and sim:
        _no_rig("give either --rtrig-port or --rtrig-sim, not both")
    from ..api import open_api
    try:
        baud = int(parse_frequency(cfg.getoption("rtrig_baud")))
    except ValueError as e:
        baud, problem = None, f"--rtrig-baud: {e}"
    if baud is None:
        _no_rig(problem)
    with contextlib.ExitStack() as stack:
        problem = None
        try:
            api = stack.enter_context(open_api(
                port, sim, target=cfg.getoption("rtrig_target"),
                firmware=cfg.getoption("rtrig_firmware"), captures=folder, baudrate=baud))
        except RtrigError as e:
            problem = _message(e)
        except OSError as e:
            problem = f"cannot open the rig on {port}: {e}"
        if problem:                 # outside the handler: no chained traceback
            _no_rig(problem)
        yield api
