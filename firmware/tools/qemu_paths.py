# SPDX-License-Identifier: BSD-2-Clause
"""Instruction counts of the Cortex-M interrupt path under QEMU (no rig reaches it).

Runs ``build/qemu-mps2-an385/qemu_paths.elf`` (apps/qemu_paths) in QEMU with one
instruction per translation block and every executed block logged, then counts,
for each of its pulses, the instructions from the first one of the stimulus vector
(``irq0_handler``) to the one that raises ISR_OUT (``qp_isr_out``) and to the one
that raises APP_OUT (``qp_app_out``), and how many of those ran in PendSV:

    python firmware/tools/qemu_paths.py [ELF]

The hardware's own exception entry (stacking 8 words) and the cycles per
instruction are not in the figures: QEMU counts instructions, not cycles.
"""

import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QEMU = ["qemu-system-arm", "-M", "mps2-an385", "-nographic", "-monitor", "none",
        "-serial", "none", "-semihosting-config", "enable=on,target=native",
        "-singlestep", "-d", "exec,nochain"]
TRACE = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")


def symbols(elf):
    out = subprocess.run(["arm-none-eabi-nm", elf], check=True, capture_output=True,
                         text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16) & ~1
    return syms


def pcs(elf):
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "exec.log"
        r = subprocess.run(QEMU + ["-D", str(log), "-kernel", elf], timeout=120,
                           capture_output=True)
        if r.returncode != 0:
            sys.exit(f"error: {elf} exited with code {r.returncode} under QEMU")
        return [int(m.group(1), 16) for m in map(TRACE.match, log.read_text().splitlines())
                if m]


def main():
    default = Path(__file__).resolve().parent.parent / "build/qemu-mps2-an385/qemu_paths.elf"
    elf = sys.argv[1] if len(sys.argv) > 1 else str(default)
    if not Path(elf).is_file():
        sys.exit(f"error: {elf} not found (make -C firmware all)")
    s = symbols(elf)
    vec, isr_out, app_out = s["irq0_handler"], s["qp_isr_out"], s["qp_app_out"]
    pend_lo, pend_hi = s["PendSV_Handler"], s["SysTick_Handler"]
    trace = pcs(elf)
    isr, app, pendsv = [], [], []
    for i, pc in enumerate(trace):
        if pc != vec:
            continue
        try:
            j = trace.index(isr_out, i)
            k = trace.index(app_out, i)
        except ValueError:
            continue                      # the log ends inside this pulse
        isr.append(j - i)
        app.append(k - i)
        pendsv.append(sum(pend_lo <= p < pend_hi for p in trace[i:k]))
    if not isr:
        sys.exit(f"error: no complete pulse in the execution log of {elf}")
    print(f"{len(isr)} pulses; instructions from the vector's first one (median, min, max)")
    for name, v in (("vector → ISR_OUT", isr), ("vector → APP_OUT", app),
                    ("… of which in PendSV", pendsv)):
        print(f"| {name} | {statistics.median(v):.0f} | {min(v)} | {max(v)} |")


if __name__ == "__main__":
    main()
