# SPDX-License-Identifier: BSD-2-Clause
"""How often a damaged rig → host packet passes the host's checks (``make bench``).

A stream of packets as the rig sends them (LATENCY records mostly, some READ_DATA and
EVENT packets, random contents, running sequence numbers) is SLIP-framed with its
CRC-16, every bit of the byte stream is flipped with probability ``BER``, and the
result goes through the host's decoder (:class:`rtrig.framing.SlipDecoder`) and the
link's type and length check (``RigLink._dispatch``: a packet of a stream or response
type with that type's payload length). A packet that passes and is not one that was
sent is an **escape**: a wrong record the host would take as real. Prints a Markdown
table; ``--write`` replaces the "## Packet check" section of docs/performance.md.
"""

import argparse
import sys
import time

import numpy as np
from perfdoc import write_section

BERS = [2e-2, 1e-2, 1e-3]


def _stream(n, rng):
    from rtrig.framing import frame
    from rtrig.protocol import PAYLOAD_LEN, PacketType
    kinds = [PacketType.LATENCY] * 8 + [PacketType.READ_DATA, PacketType.EVENT]
    sent, spans, out, pos = set(), [], bytearray(), 0
    for i in range(n):
        t = kinds[int(rng.integers(len(kinds)))]
        payload = rng.bytes(PAYLOAD_LEN[t])
        f = frame(t, i & 0xFF, payload)
        sent.add((int(t), i & 0xFF, payload))
        out += f
        spans.append((pos, pos + len(f)))
        pos += len(f)
    return bytes(out), sent, np.array(spans)


def run(n, ber, seed=1):
    from rtrig.framing import SlipDecoder
    from rtrig.protocol import PAYLOAD_LEN, PacketType
    rng = np.random.default_rng(seed)
    data, sent, spans = _stream(n, rng)
    bits = len(data) * 8
    flips = np.unique(rng.integers(0, bits, rng.binomial(bits, ber)))
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    np.bitwise_xor.at(buf, flips // 8, (1 << (flips % 8)).astype(np.uint8))
    hit = np.zeros(len(spans), bool)
    hit[np.searchsorted(spans[:, 1], flips // 8, side="right")] = True
    dec = SlipDecoder()
    accepted = escapes = 0
    rx = {int(t) for t in (PacketType.LATENCY, PacketType.EVENT, PacketType.TRUTH,
                           PacketType.READ_DATA, PacketType.WRITE_ACK)}
    raw = buf.tobytes()
    for i in range(0, len(raw), 1 << 16):
        for ptype, seq, payload in dec.feed(raw[i:i + (1 << 16)]):
            if ptype in rx and len(payload) == PAYLOAD_LEN[ptype]:
                accepted += 1
                if (ptype, seq, bytes(payload)) not in sent:
                    escapes += 1
    return {"ber": ber, "packets": n, "damaged": int(hit.sum()), "accepted": accepted,
            "escapes": escapes}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    rows, total_damaged, total_escapes = [], 0, 0
    t0 = time.monotonic()
    for ber in BERS:
        r = run(a.packets, ber)
        rows.append(r)
        total_damaged += r["damaged"]
        total_escapes += r["escapes"]
        print(r, file=sys.stderr)
    cmd = f"python benchmarks/bench_link_check.py --packets {a.packets}"
    lines = ["## Packet check", "",
             f"`{cmd}` ({time.monotonic() - t0:.0f} s): rig → host packets (80 % LATENCY, "
             "10 % READ_DATA, 10 % EVENT, random contents) with every bit of the line "
             "flipped with probability BER, through the host's SLIP decoder, CRC-16 and "
             "type/length check. An escape is a packet accepted that was never sent.", "",
             "| BER | packets | damaged | accepted | escapes | escapes per damaged packet |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['ber']:g} | {r['packets']} | {r['damaged']} | {r['accepted']} | "
                     f"{r['escapes']} | {r['escapes'] / max(r['damaged'], 1):.2g} |")
    rate = total_escapes / max(total_damaged, 1)
    lines += ["", f"Over all rows: {total_escapes} escapes in {total_damaged} damaged "
              f"packets, {rate:.2g} per damaged packet (CRC-16 alone would let about "
              f"2^-16 = 1.5e-05 of badly damaged packets through)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.write:
        write_section(text)


if __name__ == "__main__":
    main()
