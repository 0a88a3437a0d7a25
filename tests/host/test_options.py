# SPDX-License-Identifier: BSD-2-Clause
"""One definition per measurement option (rtrig.host.procedures.options): the CLI's
capture, sweep and suite, RigAPI's capture and sweep, the pytest plugin's fixture and
options, and the functions that build the settings all take exactly the table's
options, and the CLI and RigAPI build the same settings from the same values."""

import contextlib
import dataclasses
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import rtrig.host.procedures.measure as measure_mod
import rtrig.host.procedures.sweep as sweep_mod
from rtrig.errors import UsageError
from rtrig.host.api import RigAPI
from rtrig.host.cli.capture import capture as capture_cmd
from rtrig.host.cli.options import RigOptions
from rtrig.host.cli.suite import suite as suite_cmd
from rtrig.host.cli.sweep import sweep as sweep_cmd
from rtrig.host.integrations import pytest_plugin
from rtrig.host.procedures.options import (
    OPTIONS,
    capture_settings,
    options,
    sweep_settings,
)
from rtrig.host.procedures.settings import CaptureSettings
from rtrig.host.rig.rig import TARGETS

COMMANDS = {"capture": capture_cmd, "sweep": sweep_cmd, "suite": suite_cmd}
#: CLI parameters that are not measurement settings (the module docstring says why).
CLI_FRONT_DOOR = {"sim_here", "port_here", "accept_here", "output", "as_json", "quiet", "firmware",
                  "console", "help", "history_db", "labels", "twins", "replay"}
#: RigAPI parameters that are not measurement settings.
API_FRONT_DOOR = {"capture": {"self", "path", "progress"}, "sweep": {"self", "path", "log"}}
#: The plugin's options that pick the rig or say where results go.
PLUGIN_FRONT_DOOR = {"port", "sim", "firmware", "baud", "captures", "results", "history",
                     "label"}
#: Capture options that go to measure(), not into CaptureSettings.
RUN_ONLY = {"mode", "bin_shift"}


def _params(f, drop=()):
    return {n for n, p in inspect.signature(f).parameters.items()
            if n not in drop and p.kind is not p.VAR_KEYWORD}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_cli_has_the_tables_options(command):
    params = {p.name: p for p in COMMANDS[command].params}
    table = options(command)
    assert params.keys() - CLI_FRONT_DOOR == table.keys()
    for name, o in table.items():
        p = params[name]
        assert (p.opts + p.secondary_opts)[0] == o.flags.split("/")[0]
        assert (p.default, p.help, p.required) == (o.default, o.help, o.required)


def test_each_option_is_once_per_command_and_the_targets_are_the_rigs():
    for command in COMMANDS:
        names = [o.name for o in OPTIONS if command in o.commands]
        assert len(names) == len(set(names)), command
    assert options("capture")["target"].choices == tuple(TARGETS)
    assert {c for c in ("capture", "sweep", "suite")
            for o in OPTIONS if c in o.commands} == set(COMMANDS)


def test_the_settings_builders_take_the_tables_options():
    # what consumes the values: the builders, measure() and the suite command
    # (and tick_hz, the rig's, which the model's durations are made whole ticks of)
    assert _params(capture_settings, {"tick_hz", "step"}) | RUN_ONLY == options("capture").keys()
    assert RUN_ONLY <= _params(measure_mod.measure)
    assert _params(sweep_settings, {"tick_hz", "step"}) == options("sweep").keys()
    assert _params(suite_cmd.callback, {"obj"}) - CLI_FRONT_DOOR == options("suite").keys()
    # and every setting is an option, but the few that are not
    fields = {f.name for f in dataclasses.fields(CaptureSettings) if f.init}
    assert fields - {"description", "extra", "raw_events"} | {"raw"} | RUN_ONLY == \
        options("capture").keys()
    fields = {f.name for f in dataclasses.fields(sweep_mod.SweepSettings) if f.init}
    assert fields - {"min_heartbeats"} == options("sweep").keys()


@pytest.mark.parametrize("command", ["capture", "sweep"])
def test_rigapi_and_the_fixture_take_the_tables_options(command):
    method = getattr(RigAPI, command)
    sig = inspect.signature(method)
    assert sig.parameters.keys() - API_FRONT_DOOR[command] == \
        options(command, api=True).keys()
    for name, o in options(command, api=True).items():
        want = None if name == "target" else o.default
        assert sig.parameters[name].default in (want, inspect.Parameter.empty), name
    assert inspect.signature(getattr(pytest_plugin.RtrigTest, command)) == sig
    with pytest.raises(TypeError, match="nosuch"):
        method(RigAPI(SimpleNamespace()), "1k", "2k", nosuch=1)


