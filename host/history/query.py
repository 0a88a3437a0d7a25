# SPDX-License-Identifier: BSD-2-Clause
"""What ``rtrig history show`` prints: runs filtered by set-up and labels, one
figure over them, run by run or in groups of a label (``--by kernel``).

Groups follow the order of their first run, so a label that changes from version to
version reads as the versions came."""

from ...errors import UsageError
from ...units import format_hz
from .store import SETUP_FIELDS

__all__ = ["parse_pairs", "check_keys", "group_of", "groups", "show_rows", "format_rows",
           "format_value"]


def parse_pairs(items, option):
    """``{key: value}`` of ``KEY=VALUE`` strings, or :class:`UsageError`. A key
    given twice is refused: a run holds one value per label (the labels table's key
    is the run and the label's key), and two ``--where`` of one key match nothing."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE",
                             hint=f"e.g. {option} kernel=6.12.117-rt")
        if key.strip() in out:
            raise UsageError(f"{option} {item!r}: {key.strip()} is given twice (first "
                             f"{key.strip()}={out[key.strip()]})",
                             hint=f"a run has one value of each label: give {option} "
                                  f"{key.strip()}=… once")
        if option == "--label" and key.strip() in SETUP_FIELDS:
            raise UsageError(f"--label {item!r}: {key.strip()} is a set-up field the run "
                             "records itself", hint="name the label otherwise, e.g. "
                             f"--label rig_{key.strip()}={value.strip()}")
        out[key.strip()] = value.strip()
    return out


def check_keys(history, where=None, by=None):
    """:class:`UsageError` naming a ``--where`` or ``--by`` key that is neither a
    set-up field nor a label of any run, with the keys there are."""
    asked = [("--where", k, f"{k}={v}") for k, v in (where or {}).items()]
    asked += [("--by", by, by)] if by is not None else []
    unknown = [a for a in asked if a[1] not in SETUP_FIELDS]
    if not unknown:
        return
    labels = history.label_keys()
    for opt, key, shown in unknown:
        if key not in labels:
            raise UsageError(f"{opt} {shown}: no run has a label or set-up field {key!r}",
                             hint=f"set-up fields: {', '.join(SETUP_FIELDS)}; labels: "
                                  + (", ".join(labels) if labels else "none recorded"))


def group_of(run, by):
    """The value of label or set-up field ``by`` of ``run`` (``—`` when it has none)."""
    if by in SETUP_FIELDS:
        return str(run[by])
    return run["labels"].get(by, "—")


def groups(runs, by):
    """``[(group value, [runs])]`` in the order of each group's first run; runs
    that share a value but are separated by another group form separate groups (a
    version that comes back is a new step)."""
    out = []
    for run in runs:
        g = group_of(run, by)
        if out and out[-1][0] == g:
            out[-1][1].append(run)
        else:
            out.append((g, [run]))
    return out


def format_value(value, unit):
    if value is None:
        return "—"
    if unit == "ns":
        return f"{value / 1000:.3f} µs"
    if unit == "Hz":
        return format_hz(value)
    if unit == "count":
        return str(int(value))
    return f"{value:.3g}"


def _bounds(lo, hi, unit):
    if lo is None and hi is None:
        return ""
    return f"[{format_value(lo, unit) if lo is not None else '…'}, " \
           f"{format_value(hi, unit) if hi is not None else '…'}]"


def show_rows(history, figure=None, by=None, where=None):
    """The rows ``history show`` prints, as JSON-able dicts."""
    check_keys(history, where, by)
    runs = history.runs(where)
    if figure is None:
        return [{"id": r["id"], "recorded_at": r["recorded_at"], "kind": r["kind"],
                 "board": r["board"], "target": r["target"], "labels": r["labels"],
                 "source": r["source"]} for r in runs]
    values = history.figures(figure, runs)
    if not values and runs:
        known = history.figure_names()
        raise UsageError(f"no run holds figure {figure!r}",
                         hint="figures recorded: " + ", ".join(known[:12])
                         + (" …" if len(known) > 12 else ""))
    runs = [r for r in runs if r["id"] in values]
    if by is None:
        return [{"id": r["id"], "recorded_at": r["recorded_at"], "labels": r["labels"],
                 "figure": figure, "value": values[r["id"]][0], "lo": values[r["id"]][1],
                 "hi": values[r["id"]][2], "unit": values[r["id"]][3]} for r in runs]
    rows = []
    for g, members in groups(runs, by):
        vals = [values[r["id"]] for r in members]
        present = [v[0] for v in vals if v[0] is not None]
        last = vals[-1]
        rows.append({by: g, "runs": len(members), "figure": figure, "last": last[0],
                     "lo": last[1], "hi": last[2], "unit": last[3],
                     "min": min(present) if present else None,
                     "max": max(present) if present else None})
    return rows


def format_rows(rows, figure=None, by=None):
    """Text lines of :func:`show_rows`'s rows."""
    if not rows:
        return ["no run in the history matches"]
    if figure is None:
        table = [["run", "recorded (UTC)", "kind", "board", "target", "labels"]]
        table += [[str(r["id"]), r["recorded_at"][:19], r["kind"], r["board"], r["target"],
                   " ".join(f"{k}={v}" for k, v in sorted(r["labels"].items()))] for r in rows]
    elif by is None:
        table = [["run", "recorded (UTC)", figure, "bounds", "labels"]]
        table += [[str(r["id"]), r["recorded_at"][:19], format_value(r["value"], r["unit"]),
                   _bounds(r["lo"], r["hi"], r["unit"]),
                   " ".join(f"{k}={v}" for k, v in sorted(r["labels"].items()))] for r in rows]
    else:
        table = [[by, "runs", f"{figure} (last)", "bounds", "lowest", "highest"]]
        table += [[r[by], str(r["runs"]), format_value(r["last"], r["unit"]),
                   _bounds(r["lo"], r["hi"], r["unit"]), format_value(r["min"], r["unit"]),
                   format_value(r["max"], r["unit"])] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
