"""CPU µs per frame of the built-in switch's data path around the P4
executor, on a programmed fabric.p4 leaf of the virtual-time fabric.

The harness is :func:`emulator.scenario.calibrate.measure_switch_us`'s:
RoCEv2 WRITE frames of ``--frame-bytes`` enter the host port of srv0/gpu0
(``rx_link`` on, as a live host port receives) one at a time, each with
``dp.receive(port, frame, now); dp.run_due(now)``, so every frame takes the
whole path: rx → ARRIVE → ingress → cut-through enqueue → egress → TX_DONE
→ DELIVER → transmit (fidelity accounting, the port's send, counters). One
difference: the egress port (to srv1/gpu0) sends into a :class:`Sink`, not
the sim's link (which keeps every frame in an engine heap that never runs
here: calibrate's figure includes that growth).

Two figures, each the least of ``--repeats`` runs of CPU time
(``time.process_time``: other work on the machine only adds to it):

- ``total_us``: with the real executor (what calibrate measures);
- ``dataplane_us``: the executor replaced by a replay of the results it
  gave for that frame (same ProcessResult objects, no P4 run), so what is
  left is the data path alone, its working set warm in the caches;
- ``executor_us``: ``ingress()`` + ``egress()`` of the same frame alone, in
  a loop; ``around_us`` = ``total_us`` - ``executor_us``, the data path as
  it costs next to the executor (caches shared, the collector's passes
  over the executor's objects).

``--profile N`` prints the N costliest functions (cProfile, cumulative) of
a data-path-only run. No root needed. Run from the repository root::

    .venv/bin/python benchmarks/dataplane_path.py [--frames 5000] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


class Sink:
    """The egress port's back end here: takes every frame and keeps none
    (the sim's link end would keep each one in the engine's heap, which
    never runs here, and the process would grow by every frame sent)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = 0

    def fileno(self) -> None:
        return None

    def recv(self) -> None:
        return None

    def send(self, frame: bytes) -> bool:
        self.sent += 1
        return True

    def close(self) -> None:
        pass


class ReplayPipeline:
    """Gives back, for every packet, the results ``real`` gave for the first
    one (ingress and egress): the data plane's work without the executor's."""

    def __init__(self, real: Any, port: int, frame: bytes) -> None:
        self.clock_us = getattr(real, "clock_us", None) or real._clock_us
        self.priority_queues = real.priority_queues
        self.program = real.program   # what a Switch logs when it loads one
        self.tables = real.tables
        self._ingress = real.ingress(port, frame, 0, None)
        item = self._ingress.queued[0]
        from emulator.p4.exec.pipeline import QueueInfo
        self._egress = real.egress(item, QueueInfo(0, 0, None))

    def ingress(self, port: int, data: bytes, instance_type: int = 0,
                preserved: dict | None = None) -> Any:
        return self._ingress

    def egress(self, item: Any, queue: Any = None) -> Any:
        return self._egress


def leaf(frame_bytes: int, workdir: Path):  # type: ignore[no-untyped-def]
    """(fabric, data plane, host port, frame) of the calibration fabric."""
    from emulator.sim.engine import Engine
    from emulator.sim.fabric import SimFabric
    from emulator.topology import build_topology, spec_from_dict
    from emulator.traffic.layers.opcodes import RC_RDMA_WRITE_MIDDLE
    from emulator.traffic.roce import RoceFlow

    topo = build_topology(spec_from_dict({
        "name": "calibration", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 1,
        "servers_per_leaf": 2, "spines": 1, "host_link": {"rate": "100Gbps", "delay": "1us"},
        "fabric_link": {"rate": "100Gbps", "delay": "1us"}}, "<calibration>"))
    fabric = SimFabric(topo, Engine(), workdir=workdir)
    fabric.start()
    a, b = topo.gpu("srv0/gpu0"), topo.gpu("srv1/gpu0")
    flow = RoceFlow(a.mac, a.gateway_mac, a.ip, b.ip, 0xC001)
    frame = flow.packet(RC_RDMA_WRITE_MIDDLE, 0x100, 1, b"\x00" * (frame_bytes - 58))
    dp = fabric.switches[a.switch].dataplane
    port = a.switch_port
    dp.set_port_config(port, {"rx_link": True})
    egress = dp.port(b.switch_port)
    egress.backend = Sink(egress.backend.name)
    return fabric, dp, port, frame


def run_frames(dp: Any, port: int, frame: bytes, frames: int, now: float, gap_s: float) -> float:
    receive = dp.receive
    run_due = dp.run_due
    for _ in range(frames):
        now += gap_s
        receive(port, frame, now)
        run_due(now)
    return now


def run_executor(pipe: Any, port: int, frame: bytes, frames: int) -> None:
    from emulator.p4.exec.pipeline import QueueInfo

    ingress = pipe.ingress
    egress = pipe.egress
    for _ in range(frames):
        egress(ingress(port, frame, 0, None).queued[0], QueueInfo(0, 0, None))


def measure_executor(frame_bytes: int, frames: int, repeats: int) -> float:
    """Least CPU µs per frame of the executor alone (ingress + egress)."""
    with tempfile.TemporaryDirectory(prefix="aifabric-dp-") as tmp:
        fabric, dp, port, frame = leaf(frame_bytes, Path(tmp))
        try:
            pipe = dp.pipeline
            run_executor(pipe, port, frame, 300)
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                run_executor(pipe, port, frame, frames)
                best = min(best, time.process_time() - start)
        finally:
            fabric.stop()
    return best / frames * 1e6


def measure(frame_bytes: int, frames: int, repeats: int, replay: bool,
            profile: int = 0) -> float:
    """Least CPU µs per frame over ``repeats`` runs of ``frames`` through
    the data plane."""
    with tempfile.TemporaryDirectory(prefix="aifabric-dp-") as tmp:
        fabric, dp, port, frame = leaf(frame_bytes, Path(tmp))
        try:
            if replay:
                dp.set_pipeline(ReplayPipeline(dp.pipeline, port, frame))
            gap_s = (frame_bytes + 24) * 8 / 100e9 * 1.5  # each frame leaves before the next
            now = run_frames(dp, port, frame, 300, 1.0, gap_s)  # warm up
            if profile:
                prof = cProfile.Profile()
                prof.enable()
                run_frames(dp, port, frame, frames, now, gap_s)
                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(profile)
                return 0.0
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                now = run_frames(dp, port, frame, frames, now, gap_s)
                best = min(best, time.process_time() - start)
            sent = sum(p.backend.sent for p in dp.ports.values() if isinstance(p.backend, Sink))
            assert sent >= frames * repeats, "frames did not leave the switch"
        finally:
            fabric.stop()
    return best / frames * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frame-bytes", type=int, action="append",
                        help="frame size (repeatable; default 1024)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile a data-path-only run, print the N costliest functions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for size in args.frame_bytes or [1024]:
        if args.profile:
            measure(size, args.frames, 1, True, args.profile)
            continue
        dataplane_us = measure(size, args.frames, args.repeats, True)
        total_us = measure(size, args.frames, args.repeats, False)
        executor_us = measure_executor(size, args.frames, args.repeats)
        results.append({"frame_bytes": size, "dataplane_us": round(dataplane_us, 2),
                        "total_us": round(total_us, 2), "executor_us": round(executor_us, 2),
                        "around_us": round(total_us - executor_us, 2),
                        "clock": "cpu (process_time, least of repeats)",
                        "load_average": round(os.getloadavg()[0], 2)})
    if args.profile:
        return 0
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0]))
    else:
        for result in results:
            for key, value in result.items():
                print(f"{key:>14}: {value}")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
