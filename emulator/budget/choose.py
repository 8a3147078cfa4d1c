"""``time_scale: auto``: the least slowdown at which this machine keeps up
with the load a scenario will offer.

The load is counted from the scenario by
:func:`emulator.scenario.load.offered_load` (peak frames/s at each switch
and NIC agent, as written, a :class:`~.load.Load`); the cost of a frame by
:mod:`.calibrate` (µs of CPU per switch pass and per agent frame, measured
here and cached). A time scale
k divides every frame rate by k; k is the smallest of 1, 2, 5, 10, 20, 50,
... for which all of these hold:

- every switch process and every agent stays under
  :data:`PROCESS_SHARE` of one core (``pps / k × cost``): a process that
  is busy less than that rarely has a frame wait behind another;
- all of them together stay under :data:`MACHINE_SHARE` of the machine's
  cores: the processes share them, and a core that is never idle leaves
  wake-ups waiting for the scheduler. Other work on the machine is not
  counted against the budget: live switches and agents run at a real-time
  priority (:class:`~emulator.fidelity.process.RealtimeGuard`), ahead of
  it; the load average is recorded with the choice all the same;
- one 1,500-byte frame time at the fastest emulated link is at least
  :data:`FRAME_COSTS` times the cost of a switch pass, and at least
  :data:`MIN_FRAME_TIME_US`: a frame that arrives while the switch is busy
  with a few others still leaves within a frame time, and so does one whose
  process the scheduler woke late (a lateness that does not shrink with
  the executor's cost);
- no emulated link is faster than
  :data:`~emulator.scenario.scale.MAX_EMULATED_RATE_BPS`.

:func:`choose` returns k and the budget it came from (what results.json
records as ``time_scale_choice``): the load, the costs, the cores and load
average, which bound decided, and each process's share of a core at k.
"""

from __future__ import annotations

import os
from typing import Any

from emulator.budget.calibrate import Calibration, machine_cores
from emulator.budget.load import Load
from emulator.fidelity import REFERENCE_FRAME_BYTES
from emulator.fidelity.verdict import nice_ceil

PROCESS_SHARE = 0.25
MACHINE_SHARE = 0.5
# Measured here: p99 lateness of a light live process is 200-800 µs whatever
# the rate (scheduling, a peer's pass on the same core), and a live switch
# pass costs about 1.7 times the calibration's (49 µs a frame forwarding
# flat out, against 29 µs in the calibration's warm loop: cold caches,
# socket I/O, the loop and its monitor), and a VM host takes its cores away
# now and then (steal time): 60 calibrated passes (about 2 ms) keep a frame
# time above that lateness. With 20, kv-handoff (k = 2, 1.2 ms) came out not
# faithful in 3 of 7 runs here, with 40 (k = 3) in 1 of 4.
FRAME_COSTS = 60.0
# The scheduling part of that lateness is the same whatever a pass costs:
# when the executor got faster (a pass 18.6 µs in the calibration on
# 2026-12-04, 60 of them 1.1 ms) the frame time would have shrunk into the
# 200-800 µs the scheduler takes. 2 ms is what 60 passes came to when the
# shipped scenarios were last measured faithful here (29-38 µs a pass).
MIN_FRAME_TIME_US = 2000.0
MAX_TIME_SCALE = 10**7


def load_average() -> float:
    """The machine's 1-minute load average (0 when unknown)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def free_cores(cores: int, load1: float) -> float:
    """Cores the emulation may count on: all of them (see the module docstring)."""
    return float(cores)


def required_scale(load: Load, cal: Calibration, fastest_bps: float, cores: int,
                   load1: float, max_rate_bps: float) -> tuple[float, str]:
    """The least (real-valued) slowdown each bound allows, and which bound
    asks for the most."""
    bounds: dict[str, float] = {"nothing": 1.0}
    name, pps = max(load.switch_pps.items(), key=lambda kv: kv[1], default=("", 0.0))
    if pps:
        bounds[f"switch {name} at {PROCESS_SHARE:.0%} of a core"] = \
            pps * cal.switch_us * 1e-6 / PROCESS_SHARE
    name, pps = max(load.agent_pps.items(), key=lambda kv: kv[1], default=("", 0.0))
    if pps:
        bounds[f"agent {name} at {PROCESS_SHARE:.0%} of a core"] = \
            pps * cal.agent_us * 1e-6 / PROCESS_SHARE
    machine = (load.peak_switch_pps * cal.switch_us + load.peak_agent_pps * cal.agent_us) * 1e-6
    if machine:
        bounds[f"the machine at {MACHINE_SHARE:.0%} of {free_cores(cores, load1):.1f} free "
               f"cores"] = machine / (MACHINE_SHARE * free_cores(cores, load1))
    if fastest_bps:
        frame_bits = REFERENCE_FRAME_BYTES * 8
        passes_us = FRAME_COSTS * cal.switch_us
        name = (f"a frame time of at least {FRAME_COSTS:g} switch passes"
                if passes_us >= MIN_FRAME_TIME_US
                else f"a frame time of at least {MIN_FRAME_TIME_US / 1e3:g} ms")
        bounds[name] = fastest_bps * max(passes_us, MIN_FRAME_TIME_US) * 1e-6 / frame_bits
        bounds["the fastest rate this machine emulates"] = fastest_bps / max_rate_bps
    binding = max(bounds, key=lambda b: bounds[b])
    return bounds[binding], binding


def choose(load: Load, fastest_bps: float, cal: Calibration, max_rate_bps: float, *,
           cores: int | None = None, load1: float | None = None) -> tuple[int, dict[str, Any]]:
    """(k, budget) for a scenario that offers ``load`` with its fastest link
    at ``fastest_bps`` (both in its own units, time scale not applied), on a
    machine that emulates links up to ``max_rate_bps``."""
    cores = machine_cores() if cores is None else cores
    load1 = load_average() if load1 is None else load1
    need, binding = required_scale(load, cal, fastest_bps, cores, load1, max_rate_bps)
    k = min(MAX_TIME_SCALE, nice_ceil(need))
    at_k = load.scaled(k)
    shares = {f"switch {n}": round(v * cal.switch_us * 1e-6, 3)
              for n, v in at_k.switch_pps.items()}
    shares.update({f"agent {n}": round(v * cal.agent_us * 1e-6, 3)
                   for n, v in at_k.agent_pps.items()})
    busiest, busiest_pps = load.busiest()
    budget = {
        "busiest": busiest, "busiest_pps": round(busiest_pps, 1),
        "cost_us": round(cal.switch_us if busiest.startswith("switch") else cal.agent_us, 2),
        "needed": round(need, 3), "bound": binding,
        "cores": cores, "load_average": round(load1, 2),
        "calibration": cal.to_dict(),
        "load_written": load.to_dict(),
        "core_share_at_scale": dict(sorted(shares.items())),
        "machine_cores_at_scale": round(
            (at_k.peak_switch_pps * cal.switch_us + at_k.peak_agent_pps * cal.agent_us) * 1e-6,
            3),
        "rules": {"process_share": PROCESS_SHARE, "machine_share": MACHINE_SHARE,
                  "frame_costs": FRAME_COSTS, "min_frame_time_us": MIN_FRAME_TIME_US},
    }
    return k, budget
