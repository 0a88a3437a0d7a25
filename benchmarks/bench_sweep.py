"""Sweep cost: the bracket/bisect/confirm search against a linear sweep in 1 % steps.

Run: ``.venv/bin/python benchmarks/bench_sweep.py [--preset fast] [--from 30k]
[--to 250k] [--pulses 200]``.

* The search is run for real on the simulation twin (wall time, steps, pulses).
* The linear sweep is costed two ways: its steps and pulses follow from the range
  (one step every 1 % from --from up to the highest figure, per figure searched);
  its wall time is measured on a short stretch (``--linear-steps`` steps around
  MF-APP) and scaled by the step count. The reference model (``model_ref``) gives
  where the linear sweep would stop, so no full linear run is needed.
"""

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from rtrig.host.measure import open_rig
from rtrig.host.model_ref import ModelParams, mf_app, mf_isr
from rtrig.host.presets import PRESETS
from rtrig.host.sweep import SweepSettings, _Sweeper, run_sweep
from rtrig.host.units import parse_frequency


def linear_steps(f_from, f_stop, step=0.01):
    """Steps of a linear sweep in relative ``step`` increments from f_from to f_stop."""
    return int(math.ceil(math.log(f_stop / f_from) / math.log(1 + step))) + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="fast")
    ap.add_argument("--from", dest="f_from", default="30k")
    ap.add_argument("--to", dest="f_to", default="250k")
    ap.add_argument("--pulses", type=int, default=200)
    ap.add_argument("--linear-steps", type=int, default=5)
    args = ap.parse_args()
    f1, f2 = parse_frequency(args.f_from), parse_frequency(args.f_to)
    p: ModelParams = PRESETS[args.preset]
    model = asdict(p)
    ref_isr = mf_isr(p, pulses=args.pulses)
    ref_app = mf_app(p, pulses=args.pulses)
    out = {"preset": args.preset, "from_hz": f1, "to_hz": f2, "pulses": args.pulses,
           "reference": {"mf_isr_hz": ref_isr, "mf_app_hz": ref_app}}
    with open_rig(sim=True) as rig, tempfile.TemporaryDirectory() as tmp:
        st = SweepSettings(f1, f2, target="model", model=model, pulses=args.pulses)
        t0 = time.monotonic()
        res = run_sweep(rig, st, Path(tmp) / "sweep.rtrig", log=lambda m: None)
        wall = time.monotonic() - t0
        out["search"] = {"wall_s": round(wall, 1), "steps": len(res.steps),
                         "pulses": sum(s["pulses"] for s in res.steps),
                         "mf_isr_hz": res.value("mf_isr_hz"),
                         "mf_app_hz": res.value("mf_app_hz")}
        # A short linear stretch for the wall time per step.
        from rtrig.capture import CaptureWriter
        w = CaptureWriter(Path(tmp) / "linear.rtrig", {"kind": "sweep"})
        sw = _Sweeper(rig, st.validate(), w, log=lambda m: None)
        t0 = time.monotonic()
        for k in range(args.linear_steps):
            f = ref_app * 0.97 * 1.01 ** k
            sw.measure_missed(f, "app", "linear", "mf_app")
        per_step = (time.monotonic() - t0) / args.linear_steps
        w.close()
        sw.tmp.cleanup()
    # Linear: ISR and APP captured together in each step from f1 until both have
    # missed (i.e. up to MF-ISR), one capture per channel as the search does.
    n_lin = linear_steps(f1, min(ref_isr, f2))
    out["linear_1pct"] = {"steps": n_lin, "captures": 2 * n_lin,
                          "pulses": 2 * n_lin * args.pulses,
                          "wall_s_per_capture": round(per_step, 2),
                          "wall_s_estimated": round(2 * n_lin * per_step, 1)}
    out["speedup_wall"] = round(out["linear_1pct"]["wall_s_estimated"] / wall, 1)
    out["speedup_pulses"] = round(out["linear_1pct"]["pulses"] / out["search"]["pulses"], 1)
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
