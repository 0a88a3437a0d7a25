# SPDX-License-Identifier: BSD-2-Clause
"""The SoC twin's RAM: its image (checked to fit), the ``--ram`` file the twin reads
at start, and the rewrite of the twin's Verilog that reads it, so one build runs
every firmware."""

from pathlib import Path

from ...errors import SimulationError, UsageError

__all__ = ["soc_image", "ram_file"]


#: The SoC's RAM in the flattened Verilog (``targets.soc.bus.ram`` of the Rig).
_SOC_RAM = "\\targets.soc.bus.ram "


def _ram_from_plusarg(verilog):
    """``verilog`` with the SoC RAM's initial contents read at start from the file that
    the plusarg ``+rtrig_ram=FILE`` names (``$readmemh``, one 32-bit word per line), in
    place of the contents it was built with: the harness passes it from ``--ram``."""
    lines = verilog.split("\n")
    decl = [i for i, line in enumerate(lines)
            if line.strip().startswith("reg [31:0] " + _SOC_RAM) and line.endswith(";")]
    if len(decl) != 1:
        raise SimulationError(f"the SoC RAM ({_SOC_RAM.strip()}) is declared {len(decl)} "
                              "times in the twin's Verilog, not once")
    i = decl[0] + 1
    if lines[i].strip() == "initial begin":       # the built-in contents: dropped
        end = lines.index("  end", i)
        del lines[i:end + 1]
    lines[i:i] = [
        "  initial begin : rtrig_ram_image",
        "    reg [8*4096-1:0] rtrig_ram_path;",
        '    if ($value$plusargs("rtrig_ram=%s", rtrig_ram_path))',
        f"      $readmemh(rtrig_ram_path, {_SOC_RAM});",
        "  end",
    ]
    return "\n".join(lines)


def ram_file(image, directory):
    """Write ``image`` (raw bytes, checked by :func:`rtrig.gateware.soc.load_image`) as
    the SoC twin's ``--ram`` file in ``directory``: every RAM word, one per line in hex,
    zero after the image as on a board. Returns its path."""
    from ...gateware.soc import RAM_BYTES, load_image
    words = load_image(image)
    words += [0] * (RAM_BYTES // 4 - len(words))
    path = Path(directory) / "ram.hex"
    path.write_text("".join(f"{w:08x}\n" for w in words))
    return path


def soc_image(firmware=None):
    """The SoC twin's RAM image: ``firmware`` (a raw ``.bin`` path; default
    :func:`rtrig.firmware.default_firmware`), checked to fit. A usage error if not."""
    from ...firmware import default_firmware
    from ...gateware.soc import load_image
    image_path = Path(firmware or default_firmware())
    try:
        image = image_path.read_bytes()
        load_image(image)                     # fits the RAM: before anything is built
    except ValueError as e:
        raise UsageError(f"{image_path}: {e}",
                         hint="a raw .bin linked at 0, at most 64 KiB "
                              "(docs/own-firmware.md)") from None
    return image
