"""What a run hands the view's feed each sample, by clock: the few reads a
runner would otherwise have to write itself, kept here so that the hooks in
the runners stay one call each.

- :func:`sim_sampler`: an engine callback (``engine.every``) that reads every
  switch's port statistics and every agent's status at a point of simulated
  time, in the engine's thread (nothing else may touch the fabric), and
  hands them to the feed, keeping the view to about :data:`VIEW_CPU_SHARE`
  of the run's CPU time; with a playing speed set it holds the run to it
  at every sample period.
- :func:`live_poller`: what the feed's own worker thread calls on a live
  run: every switch's port statistics over its QueueControl channel, now and
  then the switches' lateness histograms (their p99), and the machine's CPU
  use from the runner's sampler. The runner's loop only hands over the
  agents' status it polls anyway.

ECN marks per switch queue are a P4 counter of the switch's program; read
over P4Runtime they would be too dear every sample (measured on the sim:
14 ms for quickstart's three switches, 365 ms for rail-8x8's 24), so the
built-in switch reads the counter in its own process and adds it to each
queue of its port statistics
(:func:`emulator.targets.builtin.marks.port_stats_with_marks`, what
``GetPortStats`` answers on a live run).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

FIDELITY_EVERY_S = 2.0
VIEW_CPU_SHARE = 0.05  # a sim run's CPU time the view may take, at most (about)


def sim_sampler(fabric: Any, nodes: Mapping[str, Any], observer: Any
                ) -> Callable[[float], None]:
    """``fn(now)`` for ``engine.every``: one sample of ``fabric`` and the agents' ``nodes``."""
    from emulator.targets.builtin.marks import port_stats_with_marks

    switches = fabric.switches
    pace = getattr(observer, "pace", None)
    # A sample costs the run's process ~0.3 ms (quickstart) to ~7 ms (rail-8x8's
    # 24 switches: reading them here, turning them into a frame in the feed's
    # thread). At most one per min_wall_s of wall time and one per
    # 1 / VIEW_CPU_SHARE times its cost of the process's CPU time (so a big
    # fabric on a busy machine is sampled less often, not run slower), and
    # always the last one. Frames hold counter differences, so a skipped bin
    # widens the next, loses nothing.
    min_wall_s = float(getattr(observer, "min_wall_s", 0.0) or 0.0)
    last_s = float(getattr(observer, "duration_s", 0.0) or 0.0)
    budget = min_wall_s > 0  # min_wall_s 0: every bin (the tests' exact frames)
    published = [-math.inf, -math.inf, 0.0]  # wall, process CPU, the last sample's cost

    def sample(now: float) -> None:
        # With a playing speed, every bin is held to it (not only the published
        # ones: a skipped bin would let the run race ahead), and a run held
        # back by its speed has idle CPU to spare, so the CPU budget is for
        # runs that are not ahead of their speed.
        held = bool(pace(now)) if pace is not None else False
        wall, cpu = time.perf_counter(), time.process_time()
        if now < last_s - 1e-12 and now > 0 and (
                wall - published[0] < min_wall_s
                or budget and not held
                and cpu - published[1] < published[2] / VIEW_CPU_SHARE):
            return
        published[0], published[1] = wall, cpu
        read = time.thread_time()
        observer.on_sample(now, {
            "switches": {name: port_stats_with_marks(switch)
                         for name, switch in switches.items()},
            "agents": {server: node.agent.status(now) for server, node in nodes.items()}})
        published[2] = time.thread_time() - read + getattr(observer, "frame_cost_s", 0.0)
    return sample


def live_poller(qclients: Mapping[str, Any], cpu: Any = None,
                fidelity_every_s: float = FIDELITY_EVERY_S) -> Callable[[], dict[str, Any]]:
    """``poll()`` for the feed's worker: the switches of a live run (built-in target)."""
    from emulator.fidelity.lateness import merge_histograms

    last = [0.0]

    def poll() -> dict[str, Any]:
        out: dict[str, Any] = {"switches": {n: c.get_port_stats() for n, c in qclients.items()}}
        fidelity: dict[str, Any] = {}
        now = time.monotonic()
        if qclients and now - last[0] >= fidelity_every_s:
            last[0] = now
            answers = [c.get_fidelity() for c in qclients.values()]
            merged = merge_histograms(p["late"] for a in answers for p in a.get("ports", []))
            fidelity["late_p99_us"] = merged.percentile_us(0.99)
        samples = getattr(cpu, "samples", None)
        if samples:
            fidelity["cpu_busy"] = round(samples[-1][1], 3)
        if fidelity:
            out["fidelity"] = fidelity
        return out
    return poll