def test_the_plugins_options_are_in_the_table():
    seen = {}

    class Group:
        def addoption(self, name, **kw):
            seen[name.removeprefix("--rtrig-")] = kw

    pytest_plugin.pytest_addoption(SimpleNamespace(getgroup=lambda *a: Group()))
    measurement = seen.keys() - PLUGIN_FRONT_DOOR
    assert measurement == {"target"}
    assert measurement <= options("capture", api=True).keys() & options("sweep", api=True).keys()
    assert tuple(seen["target"]["choices"]) == options("capture")["target"].choices


class _Stop(Exception):
    pass


@pytest.fixture
def no_rig(monkeypatch):
    """The CLI and RigAPI on a rig that is not there: the settings they hand to the
    procedure are kept, and the procedure does not run."""
    seen = []

    def keep(rig, settings, path, **kw):
        seen.append((settings, {k: v for k, v in kw.items() if k in RUN_ONLY}))
        raise _Stop

    # the default twin's ticks, which the CLI's --sim takes the model's times in
    from rtrig.host.sim import sim_board
    board = sim_board()
    rig = SimpleNamespace(tick_hz=board.clk_freq * board.tick_step, stim_step=board.tick_step)
    monkeypatch.setattr(measure_mod, "measure", keep)
    monkeypatch.setattr(sweep_mod, "run_sweep", keep)
    monkeypatch.setattr(RigOptions, "rig", lambda self: contextlib.nullcontext(rig))
    return seen, RigAPI(rig, captures="unused")


def _cli(command, args):
    res = CliRunner().invoke(command, args, obj=RigOptions(None, True, False))
    assert isinstance(res.exception, _Stop), res.output


@pytest.mark.parametrize("cli,api", [
    ([], {}),
    (["--freq", "8k", "--count", "500", "--burst", "4", "--gap", "1ms", "--jitter", "2us",
      "--stim1-offset", "20us", "--raw", "--mode", "statistics", "--bin-shift", "3"],
     dict(freq="8k", count=500, burst=4, gap="1ms", jitter=2e-6, stim1_offset="20us",
          raw=True, mode="statistics", bin_shift=3)),
    (["--target", "model", "--preset", "fast", "--model", "app=0", "--duration", "50ms",
      "--truth", "--channels", "isr,app", "--load"],
     dict(target="model", preset="fast", model={"app": 0}, duration="50ms", truth=True,
          channels=("isr", "app"), load=True)),
])
def test_cli_and_rigapi_build_the_same_capture(no_rig, cli, api):
    seen, rigapi = no_rig
    _cli(capture_cmd, cli)
    with pytest.raises(_Stop):
        rigapi.capture(**api)
    (a, run_a), (b, run_b) = seen
    assert a == b and run_a == run_b


def test_cli_and_rigapi_build_the_same_sweep(no_rig):
    seen, rigapi = no_rig
    _cli(sweep_cmd, ["--from", "10k", "--to", "100k", "--target", "model", "--preset", "fast",
                     "--channels", "isr", "--resolution", "1%", "--sf-threshold", "5%",
                     "--no-confirm", "--full-steps", "--tick", "2ms", "--phase-gap", "0.05",
                     "--max-pulses", "30000", "--factor", "3", "--stim-jitter", "1us"])
    with pytest.raises(_Stop):
        rigapi.sweep("10k", 100e3, target="model", preset="fast", channels="isr",
                     resolution=0.01, sf_threshold="5%", confirm=False, early_end=False,
                     tick="2ms", phase_gap=0.05, max_pulses=30000, factor=3,
                     stim_jitter="1us")
    (a, _), (b, _) = seen
    assert a == b and not a.confirm and not a.early_end


def test_a_bad_value_from_a_script_names_the_option(no_rig):
    _, rigapi = no_rig
    for kwargs, needle in ((dict(freq="banana"), "freq: 'banana' is not a frequency"),
                           (dict(bin_shift=21), "bin_shift: 21 is not in the range"),
                           (dict(mode="fast"), "mode: 'fast' is not one of"),
                           (dict(count=5, duration=1), "--count or --duration")):
        with pytest.raises(UsageError, match=needle):
            rigapi.capture(**kwargs)


def test_docs_ci_lists_the_fixtures_options():
    text = (Path(__file__).resolve().parents[2] / "docs" / "ci.md").read_text()
    capture = text[text.index("- `rtrig.capture("):text.index("- `rtrig.sweep(")]
    sweep = text[text.index("- `rtrig.sweep("):text.index("- `rtrig.info`")]
    for command, part in (("capture", capture), ("sweep", sweep)):
        missing = [n for n in options(command, api=True) if f"`{n}`" not in part]
        assert not missing, f"docs/ci.md's rtrig.{command} lacks {missing}"


def test_a_rate_over_a_quarter_of_the_clock_is_refused_naming_the_clock():
    from rtrig.host.procedures.settings import CaptureSettings
    CaptureSettings(freq=7.5e6, count=10).ticks(120_000_000, 4)      # four cycles: taken
    with pytest.raises(UsageError, match=r"too fast for a rig of 30 MHz .*at least 16"):
        CaptureSettings(freq=8e6, count=10).ticks(120_000_000, 4)
